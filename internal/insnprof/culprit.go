package insnprof

import (
	"fmt"
	"math"

	"lab/internal/results"
)

// CulpritWhere is where a bisect's culprit moved the followed figure in
// the kernel: its instruction profile against the step before it's
// (results.StepVariant), reconciled with the culprit's own change; ok
// false without both.
func CulpritWhere(r *results.Run) (Where, bool) {
	bi := r.Bisect
	if bi == nil || bi.Outcome != results.Found && bi.Outcome != results.Attributed || bi.Culprit < 1 || bi.Figure.Scaling {
		return Where{}, false
	}
	find := func(k int) (results.ProfileResult, bool) {
		for _, p := range r.Profiles {
			if p.Variant != results.StepVariant(k) || p.Method != "" {
				continue
			}
			for _, res := range p.Results {
				if res.Benchmark == bi.Figure.Benchmark && res.Producers == bi.Figure.Producers && res.Tool == "" {
					return res, true
				}
			}
		}
		return results.ProfileResult{}, false
	}
	before, ok1 := find(bi.Culprit - 1)
	after, ok2 := find(bi.Culprit)
	if !ok1 || !ok2 {
		return Where{}, false
	}
	measured := math.NaN()
	if !bi.Own.NoData {
		measured = (1/(1+bi.Own.Pct/100) - 1) * 100
	}
	return Diff(before, after, measured), true
}

// CulpritText is the culprit's where-block as a bisect's report, its
// reply and the history's regression mail print it; "" without one.
func CulpritText(r *results.Run) string {
	w, ok := CulpritWhere(r)
	if !ok {
		return ""
	}
	bi := r.Bisect
	return fmt.Sprintf("\nwhere the culprit moved it (step %d against step %d; exact: every instruction counted in one profiled boot a step):\n%s",
		bi.Culprit, bi.Culprit-1, w.Text("  "))
}
