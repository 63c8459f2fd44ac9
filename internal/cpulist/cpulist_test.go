package cpulist

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseFormat(t *testing.T) {
	for _, tc := range []struct {
		in     string
		want   []int
		format string
	}{
		{"0", []int{0}, "0"},
		{"0-3", []int{0, 1, 2, 3}, "0-3"},
		{"0-1,4,6-7\n", []int{0, 1, 4, 6, 7}, "0-1,4,6-7"},
		{"3,1,2", []int{1, 2, 3}, "1-3"},
		{"0-1,1-2", []int{0, 1, 2}, "0-2"},
		{"", nil, ""},
	} {
		got, err := Parse(tc.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Parse(%q) = %v, want %v", tc.in, got, tc.want)
		}
		if f := Format(got); f != tc.format {
			t.Errorf("Format(%v) = %q, want %q", got, f, tc.format)
		}
	}
	for _, bad := range []string{"a", "3-1", "1-", "-1", "1,,2", "8192", "0-99999999", "0-9223372036854775807"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q): want an error", bad)
		}
	}
}

// A range past the last CPU is rejected before it is expanded: "0-99999999"
// once took minutes and gigabytes.
func TestParseMax(t *testing.T) {
	for _, tc := range []struct {
		in   string
		last int
		want string // error substring, "" for none
	}{
		{"0-3", 3, ""},
		{"0-4", 3, `CPU 4 is past the last CPU, 3: write CPUs within 0-3`},
		{"0-99999999", 1, `CPU 99999999 is past the last CPU, 1`},
		{"0-99999999", 1 << 40, `past the last CPU, 8191`},
		{"x", 3, `bad CPU "x"`},
		// Too many digits for an int is too large, not "bad".
		{"0-99999999999999999999", 1, `CPU 99999999999999999999 is too large`},
		{"99999999999999999999", 1, `CPU 99999999999999999999 is too large`},
	} {
		_, err := ParseMax(tc.in, tc.last)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("ParseMax(%q, %d): %v", tc.in, tc.last, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("ParseMax(%q, %d) = %v, want %q", tc.in, tc.last, err, tc.want)
		}
	}
}
