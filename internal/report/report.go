// Package report lays out what package verdict judged: the same cells for
// the terminal, Markdown, 80 columns, CSV, JSON, one HTML page with charts,
// JUnit and Go benchmark files. It shows only figures a run measured and
// judges nothing itself.
package report

import (
	"fmt"
	"math"
	"strings"

	"lab/internal/benchmark"
	"lab/internal/results"
	"lab/internal/stats"
	"lab/internal/variant"
	"lab/internal/verdict"
)

// Header is the line above a table: what ran, and what its figures can show.
func Header(lab string, t verdict.Table) string {
	parts := []string{lab, t.Shape.Arch, t.Shape.Topology}
	s := t.Shape
	switch {
	case s.Accel.Baseline != s.Accel.Patched:
		parts = append(parts, fmt.Sprintf("accelerators %s (baseline column) vs %s (patched column)",
			strings.ToUpper(s.Accel.Baseline), strings.ToUpper(s.Accel.Patched)))
	case s.Accel.Baseline == results.KVM:
		parts = append(parts, "KVM")
	case s.ICount():
		parts = append(parts, "TCG icount (M/s per 10^9 guest instructions: path length, no cache or contention effects)")
	default:
		parts = append(parts, "TCG (emulated: absolute figures are not hardware figures)")
	}
	if s.Clock.Baseline != s.Clock.Patched {
		parts = append(parts, fmt.Sprintf("%s clock vs %s clock", s.Clock.Baseline, s.Clock.Patched))
	} else {
		parts = append(parts, s.Clock.Baseline+" clock")
	}
	if s.Caveats != "" {
		parts = append(parts, strings.Split(s.Caveats, "; ")...)
	}
	b, p := t.Boots.Baseline, t.Boots.Patched
	if b == p {
		each := fmt.Sprintf("%d boots each", b)
		if b == 1 {
			each = "1 boot each"
		}
		parts = append(parts, each)
	} else {
		parts = append(parts, fmt.Sprintf("%d baseline + %d patched boots", b, p))
	}
	return strings.Join(parts, " · ")
}

// exactNote says how an icount table is judged: by each change's size
// against the floor, the figures being exact.
func exactNote(t verdict.Table) string {
	seeds := min(t.Boots.Baseline, t.Boots.Patched)
	spread := 0.0
	for _, r := range t.AllRows() {
		if r.Agent() && !r.Change.NoData {
			spread = math.Max(spread, r.Change.SpreadPct)
		}
	}
	boots := "1 boot per kernel"
	switch {
	case seeds > 1 && spread == 0:
		boots = fmt.Sprintf("%d boots per kernel, each its own seed, agreeing to the last digit", seeds)
	case seeds > 1:
		boots = fmt.Sprintf("%d boots per kernel, each its own seed, agreeing within %s %% at most", seeds, stats.SpreadText(spread))
	}
	return fmt.Sprintf("exact: icount figures are path lengths, the same in every boot of one image and seed (%s); a change counts when it is larger than the floor, %.3f %% (at least %.2f %%, 3× the controls' spread and change, and the seeds' spread), with no p-value; ~ = within it",
		boots, t.FloorPct, t.MinFloorPct())
}

// Notes explain how to read a table: significance, floor, drift, failed
// boots.
func Notes(t verdict.Table) []string {
	var out []string
	minN := stats.MinN()
	switch {
	case t.Shape.ICount():
		out = append(out, exactNote(t))
	case t.Paired:
		// Said below, with the hosts.
	case t.Boots.Baseline < minN || t.Boots.Patched < minN:
		out = append(out, fmt.Sprintf("note: %d+%d boots cannot show any change as significant (p < %.2f needs %d boots per variant): every row is ~",
			t.Boots.Baseline, t.Boots.Patched, stats.Alpha, minN))
	default:
		out = append(out, fmt.Sprintf("p: two-sided Mann-Whitney U over boots (one observation per boot); ~ = not significant at %.2f", stats.Alpha))
	}
	for _, tool := range benchmark.Tools() {
		res := 0.0
		for _, r := range t.Rows {
			if r.Tool == tool.Name {
				res = math.Max(res, t.ResolutionPct(r))
			}
		}
		if res > 0 {
			out = append(out, fmt.Sprintf("%s rounds its rates to %g M/s: its rows, and agent ÷ %[1]s, count changes within one step (up to %.3[3]f %%) as ~",
				tool.Label, tool.Resolution/1e6, res))
		}
	}
	for _, d := range t.Drift {
		out = append(out, "drift: "+d)
	}
	if t.Paired {
		out = append(out, fmt.Sprintf("paired: boots from %d hosts, so each change is the geometric mean of baseline/patched pairs booted back to back on one host, with a Wilcoxon signed-rank p (%d pairs at least for p < %.2f)",
			len(t.Hosts), stats.MinPairs(), stats.Alpha))
		for _, h := range t.PerHost {
			out = append(out, "host "+h)
		}
	}
	for _, r := range t.Scaling {
		if b, ok := benchmark.Lookup(r.Benchmark); ok && r.Metric == verdict.MetricVsBench && b.UpstreamDiffers != "" {
			out = append(out, fmt.Sprintf("%s: not the same benchmark: %s", r.Label(), b.UpstreamDiffers))
		}
	}
	for _, f := range t.Failed {
		out = append(out, fmt.Sprintf("failed: boot %d (%s): %s: %s", f.Index, f.Variant, f.Kind, f.Message))
	}
	for _, r := range t.AllRows() {
		for _, v := range variant.Both {
			for _, m := range r.Variants.Get(v).Missing {
				out = append(out, fmt.Sprintf("note: %s %s: %s", r.Label(), v, m))
			}
		}
	}
	return out
}
