package arm64e2e

import (
	"testing"

	"lab/internal/report"
	"lab/internal/run/runtest"
	"lab/internal/spec"
)

// Where it moved on arm64: the suite's arm64 kernels, one vCPU under
// icount, the first boot of each with lab's QEMU plugin (its arm64 section
// markers). The SRCU series takes the tree's read lock off the uprobe hit
// path; arm64 inlines it into uprobe_notify_resume (x86_64 calls
// _raw_read_lock), so that function is named with fewer instructions a
// hit, and the profile meets the measured figure within 0.1 % of its
// change. Two boots side by side, some 10 s with the kernels cached.
func TestWhereItMovedOnArm64(t *testing.T) {
	e2e(t)
	lab := runtest.SmallLab(t, "arm64")
	runtest.OneCPU(t, lab, spec.MeasureICount)
	res, dir, out := runtest.Run(t, lab)
	t.Log(out)
	d := report.Build(res, dir, "test")
	t.Log(report.WhereText(d))
	var found bool
	for _, c := range d.Comparisons {
		for _, w := range c.Where {
			if w.Row != "uprobe-nop p=1" {
				continue
			}
			found = true
			var resume float64
			for _, m := range w.Where.Rows {
				if m.Function == "uprobe_notify_resume" {
					resume = m.Delta
				}
			}
			if resume >= 0 {
				t.Errorf("uprobe_notify_resume is not named with fewer instructions a hit: %+v", w.Where.Rows)
			}
			if agree := w.Where.Agreement(); !(agree <= 0.1) {
				t.Errorf("the profile's path %+.4f %% against the figure's %+.4f %%: %.3f %% of the change apart", w.Where.PathPct(), w.Where.MeasuredPct, agree)
			}
		}
	}
	if !found {
		t.Fatalf("no where-block for uprobe-nop; %d profiles", len(res.Profiles))
	}
}
