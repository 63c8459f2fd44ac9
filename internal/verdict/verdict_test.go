package verdict

import (
	"math"
	"strings"
	"testing"

	"lab/initramfs/protocol"
	"lab/internal/results"
	"lab/internal/stats"
	"lab/internal/variant"
)

func summary(v ...float64) stats.Summary { return stats.Summarize(v) }

func pair(b, p stats.Summary) variant.Pair[stats.Summary] {
	return variant.Pair[stats.Summary]{Baseline: b, Patched: p}
}

func TestICountFloor(t *testing.T) {
	for _, tc := range []struct {
		name     string
		controls []variant.Pair[stats.Summary]
		followed []stats.Summary
		want     float64
	}{
		{"nothing: the least floor", nil, nil, MinICountFloorPct},
		{"controls that repeat exactly: the least floor", []variant.Pair[stats.Summary]{pair(summary(100, 100), summary(100, 100))}, nil, MinICountFloorPct},
		// A control that moved 0.03 % between the variants: non-series
		// effects reach that far, and three times it is the floor.
		{"a control's change", []variant.Pair[stats.Summary]{pair(summary(100, 100), summary(100.03, 100.03))}, nil, 0.09},
		// A control whose boots spread by 0.1 % (sd/mean): three times it.
		{"a control's spread", []variant.Pair[stats.Summary]{pair(summary(99.9, 100.1), summary(100, 100))}, nil, 3 * 100 * summary(99.9, 100.1).CV()},
		{"the largest control wins", []variant.Pair[stats.Summary]{
			pair(summary(100, 100), summary(100.02, 100.02)),
			pair(summary(50, 50), summary(50.05, 50.05)),
		}, nil, 0.3},
		{"a followed figure's own spread (bisect's ends)", nil, []stats.Summary{summary(10, 10.01)}, 3 * 100 * summary(10, 10.01).CV()},
		{"a control with no patched boots is left out", []variant.Pair[stats.Summary]{pair(summary(100), summary())}, nil, MinICountFloorPct},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ICountFloor(MinICountFloorPct, tc.controls, tc.followed...); math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("ICountFloor = %.6f, want %.6f", got, tc.want)
			}
		})
	}
}

func row(metric string, control bool, tool string, c stats.Change) Row {
	return Row{Benchmark: "b", Metric: metric, Control: control, Tool: tool, Change: c}
}

func TestDriftFloors(t *testing.T) {
	moved := stats.Change{Verdict: stats.Slower, Pct: -4, Lo: -6, Hi: -2}
	same := stats.Change{Verdict: stats.Same, Pct: -9, Lo: -20, Hi: 2}
	floors := DriftFloors([]Row{
		row(MetricRate, true, "", moved),                                                         // sets the rate floor at 6
		row(MetricRate, true, "", same),                                                          // not significant: no floor
		row(MetricScaling, true, "bpf-bench", moved),                                             // a tool's control: not the agent's
		row(MetricRate, false, "", stats.Change{Verdict: stats.Faster, Pct: 50, Lo: 40, Hi: 60}), // not a control
	})
	if len(floors) != 1 || floors[MetricRate] != 6 {
		t.Errorf("DriftFloors = %v, want rate: 6 alone", floors)
	}
}

func TestApplyDriftFloor(t *testing.T) {
	for _, tc := range []struct {
		name    string
		r       Row
		floor   float64
		verdict string
	}{
		{"within the floor: ~", row(MetricRate, false, "", stats.Change{Verdict: stats.Faster, Pct: 5, P: 0.01}), 6, stats.Same},
		{"beyond the floor: stands", row(MetricRate, false, "", stats.Change{Verdict: stats.Faster, Pct: 7, P: 0.01}), 6, stats.Faster},
		{"no floor: stands", row(MetricRate, false, "", stats.Change{Verdict: stats.Slower, Pct: -1, P: 0.01}), 0, stats.Slower},
		{"a control is never floored", row(MetricRate, true, "", stats.Change{Verdict: stats.Slower, Pct: -4, P: 0.01}), 6, stats.Slower},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.r
			ApplyDriftFloor(&r, tc.floor)
			if r.Change.Verdict != tc.verdict {
				t.Errorf("verdict %q, want %q", r.Change.Verdict, tc.verdict)
			}
			if tc.verdict == stats.Same && (!strings.Contains(r.Change.Why, "drift") || r.Change.FloorPct != tc.floor) {
				t.Errorf("why %q, floor %v: must name the drift floor", r.Change.Why, r.Change.FloorPct)
			}
		})
	}
}

func TestICountEndsDifferAndLikeEnd(t *testing.T) {
	if ICountEndsDiffer(0.019, 0.01) || !ICountEndsDiffer(0.021, 0.01) || !ICountEndsDiffer(-5, 0.01) {
		t.Error("ends differ beyond two floors, either way, and not within")
	}
	if got := LikeEndPct(0.01, 18); got != 1.8 {
		t.Errorf("LikeEndPct(0.01, 18) = %v, want a tenth of the change, 1.8", got)
	}
	if got := LikeEndPct(0.05, -0.1); got != 0.05 {
		t.Errorf("LikeEndPct(0.05, -0.1) = %v, want the floor", got)
	}
}

func TestPairUp(t *testing.T) {
	v := variant.Pair[Summary]{
		Baseline: Summary{Summary: stats.Summary{Values: []float64{1, 2, 3}}, Pairs: []string{"a round 0", "a round 1", "b round 0"}},
		Patched:  Summary{Summary: stats.Summary{Values: []float64{20, 30}}, Pairs: []string{"b round 0", "a round 1"}},
	}
	base, pat := PairUp(v)
	if len(base) != 2 || base[0] != 2 || pat[0] != 30 || base[1] != 3 || pat[1] != 20 {
		t.Errorf("PairUp = %v, %v: want the boots of the same pair side by side, unpaired ones left out", base, pat)
	}
}

func TestClaimJudge(t *testing.T) {
	for _, tc := range []struct {
		name, direction string
		min             float64
		c               stats.Change
		want            string
	}{
		{"faster as claimed", stats.Faster, 0, stats.Change{Verdict: stats.Faster, Pct: 3}, Reproduced},
		{"faster but smaller than claimed", stats.Faster, 5, stats.Change{Verdict: stats.Faster, Pct: 3}, NotShown},
		{"not significant", stats.Faster, 0, stats.Change{Verdict: stats.Same, Pct: 3}, NotShown},
		{"the other way", stats.Faster, 0, stats.Change{Verdict: stats.Slower, Pct: -3}, Contradicts},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := judge(tc.direction, tc.min, tc.c); got != tc.want {
				t.Errorf("judge = %q, want %q", got, tc.want)
			}
		})
	}
	if got := overall([]ClaimCheck{{Verdict: NotShown}, {Verdict: Contradicts}, {Verdict: Reproduced}}); got != Contradicts {
		t.Errorf("overall = %q: a contradiction anywhere outranks a reproduction", got)
	}
	if got := overall(nil); got != NotMeasured {
		t.Errorf("overall(nil) = %q", got)
	}
}

// boot is one icount boot of variant v with a row per rate: uprobe-nop
// first, then the controls.
func boot(idx int, v variant.Variant, clock string, rates map[string]float64) results.Boot {
	b := results.Boot{Index: idx, Variant: v, Arch: "x86_64", CPUs: 1, Clock: clock, Accel: results.Accel{Name: results.TCG}}
	for _, name := range []string{"uprobe-nop", "usermode-count", "syscall-count"} {
		if r, ok := rates[name]; ok {
			b.Results = append(b.Results, protocol.Result{Benchmark: name, Producers: 1,
				Samples: []protocol.Sample{{IntervalNS: 1e9, Hits: uint64(r), Rate: r}}, Warmup: []protocol.Sample{{IntervalNS: 1e9}}})
		}
	}
	return b
}

// TestICountTableUsesTheFloor: under icount a change that every boot agrees
// on but that is within three times the controls' spread is "~".
func TestICountTableUsesTheFloor(t *testing.T) {
	var boots []results.Boot
	for i := 0; i < 5; i++ {
		// The controls move by 0.03 % between the variants: the floor is
		// 0.09 %. uprobe-nop moves by 0.06 % in one table and 1 % in the
		// other.
		boots = append(boots,
			boot(2*i, variant.Baseline, results.ClockICount, map[string]float64{"uprobe-nop": 1e6 + float64(i), "usermode-count": 5e7, "syscall-count": 4e6}),
			boot(2*i+1, variant.Patched, results.ClockICount, map[string]float64{"uprobe-nop": 1.0006e6 + float64(i), "usermode-count": 5.0015e7, "syscall-count": 4e6}))
	}
	tables := Tables(&results.Run{Boots: boots})
	if len(tables) != 1 {
		t.Fatalf("%d tables", len(tables))
	}
	tb := tables[0]
	if math.Abs(tb.FloorPct-0.09) > 1e-6 {
		t.Errorf("floor %.4f %%, want 0.09 %% (3× the controls' 0.03 %% change)", tb.FloorPct)
	}
	if r := tb.Rows[0]; r.Benchmark != "uprobe-nop" || r.Change.Verdict != stats.Same {
		t.Errorf("%s: %+v: a 0.06 %% change within the 0.09 %% floor must be ~", r.Benchmark, r.Change)
	}
	if reg := Regressions(tables); len(reg) != 0 {
		t.Errorf("regressions %v in a table with none", reg)
	}
}

func TestRegressionsLeaveControlsOut(t *testing.T) {
	tb := Table{Shape: Shape{Arch: "x86_64", Topology: "1 vCPU", Accel: variant.Pair[string]{Baseline: results.TCG, Patched: results.TCG}, Clock: variant.Pair[string]{Baseline: results.ClockWall, Patched: results.ClockWall}},
		Rows: []Row{
			{Benchmark: "uprobe-nop", Producers: 1, Metric: MetricRate, Change: stats.Change{Verdict: stats.Slower, Pct: -5, P: 0.008}},
			{Benchmark: "syscall-count", Producers: 1, Metric: MetricRate, Control: true, Change: stats.Change{Verdict: stats.Slower, Pct: -5, P: 0.008}},
		}}
	reg := Regressions([]Table{tb})
	if len(reg) != 1 || !strings.Contains(reg[0], "uprobe-nop p=1 -5.00 %") {
		t.Errorf("Regressions = %q, want uprobe-nop alone", reg)
	}
}

// A table where nothing moved while a control drifted is too noisy to
// call; one where a row moved, or no control drifted, is a verdict.
func TestTooNoisy(t *testing.T) {
	shape := Shape{Arch: "x86_64", Topology: "2 vCPUs", Accel: variant.Pair[string]{Baseline: results.TCG, Patched: results.TCG}, Clock: variant.Pair[string]{Baseline: results.ClockWall, Patched: results.ClockWall}}
	same := Row{Benchmark: "kretprobe", Producers: 1, Metric: MetricRate, Change: stats.Change{Verdict: stats.Same, Pct: 1.6, P: 1}}
	slower := Row{Benchmark: "kretprobe", Producers: 1, Metric: MetricRate, Change: stats.Change{Verdict: stats.Slower, Pct: -6, P: 0.008}}
	control := Row{Benchmark: "syscall-count", Producers: 1, Metric: MetricRate, Control: true, Change: stats.Change{Verdict: stats.Faster, Pct: 11.5, P: 0.008}}
	drift := []string{"control syscall-count p=1 moved +11.5 %"}
	for _, tc := range []struct {
		name  string
		table Table
		noisy bool
	}{
		{"nothing moved, a control drifted", Table{Shape: shape, Rows: []Row{same, control}, Drift: drift}, true},
		{"a row moved beside the drift", Table{Shape: shape, Rows: []Row{slower, control}, Drift: drift}, false},
		{"a scaling row moved", Table{Shape: shape, Rows: []Row{same, control}, Scaling: []Row{slower}, Drift: drift}, false},
		{"nothing moved, no drift", Table{Shape: shape, Rows: []Row{same}}, false},
	} {
		got := TooNoisy([]Table{tc.table})
		if (len(got) > 0) != tc.noisy {
			t.Errorf("%s: TooNoisy = %q, want noisy %v", tc.name, got, tc.noisy)
		}
		if tc.noisy && !strings.Contains(got[0], "syscall-count p=1 moved +11.5 %") {
			t.Errorf("%s: %q does not say what the control did", tc.name, got)
		}
	}
}

func TestClaimsOK(t *testing.T) {
	claims := CheckClaims([]results.Claim{{Benchmark: "uprobe-nop", Producers: []int{1}, Direction: stats.Faster}}, nil)
	if ok, bad := ClaimsOK(claims); ok || len(bad) != 1 || !strings.Contains(bad[0], NotMeasured) {
		t.Errorf("ClaimsOK = %v, %q: a claim no table measured is not reproduced", ok, bad)
	}
}

// Boots whose agent named no measuring method had goroutine producers, and
// their table keeps the wider floor.
func TestMinFloorFollowsTheMethod(t *testing.T) {
	if got := (&Table{}).MinFloorPct(); got != MinICountFloorPct {
		t.Errorf("producer program: %v", got)
	}
	if got := (&Table{GoProducers: true}).MinFloorPct(); got != MinICountFloorGoProducersPct {
		t.Errorf("goroutine producers: %v", got)
	}
}
