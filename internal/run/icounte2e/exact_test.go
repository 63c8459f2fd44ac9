package icounte2e

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"lab/internal/report"
	"lab/internal/run"
	"lab/internal/run/runtest"
	"lab/internal/spec"
	"lab/internal/stats"
	"lab/internal/testenv"
	"lab/internal/verdict"
)

// logLine moves a log string: another image, and no code a benchmark runs.
var logLine = testenv.Edit{Subject: "init: say lab in the command line's log line", File: "init/main.c",
	Change: testenv.Replace(`pr_notice("Kernel command line: %s\n", saved_command_line);`, `pr_notice("Kernel command line (lab): %s\n", saved_command_line);`)}

// plantedTicks slows the uprobe-nop producer by about 0.02 %: each timer
// tick (250 a guest second, 10^9 instructions) that finds a task which has
// hit a uprobe spins some 800 instructions. The controls' producers never
// hit one, so they do not move.
const plantedTicks = "\tif (current->utask) { volatile int lab_t; for (lab_t = 0; lab_t < 133; lab_t++) ; }\n"

// The verdict under icount, with the default of one boot a kernel: a
// planted change of about 0.02 % on the uprobe path is called slower, and
// an image that only moved a log string is called unchanged, in every
// report format, in exact words and without a p-value.
func TestExactVerdicts(t *testing.T) {
	testenv.E2E(t, "builds and boots real kernels under icount")
	root := testenv.Checkout(t, runtest.Root(t))
	const tick = "\tif (housekeeping_cpu(cpu, HK_TYPE_TICK))\n\t\tarch_scale_freq_tick();\n"
	runtest.TarballSeries(t, root, map[string][]testenv.Edit{
		"planted": {{Subject: "sched: spin a little on a tick of a uprobed task", File: "kernel/sched/core.c", Change: testenv.Replace(tick, plantedTicks+tick)}},
		"logline": {logLine},
	})
	// 1 s samples: the least floor is 0.01 % (250 ms samples: 0.04 %).
	labFile := testenv.WriteLab(t, root, "exact", `name: exact
description: a planted 0.02 % change and a moved log string, one boot a kernel
mode: apply
versions:
  - {name: planted, series: planted}
  - {name: logline, series: logline}
config: [common.config]
matrix:
  arch: [x86_64]
  cpus: [1]
  benchmarks: [uprobe-nop]
  producers: [1]
  duration: 1s
  warmup: 0s
  measure: icount
`)
	lab, err := spec.Load(labFile)
	if err != nil {
		t.Fatal(err)
	}
	res, dir, out := runtest.With(t, run.Options{Lab: lab, Series: runtest.Versions(t, lab)})
	t.Log(out)
	if n := len(res.Boots); n != 3 {
		t.Fatalf("%d boots, want 3: one a kernel", n)
	}
	d := report.Build(res, dir, "test")
	rows := map[string]verdict.Row{}
	for _, c := range d.Comparisons {
		for _, r := range c.Tables[0].Rows {
			rows[c.Name()+" "+r.Benchmark] = r
		}
	}
	planted, moved := rows["planted vs baseline uprobe-nop"], rows["logline vs baseline uprobe-nop"]
	t.Logf("planted %s; log string moved %s", planted.Change.Words(), moved.Change.Words())
	if c := planted.Change; c.Verdict != stats.Slower || !c.Exact || c.Pct > -0.012 || c.Pct < -0.03 {
		t.Errorf("planted: %s, want slower by about 0.02 %% (exact)", c.Words())
	}
	for name, r := range rows {
		if strings.HasPrefix(name, "logline vs baseline") && (r.Change.Verdict != stats.Same || math.Abs(r.Change.Pct) >= r.Change.FloorPct) {
			t.Errorf("%s: %s, want unchanged (a moved log string changes no code a benchmark runs)", name, r.Change.Words())
		}
	}
	html, err := report.HTML(d)
	if err != nil {
		t.Fatal(err)
	}
	formats := map[string]string{"text": report.Text(d, false), "80 columns": report.Plain(d), "markdown": report.Markdown(d), "html": html,
		"csv": report.CSV(d)}
	js, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	formats["json"] = string(js)
	for name, text := range formats {
		for _, w := range []string{"exact", fmt.Sprintf("%.3f", -planted.Change.Pct)} {
			if !strings.Contains(text, w) {
				t.Errorf("%s lacks %q", name, w)
			}
		}
		if strings.Contains(text, "Mann-Whitney") || strings.Contains(text, "p = 0.") {
			t.Errorf("%s speaks of a test over identical boots:\n%s", name, text)
		}
	}
	if mail := strings.Join(strings.Fields(formats["80 columns"]), " "); !strings.Contains(mail, "slower by "+fmt.Sprintf("%.3f", -planted.Change.Pct)+" % (exact; 1 boot per kernel; floor") {
		t.Errorf("the mail's headline lacks the exact words:\n%s", formats["80 columns"])
	}
}
