package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
)

// ComparePaired tests patched against baseline on pairs: base[i] and pat[i]
// were booted back to back on one host, so what the host adds to both
// divides out of their ratio. The change is the geometric mean of the
// per-pair ratios, with a bootstrap 95 % interval over pairs; p is the
// two-sided Wilcoxon signed-rank test on the log ratios (exact up to 20
// pairs). floorPct works as in Compare.
func ComparePaired(base, pat []float64, floorPct float64) Change {
	c := Change{FloorPct: floorPct, Verdict: Same}
	n := min(len(base), len(pat))
	if n == 0 {
		c.Why, c.NoData = "no pairs", true
		return c
	}
	d := make([]float64, 0, n)
	for i := 0; i < n; i++ {
		if base[i] <= 0 || pat[i] <= 0 {
			continue
		}
		d = append(d, math.Log(pat[i]/base[i]))
	}
	if len(d) == 0 {
		c.Why, c.NoData = "no pair with two positive figures", true
		return c
	}
	c.Pct = (math.Exp(mean(d)) - 1) * 100
	c.Lo, c.Hi = bootstrapPairs(d)
	c.P = SignedRankP(d)
	switch {
	case c.P >= Alpha:
		c.Why = fmt.Sprintf("p=%.3f ≥ %.2f (Wilcoxon signed-rank over %d pairs)", c.P, Alpha, len(d))
		if min := MinPairs(); len(d) < min {
			c.Why += fmt.Sprintf("; with %d pairs no difference can reach p<%.2f (need %d pairs)", len(d), Alpha, min)
		}
	case floorPct > 0 && math.Abs(c.Pct) <= floorPct:
		c.Why = fmt.Sprintf("|%.3f %%| is within the %.3f %% floor: what the controls, or images without a code change, differ by", c.Pct, floorPct)
	case c.Pct > 0:
		c.Verdict = Faster
	case c.Pct < 0:
		c.Verdict = Slower
	}
	return c
}

// MinPairs is the fewest pairs with which the two-sided signed-rank test
// can reach Alpha: all signs alike gives p = 2/2^n.
func MinPairs() int {
	for n := 1; n < 30; n++ {
		if 2/math.Pow(2, float64(n)) < Alpha {
			return n
		}
	}
	return 30
}

// SignedRankP is the two-sided p-value of the Wilcoxon signed-rank test of
// differences d against 0: exact (all 2^n signs, mid-ranks for ties) up to
// 20 differences, the normal approximation with tie correction above.
// Zero differences are dropped, as Wilcoxon did.
func SignedRankP(d []float64) float64 {
	var nz []float64
	for _, x := range d {
		if x != 0 {
			nz = append(nz, x)
		}
	}
	n := len(nz)
	if n == 0 {
		return 1
	}
	ranks := midRanks(nz)
	var wPlus, total float64
	for i, x := range nz {
		total += ranks[i]
		if x > 0 {
			wPlus += ranks[i]
		}
	}
	// Two-sided: how far W+ is from its mean, in either direction.
	center := total / 2
	dev := math.Abs(wPlus-center) - 1e-9
	if n <= 20 {
		extreme := 0
		for mask := 0; mask < 1<<n; mask++ {
			var w float64
			for i := 0; i < n; i++ {
				if mask&(1<<i) != 0 {
					w += ranks[i]
				}
			}
			if math.Abs(w-center) >= dev {
				extreme++
			}
		}
		return float64(extreme) / float64(int(1)<<n)
	}
	var tie float64
	counts := map[float64]int{}
	for _, r := range ranks {
		counts[r]++
	}
	for _, t := range counts {
		tie += float64(t*t*t - t)
	}
	sd := math.Sqrt(float64(n*(n+1)*(2*n+1))/24 - tie/48)
	z := (math.Abs(wPlus-center) - 0.5) / sd
	return math.Min(1, math.Erfc(z/math.Sqrt2))
}

// midRanks ranks |x| from 1, ties sharing the mean of their ranks.
func midRanks(x []float64) []float64 {
	idx := make([]int, len(x))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return math.Abs(x[idx[a]]) < math.Abs(x[idx[b]]) })
	r := make([]float64, len(x))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && math.Abs(x[idx[j+1]]) == math.Abs(x[idx[i]]) {
			j++
		}
		for k := i; k <= j; k++ {
			r[idx[k]] = float64(i+j)/2 + 1
		}
		i = j + 1
	}
	return r
}

// bootstrapPairs resamples pairs and returns the 95 % interval of the
// geometric-mean change, in percent.
func bootstrapPairs(d []float64) (lo, hi float64) {
	const rounds = 2000
	rng := rand.New(rand.NewPCG(1, 2))
	out := make([]float64, rounds)
	s := make([]float64, len(d))
	for r := range out {
		for i := range s {
			s[i] = d[rng.IntN(len(d))]
		}
		out[r] = (math.Exp(mean(s)) - 1) * 100
	}
	sort.Float64s(out)
	return out[int(0.025*rounds)], out[int(math.Min(0.975*rounds, rounds-1))]
}
