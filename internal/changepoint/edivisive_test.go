package changepoint

import (
	"math"
	"math/rand/v2"
	"testing"
)

// qDirect is Matteson and James's Q(τ, κ) = τ(κ-τ)/κ · Ê straight from
// its definition: the mean distance between the parts, less the mean
// distances within each.
func qDirect(y []float64, tau, kappa int) float64 {
	x, z := y[:tau], y[tau:kappa]
	var between, withinX, withinZ float64
	for _, a := range x {
		for _, b := range z {
			between += math.Abs(a - b)
		}
	}
	for i := range x {
		for j := i + 1; j < len(x); j++ {
			withinX += math.Abs(x[i] - x[j])
		}
	}
	for i := range z {
		for j := i + 1; j < len(z); j++ {
			withinZ += math.Abs(z[i] - z[j])
		}
	}
	n, m := float64(len(x)), float64(len(z))
	e := 2*between/(n*m) - withinX/(n*(n-1)/2) - withinZ/(m*(m-1)/2)
	return n * m / (n + m) * e
}

// The incremental computation finds the same maximum as the definition.
func TestBestSplitMatchesDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 50; trial++ {
		n := 4 + rng.IntN(40)
		y := make([]float64, n)
		for i := range y {
			y[i] = rng.NormFloat64()
			if i > n/3 {
				y[i] += float64(trial%3) * 0.7
			}
		}
		for _, minSeg := range []int{2, 3, 6} {
			tau, kappa, q, ok := bestSplit(y, minSeg)
			if n < 2*minSeg {
				if ok {
					t.Fatalf("n=%d minSeg=%d: split %d of a series too short", n, minSeg, tau)
				}
				continue
			}
			want, wantTau := math.Inf(-1), 0
			for ta := minSeg; ta <= n-minSeg; ta++ {
				for k := ta + minSeg; k <= n; k++ {
					if v := qDirect(y, ta, k); v > want+1e-9 {
						want, wantTau = v, ta
					}
				}
			}
			// Ties aside, τ must be where the maximum is reached.
			atTau := math.Inf(-1)
			for k := tau + minSeg; ok && k <= n; k++ {
				atTau = math.Max(atTau, qDirect(y, tau, k))
			}
			tol := 1e-9 * math.Max(1, math.Abs(want))
			if !ok || math.Abs(q-want) > tol || math.Abs(atTau-want) > tol || math.Abs(qDirect(y, tau, kappa)-q) > tol {
				t.Fatalf("n=%d minSeg=%d: bestSplit = τ %d, κ %d, Q %v; definition: τ %d, Q %v", n, minSeg, tau, kappa, q, wantTau, want)
			}
			if tau < minSeg || n-tau < minSeg {
				t.Fatalf("n=%d minSeg=%d: τ %d leaves a side shorter than minSeg", n, minSeg, tau)
			}
		}
	}
}
