// Package report turns a run's results into the baseline-against-patched
// table. It only shows figures the run measured.
package report

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/jedib0t/go-pretty/v6/text"

	"lab/initramfs/protocol"
	"lab/internal/results"
	"lab/internal/vm"
)

// Shape identifies one table: everything that must be equal between the
// compared boots.
type Shape struct {
	Arch     string
	CPUs     int
	Topology string // "16 vCPUs (sockets=4,...), 4 NUMA nodes"
	Accel    string
	Clock    string
	Caveats  string // "; "-joined: oversubscription, emulated NUMA
}

// Row is one benchmark at one producer count.
type Row struct {
	Benchmark string
	Producers int
	Variants  map[string]Summary // by variant
}

// Summary is a variant's figures: one observation per boot (the boot's mean
// rate; samples inside a boot are correlated, boots are not).
type Summary struct {
	PerBoot []float64 // hits/s
	Mean    float64
	Stddev  float64 // sample standard deviation across boots
	Missing []string
}

// Table is the comparison for one shape.
type Table struct {
	Shape Shape
	Boots map[string]int // boots that delivered results, by variant
	Rows  []Row
}

// Tables groups a run's boots by shape and summarises them.
func Tables(r *results.Run) []Table {
	byShape := map[Shape]*Table{}
	var order []Shape
	for _, b := range r.Boots {
		s := Shape{Arch: b.Arch, CPUs: b.CPUs, Topology: fmt.Sprintf("%d vCPU%s", b.CPUs, plural(b.CPUs)),
			Accel: b.Accel.Name, Clock: b.Clock, Caveats: strings.Join(b.Caveats, "; ")}
		if b.Shape != nil {
			s.Topology = b.Shape.String()
		}
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
		for i := range t.Rows {
			for v, sum := range t.Rows[i].Variants {
				sum.Mean, sum.Stddev = meanStddev(sum.PerBoot)
				t.Rows[i].Variants[v] = sum
			}
		}
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
		out = append(out, *t)
	}
	return out
}

func (t *Table) row(bench string, p int) *Row {
	for i := range t.Rows {
		if t.Rows[i].Benchmark == bench && t.Rows[i].Producers == p {
			return &t.Rows[i]
		}
	}
	t.Rows = append(t.Rows, Row{Benchmark: bench, Producers: p, Variants: map[string]Summary{}})
	return &t.Rows[len(t.Rows)-1]
}

func meanStddev(x []float64) (mean, sd float64) {
	if len(x) == 0 {
		return 0, 0
	}
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	if len(x) < 2 {
		return mean, 0
	}
	for _, v := range x {
		sd += (v - mean) * (v - mean)
	}
	return mean, math.Sqrt(sd / float64(len(x)-1))
}

// Header is the line above a table: what ran, and what its figures can show.
func Header(lab string, t Table) string {
	parts := []string{lab, t.Shape.Arch, t.Shape.Topology}
	switch {
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

// Render draws the tables as text.
func Render(lab string, tables []Table) string {
	var b strings.Builder
	for i, t := range tables {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(Header(lab, t) + "\n")
		tw := table.NewWriter()
		tw.SetStyle(plainStyle())
		tw.AppendHeader(table.Row{"benchmark", "producers", "baseline M/s", "patched M/s", "Δ"})
		tw.SetColumnConfigs([]table.ColumnConfig{
			{Number: 2, Align: text.AlignRight},
			{Number: 3, Align: text.AlignRight},
			{Number: 4, Align: text.AlignRight},
			{Number: 5, Align: text.AlignRight},
		})
		// icount repeats to about 0.01 %: show enough digits to see it.
		digits := 3
		if t.Shape.Clock == vm.ClockICount {
			digits = 5
		}
		var notes []string
		for _, r := range t.Rows {
			base, pat := r.Variants["baseline"], r.Variants["patched"]
			tw.AppendRow(table.Row{r.Benchmark, r.Producers, cell(base, r.Producers, digits), cell(pat, r.Producers, digits), delta(base, pat, digits)})
			for _, v := range []string{"baseline", "patched"} {
				for _, m := range r.Variants[v].Missing {
					notes = append(notes, fmt.Sprintf("%s p=%d %s: %s", r.Benchmark, r.Producers, v, m))
				}
			}
		}
		b.WriteString(tw.Render() + "\n")
		for _, n := range notes {
			b.WriteString("  note: " + n + "\n")
		}
	}
	return b.String()
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

func delta(base, pat Summary, digits int) string {
	if len(base.PerBoot) == 0 || len(pat.PerBoot) == 0 || base.Mean == 0 {
		return "–"
	}
	return fmt.Sprintf("%+.*f %%", digits-2, (pat.Mean/base.Mean-1)*100)
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
