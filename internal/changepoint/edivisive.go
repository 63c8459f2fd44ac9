package changepoint

import "math"

// bestSplit returns the τ that maximizes Matteson and James's divergence
//
//	Q(τ, κ) = τ(κ-τ)/κ · Ê(y[0:τ], y[τ:κ]; α=1)
//	        = 2/κ · Σ_{i<τ≤j<κ} |y_i-y_j|
//	          - 2(κ-τ)/(κ(τ-1)) · Σ_{i<j<τ} |y_i-y_j|
//	          - 2τ/(κ(κ-τ-1)) · Σ_{τ≤i<j<κ} |y_i-y_j|
//
// over every split with at least minSeg points on each side (τ ≥ minSeg,
// κ-τ ≥ minSeg), with that κ and Q there; ok is false when y is too short
// to split.
// Like Otava's calculator, the end κ of the second part may stop short of
// the end of y, so that a later change does not blur this one.
//
// It costs O(len(y)²) time and O(len(y)) memory: with W(a, b) the sum of
// the distances within y[a:b], the sum between the parts is
// W(0,κ) - W(0,τ) - W(τ,κ); W(0, ·) is computed once, and the row W(τ, ·)
// is updated in place from W(τ+1, ·) as τ descends.
func bestSplit(y []float64, minSeg int) (tau, kappa int, q float64, ok bool) {
	n := len(y)
	if minSeg < 2 || n < 2*minSeg {
		return 0, 0, 0, false
	}
	// prefix[b] = W(0, b).
	prefix := make([]float64, n+1)
	for b := 2; b <= n; b++ {
		c := y[b-1]
		var col float64
		for i := 0; i < b-1; i++ {
			col += math.Abs(y[i] - c)
		}
		prefix[b] = prefix[b-1] + col
	}
	// row[k] = W(τ, k) for the current τ; it starts as W(n, ·) = 0.
	row := make([]float64, n+1)
	best, bestTau, bestKappa := math.Inf(-1), 0, 0
	for t := n - 1; t >= minSeg; t-- {
		// W(t, k) = W(t+1, k) + Σ_{t<j<k} |y_t - y_j|.
		var acc float64
		for k := t + 2; k <= n; k++ {
			acc += math.Abs(y[t] - y[k-1])
			row[k] += acc
		}
		if t > n-minSeg {
			continue
		}
		ft := float64(t)
		withinX := prefix[t]
		for k := t + minSeg; k <= n; k++ {
			fk := float64(k)
			between := prefix[k] - withinX - row[k]
			v := 2/fk*between -
				2*(fk-ft)/(fk*(ft-1))*withinX -
				2*ft/(fk*(fk-ft-1))*row[k]
			// >= so that among equal values the earliest τ wins (τ
			// descends): deterministic, and a flat series splits nowhere
			// in particular.
			if v >= best {
				best, bestTau, bestKappa = v, t, k
			}
		}
	}
	return bestTau, bestKappa, best, true
}
