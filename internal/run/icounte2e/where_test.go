package icounte2e

import (
	"strings"
	"testing"

	"lab/internal/insnprof"
	"lab/internal/report"
	"lab/internal/run"
	"lab/internal/run/runtest"
	"lab/internal/spec"
	"lab/internal/testenv"
)

// labDelay is a planted regression the where-block must name: a function
// of its own that a uprobe hit calls, spinning a little.
const labDelay = "noinline void lab_delay(void)\n{\n\tvolatile int lab_d;\n\n\tfor (lab_d = 0; lab_d < 16; lab_d++)\n\t\t;\n}\n\nstatic void handle_swbp(struct pt_regs *regs)\n"

// Every where-block of a document, by comparison name and row.
func whereOf(d *report.Document) map[string]insnprof.Where {
	out := map[string]insnprof.Where{}
	for _, c := range d.Comparisons {
		for _, w := range c.Where {
			out[c.Name()+" "+w.Row] = w.Where
		}
	}
	return out
}

func moved(w insnprof.Where, function string) *insnprof.Moved {
	for i := range w.Rows {
		if w.Rows[i].Function == function {
			return &w.Rows[i]
		}
	}
	return nil
}

// Where it moved, from one profiled boot of each kernel under icount: the
// SRCU series takes the uprobes tree's read lock off the hit path, and the
// profile names it, its deltas summing to the measured change within
// 0.1 % of it; a planted delay is named with its caller and the
// instructions it adds a hit; an image that only moved a log string has an
// empty block.
func TestWhereItMoved(t *testing.T) {
	testenv.E2E(t, "builds and boots real kernels under icount with lab's QEMU plugin")
	lab := runtest.SmallLab(t, "x86_64")
	runtest.OneCPU(t, lab, spec.MeasureICount)
	on := true
	lab.Matrix.Controls = &on // the floor's controls
	res, dir, out := runtest.With(t, run.Options{Lab: lab})
	t.Log(out)
	d := report.Build(res, dir, "test")
	t.Log(report.WhereText(d))
	srcu, ok := whereOf(d)["patched vs baseline uprobe-nop p=1"]
	if !ok {
		t.Fatalf("no where-block for uprobe-nop; profiles %d", len(res.Profiles))
	}
	if m := moved(srcu, "_raw_read_lock"); m == nil || m.Delta >= 0 {
		t.Errorf("the tree lookup's read lock is not named as gone from the hit path: %+v", srcu.Rows)
	}
	if agree := srcu.Agreement(); !(agree <= 0.1) {
		t.Errorf("the profile's path %+.4f %% against the figure's %+.4f %%: %.3f %% of the change apart, want 0.1 %% at most", srcu.PathPct(), srcu.MeasuredPct, agree)
	}

	root := testenv.Checkout(t, runtest.Root(t))
	runtest.TarballSeries(t, root, map[string][]testenv.Edit{
		"delay": {{Subject: "uprobes: a delay on every hit", File: "kernel/events/uprobes.c", Change: func(s string) string {
			s = testenv.Replace("static void handle_swbp(struct pt_regs *regs)\n", labDelay)(s)
			return testenv.Replace("\tbp_vaddr = uprobe_get_swbp_addr(regs);\n", "\tbp_vaddr = uprobe_get_swbp_addr(regs);\n\tlab_delay();\n")(s)
		}}},
		"logline": {logLine},
	})
	labFile := testenv.WriteLab(t, root, "where", `name: where
description: a planted delay and a moved log string, profiled
mode: apply
versions:
  - {name: delay, series: delay}
  - {name: logline, series: logline}
config: [common.config]
matrix:
  arch: [x86_64]
  cpus: [1]
  benchmarks: [uprobe-nop]
  producers: [1]
  duration: 250ms
  warmup: 0s
  measure: icount
`)
	two, err := spec.Load(labFile)
	if err != nil {
		t.Fatal(err)
	}
	res, dir, out = runtest.With(t, run.Options{Lab: two, Series: runtest.Versions(t, two), Profile: run.ProfileOn})
	t.Log(out)
	d = report.Build(res, dir, "test")
	t.Log(report.WhereText(d))
	blocks := whereOf(d)
	delay, ok := blocks["delay vs baseline uprobe-nop p=1"]
	if !ok {
		t.Fatalf("no where-block for the delay: %v", blocks)
	}
	if m := moved(delay, "lab_delay"); m == nil || m.Before != 0 || m.Delta < 30 {
		t.Errorf("the delay is not named with what it adds a hit: %+v", delay.Rows)
	}
	if m := moved(delay, "uprobe_notify_resume"); m == nil || m.Delta <= 0 {
		t.Errorf("the delay's caller (handle_swbp, in uprobe_notify_resume) is not named: %+v", delay.Rows)
	}
	if agree := delay.Agreement(); !(agree <= 0.1) {
		t.Errorf("the delay's profile %.3f %% of the change from the figure's", agree)
	}
	if w, ok := blocks["logline vs baseline uprobe-nop p=1"]; !ok || len(w.Rows) != 0 || !strings.Contains(w.Text(""), "no function moved") {
		t.Errorf("the moved log string's block: %v, %+v; want an empty one", ok, w.Rows)
	}
}
