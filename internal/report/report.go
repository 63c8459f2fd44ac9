// Package report turns a run's results into the baseline-against-patched
// table. It only shows figures the run measured.
package report

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/jedib0t/go-pretty/v6/text"

	"lab/initramfs/protocol"
	"lab/internal/results"
	"lab/internal/spec"
	"lab/internal/stats"
	"lab/internal/vm"
)

// Shape identifies one table: everything that must be equal between the
// compared boots.
type Shape struct {
	Arch     string `json:"arch"`
	CPUs     int    `json:"cpus"`
	Topology string `json:"topology"` // "16 vCPUs (sockets=4,...), 4 NUMA nodes"
	Accel    string `json:"accel"`
	Clock    string `json:"clock"`
	Caveats  string `json:"caveats,omitempty"` // "; "-joined: oversubscription, emulated NUMA
}

// Metrics of a row.
const (
	MetricRate    = "rate"    // hits/s, one observation per boot
	MetricScaling = "scaling" // rate(P)/rate(1) within each boot
	// MetricVsFree is the probed rate over the same loop's probe-free rate,
	// measured just before in the same boot: the probe's cost, with the
	// boot's speed divided out.
	MetricVsFree = "vs-probe-free"
)

// Row is one benchmark at one producer count.
type Row struct {
	Benchmark string             `json:"benchmark"`
	Producers int                `json:"producers"`
	Metric    string             `json:"metric"`
	Control   bool               `json:"control"` // a control benchmark: no series should move it
	Variants  map[string]Summary `json:"variants"`
	Change    stats.Change       `json:"change"`
}

// Name is the row's name in reports: "uprobe-nop" or "uprobe-nop p2/p1".
func (r Row) Name() string {
	switch r.Metric {
	case MetricScaling:
		return fmt.Sprintf("%s p%d/p1", r.Benchmark, r.Producers)
	case MetricVsFree:
		return fmt.Sprintf("%s p%d ÷ probe-free", r.Benchmark, r.Producers)
	}
	return r.Benchmark
}

// Summary is a variant's figures: one observation per boot (the boot's mean
// rate; samples inside a boot are correlated, boots are not).
type Summary struct {
	PerBoot []float64     `json:"per_boot"` // hits/s, or ratios for scaling rows
	Mean    float64       `json:"mean"`
	Stddev  float64       `json:"stddev"` // sample standard deviation across boots
	Stats   stats.Summary `json:"stats"`  // n, median and its 95 % CI
	Missing []string      `json:"missing,omitempty"`
}

// Table is the comparison for one shape.
type Table struct {
	Shape Shape          `json:"shape"`
	Boots map[string]int `json:"boots"` // boots that delivered results, by variant
	Rows  []Row          `json:"rows"`
	// Scaling rows compare within-boot ratios: rate(P)/rate(1), and the
	// probed rate over the probe-free one.
	Scaling []Row `json:"scaling,omitempty"`
	// FloorPct is the smallest change this table can resolve (icount: from
	// the controls' spread and change); 0 under the wall clock.
	FloorPct float64 `json:"floor_pct,omitempty"`
	// Drift warns when a control moved between the variants (wall clock).
	Drift []string `json:"drift,omitempty"`
	// DriftFloor is, per metric, how far a significantly moved control
	// says non-series effects reach (wall clock): smaller changes are ~.
	DriftFloor map[string]float64 `json:"drift_floor_pct,omitempty"`
}

// Tables groups a run's boots by shape and summarises them.
func Tables(r *results.Run) []Table { return tables(r, true) }

// tables does Tables; driftFloor applies the controls' movement as a floor
// (not when comparing two hosts, where the controls are meant to move).
func tables(r *results.Run, driftFloor bool) []Table {
	byShape := map[Shape]*Table{}
	var order []Shape
	for _, b := range r.Boots {
		s := shapeOf(b)
		t, ok := byShape[s]
		if !ok {
			t = &Table{Shape: s, Boots: map[string]int{}}
			byShape[s] = t
			order = append(order, s)
		}
		if !b.OK() {
			continue
		}
		t.Boots[b.Variant]++
		for _, res := range b.Results {
			row := t.row(res.Benchmark, res.Producers)
			sum := row.Variants[b.Variant]
			if res.Error != "" || res.Unsupported != "" || len(res.Samples) == 0 {
				why := res.Error + res.Unsupported
				if why == "" {
					why = "no samples"
				}
				sum.Missing = append(sum.Missing, fmt.Sprintf("boot %d: %s", b.Index, why))
			} else {
				sum.PerBoot = append(sum.PerBoot, protocol.Rate(res.Samples))
			}
			row.Variants[b.Variant] = sum
		}
	}
	var out []Table
	for _, s := range order {
		t := byShape[s]
		t.Scaling = scalingRows(r, s)
		// Benchmarks in the lab's order (the order boots ran them), producer
		// counts ascending within each.
		first := map[string]int{}
		for i, r := range t.Rows {
			if _, ok := first[r.Benchmark]; !ok {
				first[r.Benchmark] = i
			}
		}
		sort.SliceStable(t.Rows, func(i, j int) bool {
			if t.Rows[i].Benchmark != t.Rows[j].Benchmark {
				return first[t.Rows[i].Benchmark] < first[t.Rows[j].Benchmark]
			}
			return t.Rows[i].Producers < t.Rows[j].Producers
		})
		t.finish(driftFloor)
		out = append(out, *t)
	}
	return out
}

// finish computes every summary and change: controls first, since under
// icount their spread sets the floor the other rows are judged against.
func (t *Table) finish(driftFloor bool) {
	for _, rows := range [][]Row{t.Rows, t.Scaling} {
		for i := range rows {
			rows[i].Control = slices.Contains(spec.ControlBenchmarks, rows[i].Benchmark)
			for v, sum := range rows[i].Variants {
				sum.Stats = stats.Summarize(sum.PerBoot)
				sum.Mean, sum.Stddev = sum.Stats.Mean, sum.Stats.Stddev
				rows[i].Variants[v] = sum
			}
		}
	}
	if t.Shape.Clock == vm.ClockICount {
		t.FloorPct = icountFloor(t.Rows)
	}
	for _, rows := range [][]Row{t.Rows, t.Scaling} {
		for i := range rows {
			r := &rows[i]
			r.Change = stats.Compare(r.Variants["baseline"].PerBoot, r.Variants["patched"].PerBoot, t.FloorPct)
		}
	}
	if t.Shape.Clock == vm.ClockICount {
		return
	}
	// Wall clock: a control that moved significantly between the variants
	// shows how far host drift (or anything else that is not the series)
	// can move a row of the same metric. Other rows must go beyond the far
	// end of that control's 95 % interval to count.
	t.DriftFloor = map[string]float64{}
	for _, rows := range [][]Row{t.Rows, t.Scaling} {
		for _, r := range rows {
			if r.Control && r.Change.Verdict != stats.Same {
				t.DriftFloor[r.Metric] = math.Max(t.DriftFloor[r.Metric], math.Max(math.Abs(r.Change.Lo), math.Abs(r.Change.Hi)))
			}
		}
	}
	for _, rows := range [][]Row{t.Rows, t.Scaling} {
		for i := range rows {
			r := &rows[i]
			floor := t.DriftFloor[r.Metric]
			if !driftFloor || r.Control || floor == 0 || r.Change.Verdict == stats.Same || math.Abs(r.Change.Pct) > floor {
				continue
			}
			r.Change.Verdict = stats.Same
			r.Change.FloorPct = floor
			r.Change.Why = fmt.Sprintf("p=%.3f, but |%.1f %%| is within the %.1f %% a control of this metric moved (drift)", r.Change.P, r.Change.Pct, floor)
		}
	}
	for _, rows := range [][]Row{t.Rows, t.Scaling} {
		for _, r := range rows {
			// Host drift moves every rate alike; a control that moved by
			// more than a few percent says how much of any change may be it.
			if r.Control && len(r.Variants["baseline"].PerBoot) > 0 && len(r.Variants["patched"].PerBoot) > 0 && math.Abs(r.Change.Pct) >= DriftPct {
				t.Drift = append(t.Drift, fmt.Sprintf("control %s moved %+.1f %% [%+.1f, %+.1f] (p=%.3f%s)",
					rowLabel(r), r.Change.Pct, r.Change.Lo, r.Change.Hi, r.Change.P, sigText(r.Change)))
			}
		}
	}
}

func rowLabel(r Row) string {
	if r.Metric == MetricRate {
		return fmt.Sprintf("%s p=%d", r.Benchmark, r.Producers)
	}
	return r.Name()
}

func sigText(c stats.Change) string {
	if c.Verdict == stats.Same {
		return ", not significant"
	}
	return ", significant: rows of this metric must move more than its interval's far end to count"
}

// DriftPct is how far a control may move under the wall clock before the
// table warns of host drift.
const DriftPct = 3.0

// icountFloor is the smallest change an icount table resolves: three times
// the largest relative spread or change of any control, at least 0.01 %.
// Under icount boots repeat to ~0.01 %, so a U test alone would call a
// 0.02 % ordering significant.
func icountFloor(rows []Row) float64 {
	floor := 0.01
	for _, r := range rows {
		if !r.Control {
			continue
		}
		// Summaries are already computed (finish); the change is not yet.
		b, p := r.Variants["baseline"].Stats, r.Variants["patched"].Stats
		if b.Mean == 0 || p.N == 0 {
			continue
		}
		change := (p.Mean/b.Mean - 1) * 100
		floor = math.Max(floor, 3*math.Max(math.Abs(change), 100*math.Max(b.CV(), p.CV())))
	}
	return floor
}

// scalingRows gathers each boot's within-boot ratios (results.Boot.Ratios)
// for one shape.
func scalingRows(r *results.Run, s Shape) []Row {
	var rows []Row
	find := func(bench string, p int, metric string) *Row {
		for i := range rows {
			if rows[i].Benchmark == bench && rows[i].Producers == p && rows[i].Metric == metric {
				return &rows[i]
			}
		}
		rows = append(rows, Row{Benchmark: bench, Producers: p, Metric: metric, Variants: map[string]Summary{}})
		return &rows[len(rows)-1]
	}
	add := func(row *Row, variant string, v float64) {
		sum := row.Variants[variant]
		sum.PerBoot = append(sum.PerBoot, v)
		row.Variants[variant] = sum
	}
	for _, b := range r.Boots {
		if !b.OK() || shapeOf(b) != s {
			continue
		}
		// In the boot's own benchmark order.
		for _, res := range b.Results {
			key := fmt.Sprintf("%s p%d/p1", res.Benchmark, res.Producers)
			if v, ok := b.Ratios[key]; ok {
				add(find(res.Benchmark, res.Producers, MetricScaling), b.Variant, v)
			}
			if res.ProbeFree != nil && res.ProbeFree.Rate > 0 && res.Error == "" && res.Unsupported == "" {
				if rate := protocol.Rate(res.Samples); rate > 0 {
					add(find(res.Benchmark, res.Producers, MetricVsFree), b.Variant, rate/res.ProbeFree.Rate)
				}
			}
		}
	}
	return rows
}

func shapeOf(b results.Boot) Shape {
	s := Shape{Arch: b.Arch, CPUs: b.CPUs, Topology: fmt.Sprintf("%d vCPU%s", b.CPUs, plural(b.CPUs)),
		Accel: b.Accel.Name, Clock: b.Clock, Caveats: strings.Join(b.Caveats, "; ")}
	if b.Shape != nil {
		s.Topology = b.Shape.String()
	}
	return s
}

func (t *Table) row(bench string, p int) *Row {
	for i := range t.Rows {
		if t.Rows[i].Benchmark == bench && t.Rows[i].Producers == p {
			return &t.Rows[i]
		}
	}
	t.Rows = append(t.Rows, Row{Benchmark: bench, Producers: p, Metric: MetricRate, Variants: map[string]Summary{}})
	return &t.Rows[len(t.Rows)-1]
}

// Header is the line above a table: what ran, and what its figures can show.
func Header(lab string, t Table) string {
	parts := []string{lab, t.Shape.Arch, t.Shape.Topology}
	switch {
	case strings.Contains(t.Shape.Accel, " vs "):
		parts = append(parts, "accelerators "+strings.ToUpper(t.Shape.Accel))
	case t.Shape.Accel == vm.KVM:
		parts = append(parts, "KVM")
	case t.Shape.Clock == vm.ClockICount:
		parts = append(parts, "TCG icount (M/s per 10^9 guest instructions: path length, no cache or contention effects)")
	default:
		parts = append(parts, "TCG (emulated: absolute figures are not hardware figures)")
	}
	parts = append(parts, t.Shape.Clock+" clock")
	if t.Shape.Caveats != "" {
		parts = append(parts, strings.Split(t.Shape.Caveats, "; ")...)
	}
	b, p := t.Boots["baseline"], t.Boots["patched"]
	if b == p {
		parts = append(parts, fmt.Sprintf("%d boot%s each", b, plural(b)))
	} else {
		parts = append(parts, fmt.Sprintf("%d baseline + %d patched boots", b, p))
	}
	return strings.Join(parts, " · ")
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// Render draws the tables as text, without colour.
func Render(lab string, tables []Table) string { return Text(lab, tables, false) }

// Text draws the tables for a terminal; color marks significant changes
// (only when writing to a terminal).
func Text(lab string, tables []Table, color bool) string {
	var b strings.Builder
	for i, t := range tables {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(Header(lab, t) + "\n")
		tw := table.NewWriter()
		tw.SetStyle(plainStyle())
		tw.AppendHeader(table.Row{"benchmark", "producers", "baseline M/s", "patched M/s", "Δ [95% CI]", "p"})
		tw.SetColumnConfigs([]table.ColumnConfig{
			{Number: 2, Align: text.AlignRight},
			{Number: 3, Align: text.AlignRight},
			{Number: 4, Align: text.AlignRight},
			{Number: 5, Align: text.AlignRight},
			{Number: 6, Align: text.AlignRight},
		})
		// icount repeats to about 0.01 %: show enough digits to see it.
		digits := 3
		if t.Shape.Clock == vm.ClockICount {
			digits = 5
		}
		var notes []string
		for _, r := range t.Rows {
			base, pat := r.Variants["baseline"], r.Variants["patched"]
			tw.AppendRow(table.Row{r.Benchmark, r.Producers, cell(base, r.Producers, digits), cell(pat, r.Producers, digits),
				paint(deltaCI(r, digits), r.Change, color), pCell(r.Change)})
			for _, v := range []string{"baseline", "patched"} {
				for _, m := range r.Variants[v].Missing {
					notes = append(notes, fmt.Sprintf("%s p=%d %s: %s", r.Benchmark, r.Producers, v, m))
				}
			}
		}
		if len(t.Scaling) > 0 {
			tw.AppendSeparator()
			for _, r := range t.Scaling {
				base, pat := r.Variants["baseline"], r.Variants["patched"]
				name, prod := shortRow(r)
				tw.AppendRow(table.Row{name, prod, ratioCell(base), ratioCell(pat),
					paint(deltaCI(r, digits), r.Change, color), pCell(r.Change)})
			}
		}
		b.WriteString(tw.Render() + "\n")
		for _, n := range Notes(t) {
			b.WriteString("  " + n + "\n")
		}
		for _, n := range notes {
			b.WriteString("  note: " + n + "\n")
		}
	}
	return b.String()
}

// Notes explain how to read a table: significance, floor, drift.
func Notes(t Table) []string {
	var out []string
	minN := stats.MinN()
	if t.Boots["baseline"] < minN || t.Boots["patched"] < minN {
		out = append(out, fmt.Sprintf("note: %d+%d boots cannot show any change as significant (p < %.2f needs %d boots per variant): every row is ~",
			t.Boots["baseline"], t.Boots["patched"], stats.Alpha, minN))
	} else {
		out = append(out, fmt.Sprintf("p: two-sided Mann-Whitney U over boots (one observation per boot); ~ = not significant at %.2f", stats.Alpha))
	}
	if t.FloorPct > 0 {
		out = append(out, fmt.Sprintf("icount: changes within %.3f %% (3× the controls' spread and change) count as ~, whatever p says", t.FloorPct))
	}
	for _, d := range t.Drift {
		out = append(out, "drift: "+d)
	}
	return out
}

func deltaCI(r Row, digits int) string {
	base, pat := r.Variants["baseline"], r.Variants["patched"]
	if len(base.PerBoot) == 0 || len(pat.PerBoot) == 0 || base.Mean == 0 {
		return "–"
	}
	d := digits - 2
	if len(base.PerBoot) < 2 && len(pat.PerBoot) < 2 {
		return fmt.Sprintf("%+.*f %%", d, r.Change.Pct)
	}
	return fmt.Sprintf("%+.*f %% [%+.*f, %+.*f]", d, r.Change.Pct, d, r.Change.Lo, d, r.Change.Hi)
}

func pCell(c stats.Change) string {
	if c.Why == "no observations" {
		return ""
	}
	if c.Verdict == stats.Same {
		return fmt.Sprintf("%.3f ~", c.P)
	}
	return fmt.Sprintf("%.3f  ", c.P)
}

func paint(s string, c stats.Change, color bool) string {
	if !color {
		return s
	}
	switch c.Verdict {
	case stats.Faster:
		return text.FgGreen.Sprint(s)
	case stats.Slower:
		return text.FgRed.Sprint(s)
	}
	return s
}

func ratioCell(s Summary) string {
	if len(s.PerBoot) == 0 {
		return "–"
	}
	d := decimals(s.Mean, 3)
	if len(s.PerBoot) < 2 {
		return fmt.Sprintf("%.*f", d, s.Mean)
	}
	return fmt.Sprintf("%.*f ± %.*f", d, s.Mean, d, s.Stddev)
}

func cell(s Summary, producers, digits int) string {
	if len(s.PerBoot) == 0 {
		return "–"
	}
	m, sd := s.Mean/1e6, s.Stddev/1e6
	if len(s.PerBoot) < 2 {
		// One boot has no spread to show; don't print a fake ± 0.
		return fmt.Sprintf("%s (%s/prod)", sig(m, digits), sig(m/float64(producers), digits))
	}
	// The spread is printed to the mean's precision, so that columns align.
	sdText := fmt.Sprintf("%.*f", digits, sd)
	if m < 0.01 {
		sdText = fmt.Sprintf("%.2g", sd)
	}
	return fmt.Sprintf("%s ± %s (%s/prod)", sig(m, digits), sdText, sig(m/float64(producers), digits))
}

// sig prints digits decimals, or that many significant digits for small values.
func sig(v float64, digits int) string {
	if v != 0 && math.Abs(v) < 0.01 {
		return fmt.Sprintf("%.*g", digits, v)
	}
	return fmt.Sprintf("%.*f", digits, v)
}

func plainStyle() table.Style {
	s := table.StyleDefault
	s.Options.DrawBorder = false
	s.Options.SeparateColumns = false
	s.Options.SeparateHeader = false
	s.Options.SeparateRows = false
	s.Format.Header = text.FormatDefault
	return s
}
