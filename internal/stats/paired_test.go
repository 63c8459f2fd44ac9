package stats

import (
	"math"
	"testing"
)

// Known answers of the signed-rank test.
func TestSignedRankP(t *testing.T) {
	for _, tc := range []struct {
		d    []float64
		want float64
	}{
		{[]float64{1, 2, 3, 4, 5, 6}, 2.0 / 64}, // all positive: 2/2^6
		{[]float64{1, 2, 3, 4, 5}, 2.0 / 32},    // 0.0625: 5 pairs cannot reach 0.05
		{[]float64{1, -2, 3, -4, 5, -6}, 1},     // no direction (W+ = 9 = its mean... see below)
		{[]float64{0, 0, 1}, 1},                 // zeros dropped: one difference
		{[]float64{-1, -2, -3, -4, -5, -6, -7}, 2.0 / 128},
	} {
		got := SignedRankP(tc.d)
		if tc.want == 1 && got < 0.5 || tc.want < 1 && math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("SignedRankP(%v) = %v, want %v", tc.d, got, tc.want)
		}
	}
	if MinPairs() != 6 {
		t.Errorf("MinPairs = %d, want 6", MinPairs())
	}
}

// A host that speeds both variants of a pair alike divides out: pairs see
// a 2 % change the unpaired test misses under 30 % host-to-host spread.
func TestComparePairedDividesOutTheHost(t *testing.T) {
	hosts := []float64{1.0, 1.3, 0.8, 1.25, 0.9, 1.1, 0.7, 1.2}
	var base, pat []float64
	for i, h := range hosts {
		base = append(base, 100*h*(1+0.001*float64(i%3)))
		pat = append(pat, 102*h*(1-0.001*float64(i%2)))
	}
	paired := ComparePaired(base, pat, 0)
	if paired.Verdict != Faster || math.Abs(paired.Pct-2) > 0.3 || paired.Lo <= 0 {
		t.Errorf("paired: %+v", paired)
	}
	if unpaired := Compare(base, pat, 0); unpaired.Verdict != Same {
		t.Errorf("unpaired: %+v (the host spread should hide 2 %%)", unpaired)
	}
	if c := ComparePaired(nil, nil, 0); !c.NoData {
		t.Errorf("no pairs: %+v", c)
	}
}
