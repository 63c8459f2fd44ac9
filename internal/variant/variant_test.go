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
