// Package verdict judges boots: it aggregates them once into tables (one
// observation per boot, summaries per variant, changes) and owns every
// judging rule — the U test and paired test (via stats), the icount floor,
// the drift floor, a tool's printed resolution, pairing across hosts, claims
// and the CI gates' regressions. lab run, report, merge and bisect all ask
// it; package report only lays out its cells.
package verdict

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"lab/initramfs/protocol"
	"lab/internal/benchmark"
	"lab/internal/results"
	"lab/internal/stats"
	"lab/internal/variant"
)

// Shape identifies one table: everything that must be equal between the
// compared boots. Accel and Clock are per side: the same in one run, and
// possibly different in a comparison of two runs (KVM against TCG).
type Shape struct {
	Arch     string               `json:"arch"`
	CPUs     int                  `json:"cpus"`
	Topology string               `json:"topology"` // "16 vCPUs (sockets=4,...), 4 NUMA nodes"
	Accel    variant.Pair[string] `json:"accel"`
	Clock    variant.Pair[string] `json:"clock"`
	Caveats  string               `json:"caveats,omitempty"` // "; "-joined: oversubscription, emulated NUMA
}

// ICount reports whether both sides ran on QEMU's instruction clock.
func (s Shape) ICount() bool {
	return s.Clock.Baseline == results.ClockICount && s.Clock.Patched == results.ClockICount
}

// TCG reports whether either side ran emulated.
func (s Shape) TCG() bool { return s.Accel.Baseline == results.TCG || s.Accel.Patched == results.TCG }

// Metrics of a row.
const (
	MetricRate    = "rate"    // hits/s, one observation per boot
	MetricScaling = "scaling" // rate(P)/rate(1) within each boot
	// MetricVsFree is the probed rate over the same loop's probe-free rate,
	// measured just before in the same boot: the probe's cost, with the
	// boot's speed divided out.
	MetricVsFree = "vs-probe-free"
	// MetricVsBench is the agent's rate over the kernel's bench's rate for
	// the same benchmark and producers, measured right after it in the
	// same boot: do the two measure the same thing?
	MetricVsBench = "agent-vs-bench"
)

// ToolAgent is the Tool of the agent's own rows in a table that also has a
// guest tool's rows.
const ToolAgent = "agent"

// Row is one benchmark at one producer count.
type Row struct {
	Benchmark string `json:"benchmark"`
	// Tool is the guest tool that measured the row (benchmark.Tools), or
	// ToolAgent when another tool measured the same benchmark; "" when
	// the agent alone measured the table.
	Tool      string                `json:"tool,omitempty"`
	Producers int                   `json:"producers"`
	Metric    string                `json:"metric"`
	Control   bool                  `json:"control"` // a control benchmark: no series should move it
	Variants  variant.Pair[Summary] `json:"variants"`
	Change    stats.Change          `json:"change"`
}

// Bench is the row's benchmark with the tool that measured it:
// "uprobe-nop", "uprobe-nop (bench)", "uprobe-nop (agent)".
func (r Row) Bench() string {
	switch r.Tool {
	case "":
		return r.Benchmark
	case ToolAgent:
		return r.Benchmark + " (agent)"
	}
	return r.Benchmark + " (" + benchmark.ToolLabel(r.Tool) + ")"
}

// Agent reports whether the agent measured the row.
func (r Row) Agent() bool { return r.Tool == "" || r.Tool == ToolAgent }

// Name is the row's name in reports: "uprobe-nop", "uprobe-nop p2/p1".
func (r Row) Name() string {
	switch r.Metric {
	case MetricScaling:
		return fmt.Sprintf("%s p%d/p1", r.Bench(), r.Producers)
	case MetricVsFree:
		return fmt.Sprintf("%s p%d ÷ probe-free", r.Bench(), r.Producers)
	case MetricVsBench:
		return fmt.Sprintf("%s p%d agent ÷ bench", r.Benchmark, r.Producers)
	}
	return r.Bench()
}

// Label names the row with its producer count: "uprobe-nop p=1".
func (r Row) Label() string {
	if r.Metric == MetricRate {
		return fmt.Sprintf("%s p=%d", r.Bench(), r.Producers)
	}
	return r.Name()
}

// Summary is a variant's figures: one observation per boot (the boot's mean
// rate; samples inside a boot are correlated, boots are not), in boot order.
type Summary struct {
	stats.Summary
	Missing []string `json:"missing,omitempty"` // boots that ran but gave no figure, and why
	// Pairs names, for each value, the pair its boot belongs to (host and
	// round): the baseline and patched boots of a pair ran back to back.
	Pairs []string `json:"-"`
}

// FailedBoot is a boot that delivered nothing, with the kind of failure.
type FailedBoot struct {
	Index   int             `json:"index"`
	Variant variant.Variant `json:"variant"`
	Kind    string          `json:"kind"`
	Message string          `json:"message"`
}

// Table is the comparison for one shape.
type Table struct {
	Shape  Shape             `json:"shape"`
	Boots  variant.Pair[int] `json:"boots"` // boots that delivered results
	Failed []FailedBoot      `json:"failed,omitempty"`
	Rows   []Row             `json:"rows"`
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
	// Hosts the boots ran on; with more than one, changes are judged on
	// pairs (Paired): baseline and patched booted back to back on one host.
	Hosts  []string `json:"hosts,omitempty"`
	Paired bool     `json:"paired,omitempty"`
	// PerHost is the spread of the headline row's pair ratios by host.
	PerHost []string `json:"per_host,omitempty"`
	// Starved lists wall-clock results whose producers' vCPU threads did
	// not each get most of a host CPU: the producers then took turns
	// rather than running at once, and contention did not build.
	Starved []string `json:"starved,omitempty"`
	// NoWarmup counts results measured without a warm-up: their first
	// second carries one-off costs (see caveats).
	NoWarmup int `json:"no_warmup,omitempty"`
	// GoProducers: some boot's agent measured with goroutine producers
	// (it named no protocol.Method), whose icount figures need the wider
	// floor.
	GoProducers bool `json:"go_producers,omitempty"`
	// Sample is the shortest sample of the boots' agents when shorter
	// than a second (protocol.MethodSample); it widens the icount floor.
	Sample time.Duration `json:"sample_ns,omitempty"`
}

// MinVCPUShare is the share of a host CPU below which a producer's vCPU
// counts as starved. On a quiet 2-core host the producer vCPUs of a 2-vCPU
// guest got 0.84 or more in 95 of 96 results; a build beside it takes about
// half.
const MinVCPUShare = 0.75

// starved says, for a multi-producer wall-clock result, which producers'
// vCPUs got less than MinVCPUShare of a host CPU ("" when none did, or
// when the host did not record it).
func starved(b results.Boot, res protocol.Result) string {
	if b.Clock != results.ClockWall || res.Producers < 2 || len(res.VCPUHostShare) < res.Producers {
		return ""
	}
	low := false
	var shares []string
	for _, v := range res.VCPUHostShare[:res.Producers] {
		low = low || v < MinVCPUShare
		shares = append(shares, fmt.Sprintf("%.2f", v))
	}
	if !low {
		return ""
	}
	return fmt.Sprintf("boot %d %s p=%d: %s", b.Index, res.Benchmark, res.Producers, strings.Join(shares, ", "))
}

// Name is the table's shape in one short line, for claims and headlines:
// "x86_64 · 1 vCPU · TCG · icount".
func (t Table) Name() string {
	s := t.Shape
	accel, clock := strings.ToUpper(s.Accel.Baseline), s.Clock.Baseline
	if s.Accel.Baseline != s.Accel.Patched {
		accel += " vs " + strings.ToUpper(s.Accel.Patched)
	}
	if s.Clock.Baseline != s.Clock.Patched {
		clock += " vs " + s.Clock.Patched
	}
	return fmt.Sprintf("%s · %s · %s · %s", s.Arch, s.Topology, accel, clock)
}

// Relabel keeps the boots of c's two kernels, as baseline (Against) and
// patched (Patched).
func Relabel(boots []results.Boot, c variant.Comparison) []results.Boot {
	var out []results.Boot
	for _, b := range boots {
		switch b.Variant {
		case c.Against:
			b.Variant = variant.Baseline
		case c.Patched:
			b.Variant = variant.Patched
		default:
			continue
		}
		out = append(out, b)
	}
	return out
}

// AllRows is the table's rows, rates first, then within-boot ratios.
func (t Table) AllRows() []Row { return append(append([]Row(nil), t.Rows...), t.Scaling...) }

// Tables groups a run's boots by shape and summarises them.
func Tables(r *results.Run) []Table {
	return tables(r.Boots, func(b results.Boot) shapeKey { return fullKey(b) }, true)
}

// Across groups boots of two runs set against each other (lab compare) by
// arch and topology only, so that a comparison meets across accelerators
// and clocks. The drift floor does not apply: between two runs the
// controls are meant to move (another host, KVM against TCG).
func Across(boots []results.Boot) []Table { return tables(boots, topoKey, false) }

// Topology is the boot's guest shape as tables name it: "2 vCPUs", or the
// verified shape's description.
func Topology(b results.Boot) string { return topoKey(b).topology }

// shapeKey groups boots into tables.
type shapeKey struct {
	arch, topology, accel, clock, caveats string
	cpus                                  int
}

func fullKey(b results.Boot) shapeKey {
	k := topoKey(b)
	k.accel, k.clock, k.caveats = b.Accel.Name, b.Clock, strings.Join(b.Caveats, "; ")
	return k
}

// topoKey is the arch and topology only: a comparison of two runs meets
// across accelerators and clocks.
func topoKey(b results.Boot) shapeKey {
	k := shapeKey{arch: b.Arch, cpus: b.CPUs, topology: fmt.Sprintf("%d vCPU%s", b.CPUs, plural(b.CPUs))}
	if b.Shape != nil {
		k.topology = b.Shape.String()
	}
	return k
}

// tables does Tables; driftFloor applies the controls' movement as a floor
// (not when comparing two hosts, where the controls are meant to move).
func tables(boots []results.Boot, key func(results.Boot) shapeKey, driftFloor bool) []Table {
	byKey := map[shapeKey]*Table{}
	var order []shapeKey
	for _, b := range boots {
		k := key(b)
		t, ok := byKey[k]
		if !ok {
			t = &Table{Shape: Shape{Arch: b.Arch, CPUs: b.CPUs, Topology: k.topology, Caveats: strings.Join(b.Caveats, "; ")}}
			byKey[k] = t
			order = append(order, k)
		}
		t.Shape.Accel.Set(b.Variant, b.Accel.Name)
		t.Shape.Clock.Set(b.Variant, b.Clock)
		if !b.OK() {
			t.Failed = append(t.Failed, FailedBoot{Index: b.Index, Variant: b.Variant, Kind: b.Failure.Kind, Message: firstLine(b.Failure.Message)})
			continue
		}
		*t.Boots.Ptr(b.Variant)++
		if b.Method() == "" {
			t.GoProducers = true
		}
		if s := protocol.MethodSample(b.Method()); s > 0 && s < time.Second && (t.Sample == 0 || s < t.Sample) {
			t.Sample = s
		}
		host := hostID(b)
		if !slices.Contains(t.Hosts, host) {
			t.Hosts = append(t.Hosts, host)
		}
		pair := fmt.Sprintf("%s round %d", host, b.Round)
		for _, res := range b.Results {
			if why := starved(b, res); why != "" && res.Tool == "" {
				t.Starved = append(t.Starved, why)
			}
			row := t.row(res.Benchmark, res.Tool, res.Producers)
			sum := row.Variants.Ptr(b.Variant)
			if !res.OK() || len(res.Samples) == 0 {
				why := res.Error + res.Unsupported
				if why == "" {
					why = "no samples"
				}
				sum.Missing = append(sum.Missing, fmt.Sprintf("boot %d: %s", b.Index, why))
			} else {
				sum.Values = append(sum.Values, protocol.Rate(res.Samples))
				sum.Pairs = append(sum.Pairs, pair)
				if len(res.Warmup) == 0 {
					t.NoWarmup++
				}
			}
		}
		addRatios(t, b, pair)
	}
	var out []Table
	for _, k := range order {
		t := byKey[k]
		// A side without boots takes the other's accelerator and clock, so
		// that a one-variant run (--only) reads as what it is.
		for _, p := range []*variant.Pair[string]{&t.Shape.Accel, &t.Shape.Clock} {
			if p.Baseline == "" {
				p.Baseline = p.Patched
			}
			if p.Patched == "" {
				p.Patched = p.Baseline
			}
		}
		nameAgentRows(t)
		sortRows(t.Rows)
		// Boots from several hosts: a host's speed would pass for the
		// series' effect, so changes are judged on pairs.
		t.Paired = len(t.Hosts) > 1
		t.finish(driftFloor)
		out = append(out, *t)
	}
	return out
}

// nameAgentRows marks the agent's rows as the agent's when a guest tool
// measured the same benchmarks, so that each row says who measured it.
func nameAgentRows(t *Table) {
	tools := false
	for _, r := range t.Rows {
		tools = tools || r.Tool != ""
	}
	if !tools {
		return
	}
	for _, rows := range [][]Row{t.Rows, t.Scaling} {
		for i := range rows {
			if rows[i].Tool == "" && rows[i].Metric != MetricVsBench {
				rows[i].Tool = ToolAgent
			}
		}
	}
}

// sortRows keeps benchmarks in the order boots ran them, producer counts
// ascending within each, the agent's row before a tool's.
func sortRows(rows []Row) {
	first := map[string]int{}
	for i, r := range rows {
		if _, ok := first[r.Benchmark]; !ok {
			first[r.Benchmark] = i
		}
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].Benchmark != rows[j].Benchmark {
			return first[rows[i].Benchmark] < first[rows[j].Benchmark]
		}
		if rows[i].Producers != rows[j].Producers {
			return rows[i].Producers < rows[j].Producers
		}
		return rows[i].Agent() && !rows[j].Agent()
	})
}

// addRatios adds a boot's within-boot ratios, in the boot's own benchmark
// order: scaling (results.Ratio), probe ÷ probe-free and agent ÷ bench.
func addRatios(t *Table, b results.Boot, pair string) {
	type key struct {
		bench, tool string
		p           int
	}
	scaling := map[key]float64{}
	for _, x := range b.Ratios() {
		scaling[key{x.Benchmark, x.Tool, x.Producers}] = x.Value
	}
	toolRate := map[key]float64{}
	for _, res := range b.Results {
		if res.Tool == benchmark.BPFBench && res.OK() {
			toolRate[key{res.Benchmark, "", res.Producers}] = protocol.Rate(res.Samples)
		}
	}
	add := func(res protocol.Result, tool, metric string, v float64) {
		sum := findRow(&t.Scaling, res.Benchmark, tool, res.Producers, metric).Variants.Ptr(b.Variant)
		sum.Values = append(sum.Values, v)
		sum.Pairs = append(sum.Pairs, pair)
	}
	for _, res := range b.Results {
		if v, ok := scaling[key{res.Benchmark, res.Tool, res.Producers}]; ok {
			add(res, res.Tool, MetricScaling, v)
		}
		rate := protocol.Rate(res.Samples)
		if res.Tool != "" || !res.OK() || rate <= 0 {
			continue
		}
		if res.ProbeFree != nil && res.ProbeFree.Rate > 0 {
			add(res, "", MetricVsFree, rate/res.ProbeFree.Rate)
		}
		if bench := toolRate[key{res.Benchmark, "", res.Producers}]; bench > 0 {
			add(res, "", MetricVsBench, rate/bench)
		}
	}
}

// finish computes every summary and change: controls first, since under
// icount their spread sets the floor the other rows are judged against.
func (t *Table) finish(driftFloor bool) {
	both := [][]Row{t.Rows, t.Scaling}
	for _, rows := range both {
		for i := range rows {
			rows[i].Control = benchmark.IsControl(rows[i].Benchmark)
			for _, v := range variant.Both {
				sum := rows[i].Variants.Ptr(v)
				sum.Summary = stats.Summarize(sum.Values)
			}
		}
	}
	if t.Shape.ICount() {
		t.FloorPct = ICountFloor(t.MinFloorPct(), agentControls(t.Rows))
	}
	for _, rows := range both {
		for i := range rows {
			r := &rows[i]
			res := t.ResolutionPct(*r)
			floor := math.Max(t.FloorPct, res)
			if t.Shape.ICount() {
				// A benchmark's own floor, where it needs more than the table's.
				floor = math.Max(floor, MinICountFloorPctOf(t.Sample, r.Benchmark))
			}
			switch {
			case t.Shape.ICount() && r.Agent():
				// Exact figures: judged by size, whatever the hosts.
				r.Change = stats.CompareExact(r.Variants.Baseline.Values, r.Variants.Patched.Values, floor)
			case t.Paired:
				base, pat := PairUp(r.Variants)
				r.Change = stats.ComparePaired(base, pat, floor)
			default:
				r.Change = stats.Compare(r.Variants.Baseline.Values, r.Variants.Patched.Values, floor)
			}
			if res > 0 {
				// Each mean is known to half a step: the change to one.
				r.Change.Lo, r.Change.Hi = r.Change.Lo-res, r.Change.Hi+res
			}
			if res > t.FloorPct && r.Change.Verdict == stats.Same && math.Abs(r.Change.Pct) <= res {
				r.Change.Why = fmt.Sprintf("|%.3f %%| is within one step of the tool's rounded figures (%.3f %%)", r.Change.Pct, res)
			}
		}
	}
	if t.Paired {
		t.PerHost = perHost(t)
	}
	if t.Shape.ICount() {
		return
	}
	// Wall clock: a control that moved significantly between the variants
	// shows how far host drift (or anything else that is not the series)
	// can move a row of the same metric. Other rows must go beyond the far
	// end of that control's 95 % interval to count.
	t.DriftFloor = DriftFloors(t.AllRows())
	if driftFloor {
		for _, rows := range both {
			for i := range rows {
				ApplyDriftFloor(&rows[i], t.DriftFloor[rows[i].Metric])
			}
		}
	}
	for _, rows := range both {
		for _, r := range rows {
			// Host drift moves every rate alike; a control that moved by
			// more than a few percent says how much of any change may be it.
			if r.Control && !r.Change.NoData && math.Abs(r.Change.Pct) >= DriftPct {
				t.Drift = append(t.Drift, fmt.Sprintf("control %s moved %+.1f %% [%+.1f, %+.1f] (p=%.3f%s)",
					r.Label(), r.Change.Pct, r.Change.Lo, r.Change.Hi, r.Change.P, sigText(r.Change)))
			}
		}
	}
}

// PairUp lines up the baseline and patched values of the same pairs.
func PairUp(v variant.Pair[Summary]) (base, pat []float64) {
	patOf := map[string]float64{}
	for i, k := range v.Patched.Pairs {
		patOf[k] = v.Patched.Values[i]
	}
	for i, k := range v.Baseline.Pairs {
		if p, ok := patOf[k]; ok {
			base, pat = append(base, v.Baseline.Values[i]), append(pat, p)
		}
	}
	return base, pat
}

// perHost is the spread, host by host, of the pair ratios of the table's
// largest non-control rate change: do the hosts agree?
func perHost(t *Table) []string {
	var top *Row
	for i := range t.Rows {
		r := &t.Rows[i]
		if !r.Control && r.Agent() && !r.Change.NoData && (top == nil || math.Abs(r.Change.Pct) > math.Abs(top.Change.Pct)) {
			top = r
		}
	}
	if top == nil {
		return nil
	}
	var out []string
	for _, h := range t.Hosts {
		var ratios []float64
		patOf := map[string]float64{}
		for i, k := range top.Variants.Patched.Pairs {
			patOf[k] = top.Variants.Patched.Values[i]
		}
		for i, k := range top.Variants.Baseline.Pairs {
			if p, ok := patOf[k]; ok && strings.HasPrefix(k, h+" round ") && top.Variants.Baseline.Values[i] > 0 {
				ratios = append(ratios, p/top.Variants.Baseline.Values[i])
			}
		}
		s := stats.Summarize(ratios)
		out = append(out, fmt.Sprintf("%s: %d pairs, %s patched/baseline %.4f ± %.4f", h, s.N, top.Label(), s.Mean, s.Stddev))
	}
	return out
}

// hostID names the host a boot ran on (set on boots of merged runs).
func hostID(b results.Boot) string {
	if b.Host == nil {
		return "this host"
	}
	return b.Host.ID()
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

// resolutionPct is the smallest change, in percent, a row can show when the
// tool behind it rounds what it prints (bench: M/s to three decimals), for
// its rate rows and the agent ÷ bench rows; 0 when nothing is rounded. Its
// intervals would otherwise claim a precision the tool never printed.
func (t *Table) ResolutionPct(r Row) float64 {
	rate := r
	switch {
	case r.Metric == MetricVsBench:
		i := slices.IndexFunc(t.Rows, func(q Row) bool {
			return q.Benchmark == r.Benchmark && q.Producers == r.Producers && q.Metric == MetricRate && q.Tool == benchmark.BPFBench
		})
		if i < 0 {
			return 0
		}
		rate = t.Rows[i]
	case r.Metric != MetricRate || r.Agent():
		return 0
	}
	tool, err := benchmark.LookupTool(rate.Tool)
	m := math.Min(rate.Variants.Baseline.Summary.Mean, rate.Variants.Patched.Summary.Mean)
	if err != nil || tool.Resolution == 0 || m <= 0 {
		return 0
	}
	// One step, and a hair more: a figure printed one step higher can come
	// from a change of next to nothing, and the division must not decide.
	return 100 * tool.Resolution / m * (1 + 1e-9)
}

func (t *Table) row(bench, tool string, p int) *Row {
	return findRow(&t.Rows, bench, tool, p, MetricRate)
}

func findRow(rows *[]Row, bench, tool string, p int, metric string) *Row {
	for i := range *rows {
		if r := &(*rows)[i]; r.Benchmark == bench && r.Tool == tool && r.Producers == p && r.Metric == metric {
			return r
		}
	}
	*rows = append(*rows, Row{Benchmark: bench, Tool: tool, Producers: p, Metric: metric})
	return &(*rows)[len(*rows)-1]
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
