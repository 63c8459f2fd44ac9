package report

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"slices"
	"strings"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/jedib0t/go-pretty/v6/text"

	"lab/internal/results"
	"lab/internal/variant"
	"lab/internal/verdict"
)

// A report of several kernels (a run of several series, or lab compare of
// two or more runs) has a column per kernel and a Δ column per comparison.
// Each comparison is judged as a run of two is: its two kernels' boots
// relabelled baseline and patched, so every rule of package verdict holds
// unchanged.

// Judged is one comparison of a report of several kernels (Patched's
// boots against Against's) with its tables.
type Judged struct {
	variant.Comparison
	Tables []verdict.Table `json:"tables"`
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

// buildColumns judges every comparison of kernels' boots with judge (by
// shape for a run, across runs for lab compare). Tables holds the tables
// of the comparisons against Kernels[0] (the baseline): the CI gates and
// the claims judge those, each series against the baseline.
func buildColumns(d *Document, kernels []variant.Variant, boots []results.Boot, comps []variant.Comparison, judge func([]results.Boot) []verdict.Table) {
	d.Kernels = kernels
	for _, c := range comps {
		tables := judge(Relabel(boots, c))
		d.Comparisons = append(d.Comparisons, Judged{Comparison: c, Tables: tables})
		if c.Against == kernels[0] {
			d.Tables = append(d.Tables, tables...)
		}
	}
}

// buildSeveral is Build for a run of several series: each series against
// the baseline, each against the one before; claims per series.
func buildSeveral(d *Document, r *results.Run) {
	series := r.SeriesVariants()
	// The provenance names every series and its patches, each with its
	// kernel's name.
	ri := &d.Runs[0]
	var titles []string
	ri.Patches = nil
	for _, s := range r.Series {
		titles = append(titles, fmt.Sprintf("%s: %s", s.Variant, seriesProvenance(s)))
		for _, p := range runInfo(&results.Run{Series: []results.Series{s}}, "", "").Patches {
			ri.Patches = append(ri.Patches, fmt.Sprintf("%s %s", s.Variant, p))
		}
	}
	ri.Series = strings.Join(titles, "; ")
	buildColumns(d, variant.Kernels(series), r.Boots, variant.Comparisons(series), func(b []results.Boot) []verdict.Table {
		cr := *r
		cr.Boots = b
		return verdict.Tables(&cr)
	})
	for _, c := range d.Comparisons {
		if c.Against != variant.Baseline {
			continue
		}
		for _, cl := range verdict.CheckClaims(r.Claims, c.Tables) {
			cl.Series = c.Patched
			d.Claims = append(d.Claims, cl)
		}
	}
	d.Caveats = append(append([]string(nil), r.Caveats...), caveats(d.Tables)...)
	for _, s := range r.Series {
		d.Header = append(d.Header, fmt.Sprintf("%s: %s", s.Variant, SeriesTitle(s)))
	}
	if len(r.Series) > 0 && r.Series[0].ModeReason != "" {
		d.Header = append(d.Header, "baseline: "+r.Series[0].ModeReason)
	}
}

// BuildCompareRuns sets variant v of two or more runs side by side, a
// column per run named by its run id, each judged against the first.
func BuildCompareRuns(runs []*results.Run, dirs []string, v variant.Variant, generator string) (*Document, error) {
	if err := sameMethod(runs, dirs); err != nil {
		return nil, err
	}
	var kernels []variant.Variant
	var boots []results.Boot
	labs := map[string]bool{}
	var ids, labNames []string
	for i, r := range runs {
		k, err := variant.Name(r.RunID)
		if err != nil || slices.Contains(kernels, k) {
			k = variant.Variant(fmt.Sprintf("run%d", i+1)) // a run id lab did not make
		}
		kernels = append(kernels, k)
		ids = append(ids, r.RunID)
		if !labs[r.Lab] {
			labs[r.Lab] = true
			labNames = append(labNames, r.Lab)
		}
		for _, b := range r.Boots {
			if b.Variant == v {
				b.Variant = k
				boots = append(boots, b)
			}
		}
	}
	var comps []variant.Comparison
	for _, k := range kernels[1:] {
		comps = append(comps, variant.Comparison{Patched: k, Against: kernels[0]})
	}
	d := &Document{Title: fmt.Sprintf("%s: %s kernels of runs %s", strings.Join(labNames, ", "), v, strings.Join(ids, ", ")),
		Lab: strings.Join(labNames, " vs "), Compare: true, Generator: generator}
	for i, r := range runs {
		d.Runs = append(d.Runs, runInfo(r, dirs[i], fmt.Sprintf("column %s: %s of this run", kernels[i], v)))
	}
	buildColumns(d, kernels, boots, comps, verdict.Across)
	var all []verdict.Table
	for _, c := range d.Comparisons {
		all = append(all, c.Tables...)
	}
	d.Caveats = caveats(all)
	for i, r := range runs[1:] {
		if diff := runs[0].Source.Differs(r.Source); diff != "" {
			d.Caveats = append([]string{fmt.Sprintf("%s against %s: %s", kernels[i+1], kernels[0], diff)}, d.Caveats...)
		}
	}
	if len(labs) > 1 {
		d.Caveats = append([]string{fmt.Sprintf("different labs (%s): their kernels, series and benchmarks may differ", strings.Join(labNames, ", "))}, d.Caveats...)
	}
	if len(d.Tables) == 0 {
		return d, fmt.Errorf("no %s boots to compare in %s", v, strings.Join(dirs, ", "))
	}
	return d, nil
}

// sameMethod refuses runs whose agents measured in different ways: the
// producer program alone moved usermode-count from 57 to 198 M/s, so a
// comparison across methods would judge the agents, not the kernels.
func sameMethod(runs []*results.Run, dirs []string) error {
	method := func(r *results.Run) string {
		for _, b := range r.Boots {
			if b.OK() {
				return b.Method()
			}
		}
		return ""
	}
	name := func(m string) string {
		if m == "" {
			return "goroutine producers (an agent that named no method)"
		}
		return m
	}
	first := method(runs[0])
	for i, r := range runs[1:] {
		if m := method(r); m != first {
			return fmt.Errorf("%s and %s were measured by different agent methods (%s; %s): their figures are not comparable; measure both with one lab version",
				dirs[0], dirs[i+1], name(first), name(m))
		}
	}
	return nil
}

// columnRow is one row of a report of several kernels: its cells in each
// comparison that has it.
type columnRow struct {
	name, producers, short, shortProducers string
	ratio                                  bool
	cells                                  []*Cells // by comparison; nil where the comparison lacks the row
}

// columnTable is one shape of a report of several kernels.
type columnTable struct {
	header    string
	headlines []string
	rows      []columnRow
	notes     []string
}

// columnTables lines up the comparisons' tables by shape, and their rows by
// benchmark, tool, producers and metric, in the first comparison's order.
func columnTables(d *Document) []columnTable {
	var out []columnTable
	index := map[string]int{}
	rowIndex := []map[string]int{}
	noteCount := []map[string]int{}
	for ci, c := range d.Comparisons {
		for _, t := range c.Tables {
			ti, ok := index[t.Name()]
			if !ok {
				ti = len(out)
				index[t.Name()] = ti
				out = append(out, columnTable{header: columnHeader(d, t)})
				rowIndex = append(rowIndex, map[string]int{})
				noteCount = append(noteCount, map[string]int{})
			}
			ct := &out[ti]
			ct.headlines = append(ct.headlines, c.Name()+": "+strings.Replace(Headline(t), "patched is ", string(c.Patched)+" is ", 1))
			digits := digitsFor(t)
			for ri, rows := range [][]verdict.Row{t.Rows, t.Scaling} {
				for _, r := range rows {
					key := fmt.Sprintf("%s|%s|%s|%d", r.Metric, r.Benchmark, r.Tool, r.Producers)
					i, ok := rowIndex[ti][key]
					if !ok {
						i = len(ct.rows)
						rowIndex[ti][key] = i
						cells := cellsOf(r, digits)
						ct.rows = append(ct.rows, columnRow{name: cells.Name, producers: cells.Producers, short: cells.Short,
							shortProducers: cells.ShortProducers, ratio: ri == 1, cells: make([]*Cells, len(d.Comparisons))})
					}
					cells := cellsOf(r, digits)
					ct.rows[i].cells[ci] = &cells
				}
			}
			for _, n := range Notes(t) {
				noteCount[ti][n]++
			}
			for _, n := range Notes(t) {
				if noteCount[ti][n] == 1 {
					ct.notes = append(ct.notes, c.Name()+"|"+n)
				}
			}
		}
	}
	// A note every comparison shares is said once; one that is not names
	// its comparison.
	for ti := range out {
		var notes []string
		seen := map[string]bool{}
		for _, cn := range out[ti].notes {
			name, n, _ := strings.Cut(cn, "|")
			switch {
			case noteCount[ti][n] == len(d.Comparisons) && !seen[n]:
				seen[n] = true
				notes = append(notes, n)
			case noteCount[ti][n] < len(d.Comparisons):
				notes = append(notes, name+": "+n)
			}
		}
		out[ti].notes = notes
		// Rates first, then within-boot ratios, as in a table of two.
		slices.SortStableFunc(out[ti].rows, func(a, b columnRow) int {
			switch {
			case a.ratio == b.ratio:
				return 0
			case b.ratio:
				return -1
			}
			return 1
		})
	}
	return out
}

// columnHeader is a table's line: Header with each kernel's boots.
func columnHeader(d *Document, t verdict.Table) string {
	h := Header(d.Lab, t)
	i := strings.LastIndex(h, " · ")
	return h[:i] + " · " + columnBoots(d, t.Name()) + " boots"
}

// columnBoots is "4+4+4": each kernel's delivered boots in t's shape.
func columnBoots(d *Document, shape string) string {
	n := map[variant.Variant]int{}
	for _, c := range d.Comparisons {
		for _, t := range c.Tables {
			if t.Name() == shape {
				n[c.Against], n[c.Patched] = t.Boots.Baseline, t.Boots.Patched
			}
		}
	}
	var parts []string
	for _, k := range d.Kernels {
		parts = append(parts, fmt.Sprint(n[k]))
	}
	return strings.Join(parts, "+")
}

// kernelCell is kernel k's cell of a row: the baseline side of a comparison
// against it, or the patched side of one of it.
func kernelCell(d *Document, r columnRow, k variant.Variant, pick func(c *Cells) variant.Pair[string]) string {
	for ci, c := range d.Comparisons {
		cells := r.cells[ci]
		switch {
		case cells == nil:
		case c.Against == k:
			return pick(cells).Baseline
		case c.Patched == k:
			return pick(cells).Patched
		}
	}
	return "–"
}

func textSeveral(d *Document, color bool) string {
	var b strings.Builder
	for _, h := range d.Header {
		b.WriteString(h + "\n")
	}
	tables := columnTables(d)
	for _, t := range tables {
		for _, h := range t.headlines {
			b.WriteString(h + "\n")
		}
	}
	if d.Compare {
		for _, c := range d.Caveats {
			b.WriteString("caveat: " + c + "\n")
		}
	}
	writeClaims(&b, d)
	for _, t := range tables {
		b.WriteString("\n" + t.header + "\n")
		tw := table.NewWriter()
		tw.SetStyle(PlainStyle())
		head := table.Row{"benchmark", "producers"}
		for _, k := range d.Kernels {
			head = append(head, string(k)+" M/s")
		}
		for _, c := range d.Comparisons {
			head = append(head, "Δ "+c.Name()+" [95% CI]", "p")
		}
		tw.AppendHeader(head)
		var cols []table.ColumnConfig
		for i := 2; i <= len(head); i++ {
			cols = append(cols, table.ColumnConfig{Number: i, Align: text.AlignRight})
		}
		tw.SetColumnConfigs(cols)
		sep := false
		for _, r := range t.rows {
			name, producers := r.name, r.producers
			if r.ratio {
				name, producers = r.short, r.shortProducers
				if !sep {
					tw.AppendSeparator()
					sep = true
				}
			}
			row := table.Row{name, producers}
			for _, k := range d.Kernels {
				row = append(row, kernelCell(d, r, k, func(c *Cells) variant.Pair[string] { return c.Terminal }))
			}
			for ci := range d.Comparisons {
				if c := r.cells[ci]; c != nil {
					row = append(row, paint(c.DeltaTerminal, c.Row.Change.Verdict, color), c.PMarked)
				} else {
					row = append(row, "–", "")
				}
			}
			tw.AppendRow(row)
		}
		b.WriteString(tw.Render() + "\n")
		for _, n := range t.notes {
			b.WriteString("  " + n + "\n")
		}
	}
	return b.String()
}

func writeClaims(b *strings.Builder, d *Document) {
	if len(d.Claims) == 0 {
		return
	}
	b.WriteString(ClaimsLine(d.Claims) + "\n")
	for _, c := range d.Claims {
		fmt.Fprintf(b, "  claim: %s: %s\n", c.Text(), strings.ToUpper(c.Verdict))
	}
}

func markdownSeveral(d *Document) string {
	var b strings.Builder
	tables := columnTables(d)
	b.WriteString(leadSeveral(d, tables))
	markdownTables(&b, d, tables)
	return b.String()
}

// leadSeveral is Lead for a report of several kernels.
func leadSeveral(d *Document, tables []columnTable) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", d.Title)
	for _, h := range d.Header {
		fmt.Fprintf(&b, "- %s\n", h)
	}
	if len(d.Header) > 0 {
		b.WriteString("\n")
	}
	for _, t := range tables {
		for _, h := range t.headlines {
			fmt.Fprintf(&b, "%s\n\n", h)
		}
	}
	if len(d.Claims) > 0 {
		fmt.Fprintf(&b, "**%s**\n\n| claim | verdict | evidence |\n|---|---|---|\n", capitalize(ClaimsLine(d.Claims)))
		for _, c := range d.Claims {
			fmt.Fprintf(&b, "| %s | **%s** | %s |\n", c.Text(), c.Verdict, evidence(c))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func markdownTables(b *strings.Builder, d *Document, tables []columnTable) {
	for _, t := range tables {
		fmt.Fprintf(b, "## %s\n\n", t.header)
		head := []string{"benchmark", "producers"}
		align := []string{"---", "--:"}
		for _, k := range d.Kernels {
			head = append(head, string(k)+" M/s (mean ± sd)")
			align = append(align, "--:")
		}
		for _, c := range d.Comparisons {
			head = append(head, "Δ "+c.Name()+" [95% CI]", "p", "")
			align = append(align, "--:", "--:", "---")
		}
		fmt.Fprintf(b, "| %s |\n|%s|\n", strings.Join(head, " | "), strings.Join(align, "|"))
		for _, r := range t.rows {
			cells := []string{r.name, r.producers}
			for _, k := range d.Kernels {
				cells = append(cells, kernelCell(d, r, k, func(c *Cells) variant.Pair[string] { return c.MeanSD }))
			}
			for ci := range d.Comparisons {
				if c := r.cells[ci]; c != nil {
					cells = append(cells, c.Delta, c.P, c.Mark)
				} else {
					cells = append(cells, "–", "–", "")
				}
			}
			fmt.Fprintf(b, "| %s |\n", strings.Join(cells, " | "))
		}
		b.WriteString("\n")
		for _, n := range t.notes {
			fmt.Fprintf(b, "- %s\n", n)
		}
		b.WriteString("\n")
	}
	if len(d.Caveats) > 0 {
		b.WriteString("## Caveats\n\n")
		for _, c := range d.Caveats {
			fmt.Fprintf(b, "- %s\n", c)
		}
		b.WriteString("\n")
	}
	b.WriteString("## Provenance\n\n")
	for _, r := range d.Runs {
		writeProvenance(b, r, "- ", "`")
	}
}

// plainSeveral is the 80-column report of several kernels: a block per
// comparison, as in a report of two.
func plainSeveral(d *Document) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", Wrap(d.Title, 80, ""))
	for _, h := range d.Header {
		b.WriteString(Wrap(h, 80, "  ") + "\n")
	}
	tables := columnTables(d)
	for _, t := range tables {
		for _, h := range t.headlines {
			b.WriteString("\n" + Wrap(h, 80, "  ") + "\n")
		}
	}
	if len(d.Claims) > 0 {
		b.WriteString("\n" + ClaimsLine(d.Claims) + ":\n")
		for _, c := range d.Claims {
			b.WriteString(Wrap(fmt.Sprintf("- %s: %s", c.Text(), strings.ToUpper(c.Verdict)), 80, "  ") + "\n")
		}
	}
	for _, t := range tables {
		b.WriteString("\n" + Wrap(t.header, 80, "  ") + "\n")
		for ci, c := range d.Comparisons {
			fmt.Fprintf(&b, "%-24s %4s %12s %12s %9s %6s\n", Wrap(c.Name(), 24, ""), "P", c.Against, c.Patched, "change", "p")
			for _, r := range t.rows {
				cells := r.cells[ci]
				if cells == nil {
					continue
				}
				plainRow(&b, *cells)
			}
		}
		for _, n := range t.notes {
			b.WriteString(Wrap(n, 80, "  ") + "\n")
		}
	}
	plainTail(&b, d)
	return b.String()
}

// csvSeveral is CSV with a line per row and comparison, the comparison's
// kernels first.
func csvSeveral(d *Document) string {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Write([]string{"patched_variant", "against_variant", "arch", "cpus", "topology", "accel", "clock", "benchmark", "producers", "metric", "control",
		"against_n", "against_mean", "against_stddev", "against_median", "against_median_lo", "against_median_hi",
		"patched_n", "patched_mean", "patched_stddev", "patched_median", "patched_median_lo", "patched_median_hi",
		"change_pct", "change_lo_pct", "change_hi_pct", "p", "verdict", "floor_pct", "tool"})
	f := func(v float64) string { return fmt.Sprintf("%.6g", v) }
	for _, c := range d.Comparisons {
		for _, t := range c.Tables {
			for _, rows := range [][]verdict.Row{t.Rows, t.Scaling} {
				for _, r := range rows {
					rec := []string{string(c.Patched), string(c.Against), t.Shape.Arch, fmt.Sprint(t.Shape.CPUs), t.Shape.Topology,
						pairText(t.Shape.Accel), pairText(t.Shape.Clock), r.Benchmark, fmt.Sprint(r.Producers), r.Metric, fmt.Sprint(r.Control)}
					for _, v := range variant.Both {
						s := r.Variants.Get(v)
						rec = append(rec, fmt.Sprint(s.N), f(s.Mean), f(s.Stddev), f(s.Median), f(s.Lo), f(s.Hi))
					}
					rec = append(rec, f(r.Change.Pct), f(r.Change.Lo), f(r.Change.Hi), f(r.Change.P), r.Change.Verdict, f(r.Change.FloorPct), r.Tool)
					w.Write(rec)
				}
			}
		}
	}
	w.Flush()
	return buf.String()
}

// regressionsSeveral are --fail-on-regression's rows of a report of
// several kernels: each against the first, named by its comparison.
func regressionsSeveral(d *Document) []string {
	var out []string
	for _, c := range d.Comparisons {
		if c.Against != d.Kernels[0] {
			continue
		}
		for _, r := range verdict.Regressions(c.Tables) {
			out = append(out, c.Name()+": "+r)
		}
	}
	return out
}
