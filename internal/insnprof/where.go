package insnprof

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"lab/internal/benchmark"
	"lab/internal/results"
)

// Where is where a benchmark's path changed between two kernels: the
// functions whose instructions per operation moved, largest first.
type Where struct {
	Benchmark string `json:"benchmark"`
	Producers int    `json:"producers"`
	Unit      string `json:"unit"` // what an operation is: "hit", "call"
	// Before and After are each kernel's instructions per operation, all
	// functions together.
	Before float64 `json:"before"`
	After  float64 `json:"after"`
	Rows   []Moved `json:"functions"`
	// Rest is the change of the functions not listed, per operation.
	Rest      float64 `json:"rest"`
	RestCount int     `json:"rest_count"`
	// MeasuredPct is the measured figure's path change, (rate before /
	// rate after − 1) × 100, when the caller knows it; NaN otherwise.
	MeasuredPct float64 `json:"measured_path_pct"`
}

// Moved is one function whose instructions per operation changed.
type Moved struct {
	Function string  `json:"function"`
	Before   float64 `json:"before"`
	After    float64 `json:"after"`
	Delta    float64 `json:"delta"`
	Share    float64 `json:"share"` // of the whole change (After − Before)
}

// MaxRows is how many functions a where-block lists at most; the rest is
// summed in one line.
const MaxRows = 12

// per is "a hit", "an operation": what the counts are divided by.
func (w Where) per() string {
	if strings.IndexByte("aeiou", w.Unit[0]) >= 0 {
		return "an " + w.Unit
	}
	return "a " + w.Unit
}

// MinDelta is the least change per operation a where-block lists: periodic
// work (timer ticks, RCU) divides into more operations on a faster kernel,
// and moves every function it runs by hundredths of an instruction.
const MinDelta = 0.05

// Diff sets kernel a's profile of a benchmark against b's. measuredPct is
// the measured figures' path change (NaN when unknown).
func Diff(a, b results.ProfileResult, measuredPct float64) Where {
	w := Where{Benchmark: a.Benchmark, Producers: a.Producers, Unit: benchmark.OpOf(a.Benchmark), MeasuredPct: measuredPct}
	if a.Ops == 0 || b.Ops == 0 {
		return w
	}
	w.Before, w.After = float64(a.Instructions)/float64(a.Ops), float64(b.Instructions)/float64(b.Ops)
	per := map[string][2]float64{}
	for _, f := range a.Functions {
		x := per[f.Name]
		x[0] = float64(f.Instructions) / float64(a.Ops)
		per[f.Name] = x
	}
	for _, f := range b.Functions {
		x := per[f.Name]
		x[1] = float64(f.Instructions) / float64(b.Ops)
		per[f.Name] = x
	}
	total := w.After - w.Before
	var all []Moved
	for name, x := range per {
		m := Moved{Function: name, Before: x[0], After: x[1], Delta: x[1] - x[0]}
		if total != 0 {
			m.Share = m.Delta / total
		}
		all = append(all, m)
	}
	slices.SortFunc(all, func(x, y Moved) int {
		return cmp.Or(cmp.Compare(math.Abs(y.Delta), math.Abs(x.Delta)), cmp.Compare(x.Function, y.Function))
	})
	for _, m := range all {
		if len(w.Rows) < MaxRows && math.Abs(m.Delta) >= MinDelta {
			w.Rows = append(w.Rows, m)
			continue
		}
		if m.Delta != 0 {
			w.Rest += m.Delta
			w.RestCount++
		}
	}
	return w
}

// PathPct is the profile's own path change: (After/Before − 1) × 100.
func (w Where) PathPct() float64 {
	if w.Before == 0 {
		return 0
	}
	return (w.After/w.Before - 1) * 100
}

// Reconciled says how the profile meets the measured figure: "the lines
// sum to −9.75 instructions a hit, −1.121 % of the path; the measured
// figure's path: −1.121 %: the profile is within 0.01 % of its change".
// The lines (the listed functions and the rest) sum to the profile's whole
// change exactly; what is checked is the profile against the figure.
func (w Where) Reconciled() string {
	s := fmt.Sprintf("the lines sum to %+.2f instructions %s, %+.3f %% of the path", w.After-w.Before, w.per(), w.PathPct())
	if math.IsNaN(w.MeasuredPct) {
		return s
	}
	s += fmt.Sprintf("; the measured figure's path: %+.3f %%", w.MeasuredPct)
	if w.MeasuredPct != 0 {
		s += fmt.Sprintf(": the profile is within %.2f %% of its change", w.Agreement())
	}
	return s
}

// Agreement is how far the profile's path change is from the measured
// one, in percent of the measured one (NaN when there is none).
func (w Where) Agreement() float64 {
	if math.IsNaN(w.MeasuredPct) || w.MeasuredPct == 0 {
		return math.NaN()
	}
	return 100 * math.Abs(w.PathPct()-w.MeasuredPct) / math.Abs(w.MeasuredPct)
}

func pctOf(delta, base float64) float64 {
	if base == 0 {
		return 0
	}
	return 100 * delta / base
}

// Text is the where-block in lines of at most 80 columns, indented by
// indent: a line a function, then the rest and how it reconciles.
func (w Where) Text(indent string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s%s p=%d: %.1f → %.1f instructions %s (%+.3f %%)\n", indent, w.Benchmark, w.Producers, w.Before, w.After, w.per(), w.PathPct())
	fmt.Fprintf(&b, "%s  %-36s %9s %9s %9s %7s\n", indent, "function", "before", "after", "Δ", "share")
	if len(w.Rows) == 0 {
		fmt.Fprintf(&b, "%s  no function moved by %.2f instructions %s or more\n", indent, MinDelta, w.per())
	}
	// A share of a change of next to nothing says nothing.
	share := func(d float64) string {
		if total := w.After - w.Before; math.Abs(total) >= MinDelta {
			return fmt.Sprintf("%6.0f%%", 100*d/total)
		}
		return ""
	}
	for _, m := range w.Rows {
		fmt.Fprintf(&b, "%s  %-36s %9.2f %9.2f %+9.2f %s\n", indent, clip(m.Function, 36), m.Before, m.After, m.Delta, share(m.Delta))
	}
	if w.RestCount > 0 {
		fmt.Fprintf(&b, "%s  %-36s %9s %9s %+9.2f %s\n", indent, fmt.Sprintf("%d other functions", w.RestCount), "", "", w.Rest, share(w.Rest))
	}
	fmt.Fprintf(&b, "%s  %s\n", indent, w.Reconciled())
	return b.String()
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}
