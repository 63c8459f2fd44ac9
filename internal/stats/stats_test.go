package stats

import (
	"math"
	"strings"
	"testing"
)

func TestSummarize(t *testing.T) {
	s := Summarize([]float64{1, 2, 3, 4, 5, 6, 7})
	if s.N != 7 || s.Mean != 4 || math.Abs(s.Stddev-2.160247) > 1e-6 || s.Median != 4 {
		t.Errorf("summary %+v", s)
	}
	// The distribution-free 95 % CI of the median of 7 values is the 1st
	// to the 7th order statistic (confidence 98.4 %).
	if s.Lo != 1 || s.Hi != 7 {
		t.Errorf("median CI [%v, %v], want [1, 7]", s.Lo, s.Hi)
	}
}

func TestCompare(t *testing.T) {
	for _, tc := range []struct {
		name      string
		base, pat []float64
		floor     float64
		verdict   string
		pct       float64 // want, ±0.001
		p         float64 // want, ±0.0005 (-1: don't check)
		why       string
	}{
		// Fully separated samples of 5: p = 2/C(10,5) = 0.0079.
		{"significant", []float64{100, 101, 102, 103, 104}, []float64{110, 111, 112, 113, 114}, 0, Faster, 9.804, 0.0079, ""},
		{"significant slower", []float64{110, 111, 112, 113, 114}, []float64{100, 101, 102, 103, 104}, 0, Slower, -8.929, 0.0079, ""},
		// Interleaved: no difference.
		{"noise", []float64{100, 103, 105, 107, 109}, []float64{101, 102, 104, 108, 110}, 0, Same, 0.1908, 1, "p=1.000"},
		// Three boots each can never reach 0.05: p = 2/C(6,3) = 0.1.
		{"too few boots", []float64{1, 1.01, 1.02}, []float64{2, 2.01, 2.02}, 0, Same, 99.0099, 0.1, "need 4 boots per variant"},
		// icount: separated, but within what the controls cannot resolve.
		{"below the floor", []float64{1.0000, 1.0001, 1.0002, 1.0001, 1.0000}, []float64{1.0003, 1.0004, 1.0005, 1.0004, 1.0003}, 0.05, Same, 0.029998, 0.0079, "images without a code change"},
		{"above the floor", []float64{1.0000, 1.0001, 1.0002, 1.0001, 1.0000}, []float64{1.0103, 1.0104, 1.0105, 1.0104, 1.0103}, 0.05, Faster, 1.029918, 0.0079, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Compare(tc.base, tc.pat, tc.floor)
			if c.Verdict != tc.verdict {
				t.Errorf("verdict %q (%s), want %q", c.Verdict, c.Why, tc.verdict)
			}
			if math.Abs(c.Pct-tc.pct) > 0.001 {
				t.Errorf("change %.4f %%, want %.3f %%", c.Pct, tc.pct)
			}
			if math.Abs(c.P-tc.p) > 0.0005 {
				t.Errorf("p = %.4f, want %.4f", c.P, tc.p)
			}
			if !strings.Contains(c.Why, tc.why) {
				t.Errorf("why %q lacks %q", c.Why, tc.why)
			}
			if c.Lo > c.Pct || c.Hi < c.Pct {
				t.Errorf("CI [%.3f, %.3f] does not hold the change %.3f", c.Lo, c.Hi, c.Pct)
			}
		})
	}
}

func TestMinN(t *testing.T) {
	if MinN() != 4 {
		t.Errorf("MinN = %d, want 4 (2/C(8,4) = 0.029 < 0.05 < 2/C(6,3) = 0.1)", MinN())
	}
}

// Observations stay in the order given (boot order): benchmath sorts what it
// is given, and must be given a copy.
func TestObservationsKeepBootOrder(t *testing.T) {
	base := []float64{3, 1, 2, 5, 4}
	pat := []float64{9, 7, 8, 6, 10}
	s := Summarize(base)
	Compare(base, pat, 0)
	for i, want := range []float64{3, 1, 2, 5, 4} {
		if base[i] != want || s.Values[i] != want {
			t.Fatalf("order lost: input %v, summary %v", base, s.Values)
		}
	}
	if pat[0] != 9 {
		t.Errorf("Compare sorted its input: %v", pat)
	}
	if c := Compare(nil, pat, 0); !c.NoData {
		t.Errorf("no baseline: %+v", c)
	}
}
