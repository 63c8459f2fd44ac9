package cpulist

import (
	"reflect"
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
	for _, bad := range []string{"a", "3-1", "1-", "-1", "1,,2"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q): want an error", bad)
		}
	}
}
