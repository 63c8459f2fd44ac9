package verdict

import (
	"fmt"
	"math"
	"time"

	"lab/internal/benchmark"
	"lab/internal/stats"
	"lab/internal/variant"
)

// MinICountFloorPct is the least an icount floor can be. Boots of one
// image repeat exactly (the guest is held deterministic, vm.ICountFixes),
// and boots that drew different random streams, as two images do, agree
// within 0.0003 % (docs/validation.md). With every boot agreeing, a U test
// calls any ordering significant; 0.01 % is the least change lab calls one.
const MinICountFloorPct = 0.01

// MinICountFloorGoProducersPct is the least floor for boots of agents whose
// producers were goroutines: the random stream moved a uprobe row between
// two levels 0.065 % apart in images without a code change.
const MinICountFloorGoProducersPct = 0.07

// MinFloorPct is the least icount floor for the table's boots.
func (t *Table) MinFloorPct() float64 {
	if t.GoProducers {
		return MinICountFloorGoProducersPct
	}
	return MinICountFloorPctFor(t.Sample)
}

// MinICountFloorPctFor is the least icount floor for samples of this
// length (0: a second). The first sample holds the one-off cost of the
// producers' start, and that cost depends on the image: a commit that only
// changed a log line printed at boot moved uprobe-nop by +0.031 % and
// syscall-count by +0.015 % with one 250 ms sample, within the 0.01 %
// floor with 1 s samples (TestTrackAStream). Its share grows as the sample
// shortens, and so does the floor: 0.01 % a second, 0.04 % at 250 ms.
func MinICountFloorPctFor(sample time.Duration) float64 {
	if sample <= 0 || sample >= time.Second {
		return MinICountFloorPct
	}
	return MinICountFloorPct * float64(time.Second) / float64(sample)
}

// MinICountFloorPctOf is the least icount floor of one benchmark's figure
// from samples this long: the sample length's, or the benchmark's own
// where it needs more (a workload of several processes,
// benchmark.ICountFloorPct). Verdicts, bisects and the history's change
// points all take it from here.
func MinICountFloorPctOf(sample time.Duration, name string) float64 {
	return max(MinICountFloorPctFor(sample), benchmark.ICountFloorPct(name))
}

// ICountFloor is the smallest change, in percent, an icount comparison
// resolves: three times the largest relative spread or change of any
// control between the two sides, and three times the relative spread of any
// followed figure (short or cold samples repeat less well than 0.01 %), at
// least min (MinICountFloorPct for this agent's boots). Under icount boots repeat so closely that a U
// test alone would call a 0.02 % ordering significant; the controls, which
// no series should move, say how far non-series effects reach.
//
// lab run's icount tables pass their controls' summaries; lab bisect passes
// the ends' controls and the followed figure at each end.
func ICountFloor(min float64, controls []variant.Pair[stats.Summary], followed ...stats.Summary) float64 {
	floor := min
	for _, s := range followed {
		floor = math.Max(floor, 3*100*s.CV())
	}
	for _, c := range controls {
		b, p := c.Baseline, c.Patched
		if b.Mean == 0 || p.N == 0 {
			continue
		}
		change := (p.Mean/b.Mean - 1) * 100
		floor = math.Max(floor, 3*math.Max(math.Abs(change), 100*math.Max(b.CV(), p.CV())))
	}
	return floor
}

// agentControls are the summaries of the agent's control rows. A tool's
// figures are rounded (bench prints M/s to three decimals) and would set
// the floor by their rounding, not by the host.
func agentControls(rows []Row) []variant.Pair[stats.Summary] {
	var out []variant.Pair[stats.Summary]
	for _, r := range rows {
		if r.Control && r.Agent() {
			out = append(out, variant.Pair[stats.Summary]{Baseline: r.Variants.Baseline.Summary, Patched: r.Variants.Patched.Summary})
		}
	}
	return out
}

// DriftFloors is, per metric, how far the wall clock's non-series effects
// reach: a control that moved significantly between the variants (host
// drift moves every rate alike) sets its metric's floor at the far end of
// its 95 % interval. Only the agent's controls count.
func DriftFloors(rows []Row) map[string]float64 {
	floors := map[string]float64{}
	for _, r := range rows {
		if r.Control && r.Agent() && r.Change.Verdict != stats.Same {
			floors[r.Metric] = math.Max(floors[r.Metric], math.Max(math.Abs(r.Change.Lo), math.Abs(r.Change.Hi)))
		}
	}
	return floors
}

// ApplyDriftFloor makes a significant change of a non-control row that
// does not go beyond its metric's drift floor "~", saying why.
func ApplyDriftFloor(r *Row, floor float64) {
	if r.Control || floor == 0 || r.Change.Verdict == stats.Same || math.Abs(r.Change.Pct) > floor {
		return
	}
	r.Change.Verdict = stats.Same
	r.Change.FloorPct = floor
	r.Change.Why = fmt.Sprintf("p=%.3f, but |%.1f %%| is within the %.1f %% a control of this metric moved (drift)", r.Change.P, r.Change.Pct, floor)
}

// ICountEndsDiffer says whether two icount ends differ enough to bisect
// between them: p cannot reach 0.05 with 2 boots a side, so the floor
// decides, with a margin of two floors so that a step can be told from
// both ends.
func ICountEndsDiffer(changePct, floorPct float64) bool {
	return math.Abs(changePct) > 2*floorPct
}

// EndShare is the part of the ends' change within which an icount step is
// judged like an end: a step a few hundredths of a percent of an 18 %
// change away from the bad end is the bad end, not a step that is
// "neither"; one 10-90 % of the way is neither.
const EndShare = 0.1

// LikeEndPct is how near an end, in percent, an icount step must be to be
// judged like it: the floor, or EndShare of the ends' change if larger.
func LikeEndPct(floorPct, changePct float64) float64 {
	return math.Max(floorPct, EndShare*math.Abs(changePct))
}
