package variant

import (
	"encoding/json"
	"testing"
)

func TestPair(t *testing.T) {
	var p Pair[int]
	p.Set(Patched, 2)
	*p.Ptr(Baseline) += 1
	if p.Get(Baseline) != 1 || p.Get(Patched) != 2 {
		t.Fatalf("pair %+v", p)
	}
	data, err := json.Marshal(p)
	if err != nil || string(data) != `{"baseline":1,"patched":2}` {
		t.Fatalf("json %s %v", data, err)
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Variant
		ok   bool
	}{{"baseline", Baseline, true}, {"patched", Patched, true}, {"Patched", "", false}, {"", "", false}} {
		got, err := Parse(tc.in)
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("Parse(%q) = %q, %v", tc.in, got, err)
		}
	}
}

func TestName(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{{"v1", true}, {"v2-rfc", true}, {"srcu_lookup.2", true}, {"baseline", false}, {"", false},
		{"a/b", false}, {"..", false}, {".hidden", false}, {"with space", false}, {"0123456789012345678901234567890123456789x", false}} {
		got, err := Name(tc.in)
		if (err == nil) != tc.ok || (tc.ok && string(got) != tc.in) {
			t.Errorf("Name(%q) = %q, %v", tc.in, got, err)
		}
	}
}

func TestComparisons(t *testing.T) {
	got := Comparisons([]Variant{"v1", "v2", "v3"})
	want := []Comparison{{"v1", Baseline}, {"v2", Baseline}, {"v3", Baseline}, {"v2", "v1"}, {"v3", "v2"}}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("comparison %d = %v, want %v", i, got[i], want[i])
		}
	}
	if k := Kernels(nil); len(k) != 2 || k[1] != Patched {
		t.Errorf("Kernels(nil) = %v", k)
	}
	if k := Kernels([]Variant{"v1", "v2"}); len(k) != 3 || k[0] != Baseline || k[2] != "v2" {
		t.Errorf("Kernels(v1, v2) = %v", k)
	}
}
