package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/jedib0t/go-pretty/v6/text"

	"lab/internal/gitcmd"
	"lab/internal/stats"
	"lab/internal/variant"
	"lab/internal/verdict"
)

// Markdown is the report for a cover letter or a pull request: the answer
// first (a headline per table and the claims), then the tables.
func Markdown(d *Document) string {
	var b strings.Builder
	grids := Grids(d)
	b.WriteString(lead(d, grids))
	for _, g := range grids {
		fmt.Fprintf(&b, "## %s\n\n", g.Header)
		head := []string{"benchmark", "producers"}
		align := []string{"---", "--:"}
		for _, k := range g.Kernels {
			head = append(head, string(k)+" M/s (mean ± sd)")
			align = append(align, "--:")
			if g.Medians {
				head = append(head, string(k)+" median [95% CI]")
				align = append(align, "--:")
			}
		}
		for _, c := range g.Changes {
			head = append(head, c.Head, "p", "")
			align = append(align, "--:", "--:", "---")
		}
		fmt.Fprintf(&b, "| %s |\n|%s|\n", strings.Join(head, " | "), strings.Join(align, "|"))
		for _, l := range append(append([]Line(nil), g.Rates...), g.Ratios...) {
			cells := []string{l.Name, l.Producers}
			for _, s := range l.Sides {
				cells = append(cells, s.MeanSD)
				if g.Medians {
					cells = append(cells, s.Median)
				}
			}
			for _, c := range l.Changes {
				if c == nil {
					cells = append(cells, "–", "–", "")
					continue
				}
				cells = append(cells, c.Delta, c.P, c.Mark)
			}
			fmt.Fprintf(&b, "| %s |\n", strings.Join(cells, " | "))
		}
		b.WriteString("\n")
		for _, n := range g.Notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
		b.WriteString("\n")
	}
	if where := WhereText(d); where != "" {
		b.WriteString("## Where it moved\n\n```" + where + "```\n\n")
	}
	if len(d.Caveats) > 0 {
		b.WriteString("## Caveats\n\n")
		for _, c := range d.Caveats {
			fmt.Fprintf(&b, "- %s\n", c)
		}
		b.WriteString("\n")
	}
	b.WriteString("## Provenance\n\n")
	for _, r := range d.Runs {
		writeProvenance(&b, r, "- ", "`")
	}
	return b.String()
}

// Lead is the lead of the Markdown report: the title, a headline per
// table and the claims. CI job summaries show it alone.
func Lead(d *Document) string { return lead(d, Grids(d)) }

func lead(d *Document, grids []Grid) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", d.Title)
	for _, h := range d.Header {
		fmt.Fprintf(&b, "- %s\n", h)
	}
	if len(d.Header) > 0 {
		b.WriteString("\n")
	}
	for _, g := range grids {
		for _, h := range g.Headlines {
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

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func writeProvenance(b *strings.Builder, r RunInfo, bullet, code string) {
	fmt.Fprintf(b, "%srun %s (%s), %s\n", bullet, r.RunID, r.Dir, r.Role)
	fmt.Fprintf(b, "%sreproduce: %s%s%s\n", bullet, code, r.Reproducer, code)
	fmt.Fprintf(b, "%slab version %s; complete: %v\n", bullet, r.LabVersion, r.Complete)
	fmt.Fprintf(b, "%skernel source: Linux %s, %s (base commit %s)\n", bullet, r.Source.Version, r.Source.Desc, gitcmd.Short(r.Source.Commit))
	fmt.Fprintf(b, "%sseries: %s\n", bullet, r.Series)
	if r.SeriesMode != "" {
		fmt.Fprintf(b, "%s  %s\n", bullet, r.SeriesMode)
	}
	if r.SeriesBase != "" {
		fmt.Fprintf(b, "%s  base: %s\n", bullet, r.SeriesBase)
	}
	for _, p := range r.Patches {
		fmt.Fprintf(b, "%s  patch %s\n", bullet, p)
	}
	for _, k := range r.Kernels {
		fmt.Fprintf(b, "%s  kernel %s\n", bullet, k)
	}
	fmt.Fprintf(b, "%shost: %s\n", bullet, r.Host)
	for _, q := range r.QEMU {
		fmt.Fprintf(b, "%s%s\n", bullet, q)
	}
	for _, a := range r.Args {
		fmt.Fprintf(b, "%sQEMU command: %s%s%s\n", bullet, code, a, code)
	}
	for _, f := range r.Failed {
		fmt.Fprintf(b, "%sFAILED %s\n", bullet, f)
	}
}

func evidence(c verdict.ClaimResult) string {
	if len(c.Checks) == 0 {
		return "no matching row in this run (producer counts or benchmark not run)"
	}
	var parts []string
	for _, k := range c.Checks {
		why := ""
		if k.Verdict != verdict.Reproduced && k.Change.Why != "" {
			why = " (" + k.Change.Why + ")"
		}
		if k.Change.Exact {
			why = ""
		}
		parts = append(parts, fmt.Sprintf("%s, %s: %s → %s%s", k.Table, k.Row, k.Change.Words(), k.Verdict, why))
	}
	return strings.Join(parts, "; ")
}

// Plain is an 80-column report for mailing lists, in the style of the
// seeds' cover letters: the headlines and claims first, then one line per
// row with the means of boots, a block of them per comparison.
func Plain(d *Document) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", Wrap(d.Title, 80, ""))
	for _, h := range d.Header {
		b.WriteString(Wrap(h, 80, "  ") + "\n")
	}
	grids := Grids(d)
	for _, g := range grids {
		for _, h := range g.Headlines {
			b.WriteString("\n" + Wrap(h, 80, "  ") + "\n")
		}
	}
	if len(d.Claims) > 0 {
		b.WriteString("\n" + ClaimsLine(d.Claims) + ":\n")
		for _, c := range d.Claims {
			b.WriteString(Wrap(fmt.Sprintf("- %s: %s", c.Text(), strings.ToUpper(c.Verdict)), 80, "  ") + "\n")
		}
	}
	for _, g := range grids {
		b.WriteString("\n" + Wrap(g.Header, 80, "  ") + "\n")
		for _, ci := range g.blocks {
			c := d.Comparisons[ci]
			first := "benchmark (M/s)"
			if d.named() {
				first = Wrap(c.Name(), 24, "")
			}
			fmt.Fprintf(&b, "%-24s %4s %12s %12s %9s %6s\n", first, "P", c.Against, c.Patched, "change", "p")
			for _, l := range append(append([]Line(nil), g.Rates...), g.Ratios...) {
				if cells := l.byComparison[ci]; cells != nil {
					plainRow(&b, *cells)
				}
			}
		}
		for _, n := range g.Notes {
			b.WriteString(Wrap(n, 80, "  ") + "\n")
		}
	}
	// The where-blocks' columns stay as they are; a longer line wraps.
	for _, l := range whereLines(d) {
		if l == "" {
			b.WriteString("\n")
			continue
		}
		if utf8.RuneCountInString(l) <= 80 {
			b.WriteString(l + "\n")
			continue
		}
		indent := l[:len(l)-len(strings.TrimLeft(l, " "))]
		b.WriteString(indent + Wrap(l, 80-len(indent), indent+"  ") + "\n")
	}
	plainTail(&b, d)
	return b.String()
}

// whereLines are the where-blocks' lines, a blank one before each; none
// without a block.
func whereLines(d *Document) []string {
	w := WhereText(d)
	if w == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(w, "\n"), "\n")
}

// plainRow is one row of the 80-column report: its short name, producers,
// both sides, the change, p and the mark.
func plainRow(b *strings.Builder, c Cells) {
	name := c.Short
	if len(name) > 24 {
		name = name[:24]
	}
	fmt.Fprintf(b, "%-24s %4s %12s %12s %9s %6s %-1s\n", name, c.ShortProducers,
		c.Value.Baseline, c.Value.Patched, c.DeltaShort, c.P, c.MarkShort)
}

// plainTail ends the 80-column report: the caveats and how to reproduce.
func plainTail(b *strings.Builder, d *Document) {
	for _, c := range d.Caveats {
		b.WriteString(Wrap("caveat: "+c, 80, "  ") + "\n")
	}
	for _, r := range d.Runs {
		if r.Reproducer != "" { // a reply to a list gives its own
			b.WriteString(Wrap("reproduce: "+r.Reproducer, 80, "  ") + "\n")
		}
	}
}

// Wrap breaks s at spaces so that no line is longer than width.
func Wrap(s string, width int, indent string) string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		switch {
		case line == "":
			line = w
		// Runes, not bytes: the reports are full of "·", "±" and "÷",
		// and a mail reader counts what it shows.
		case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(w) > width:
			lines = append(lines, line)
			line = indent + w
		default:
			line += " " + w
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

// CSV has one line per table row and comparison, every figure in its own
// column: baseline_* are the side the comparison is against (its column
// "against"), patched_* the other (its column "variant").
func CSV(d *Document) string {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Write([]string{"arch", "cpus", "topology", "accel", "clock", "benchmark", "producers", "metric", "control",
		"baseline_n", "baseline_mean", "baseline_stddev", "baseline_median", "baseline_median_lo", "baseline_median_hi",
		"patched_n", "patched_mean", "patched_stddev", "patched_median", "patched_median_lo", "patched_median_hi",
		"change_pct", "change_lo_pct", "change_hi_pct", "p", "verdict", "floor_pct", "exact", "seeds", "seed_spread_pct", "tool", "variant", "against"})
	f := func(v float64) string { return fmt.Sprintf("%.6g", v) }
	for _, c := range d.Comparisons {
		for _, t := range c.Tables {
			for _, rows := range [][]verdict.Row{t.Rows, t.Scaling} {
				for _, r := range rows {
					rec := []string{t.Shape.Arch, fmt.Sprint(t.Shape.CPUs), t.Shape.Topology, pairText(t.Shape.Accel), pairText(t.Shape.Clock),
						r.Benchmark, fmt.Sprint(r.Producers), r.Metric, fmt.Sprint(r.Control)}
					for _, v := range variant.Both {
						s := r.Variants.Get(v)
						rec = append(rec, fmt.Sprint(s.N), f(s.Mean), f(s.Stddev), f(s.Median), f(s.Lo), f(s.Hi))
					}
					p := f(r.Change.P)
					if r.Change.Exact {
						p = "" // judged by its size, not a test
					}
					rec = append(rec, f(r.Change.Pct), f(r.Change.Lo), f(r.Change.Hi), p, r.Change.Verdict, f(r.Change.FloorPct),
						fmt.Sprint(r.Change.Exact), fmt.Sprint(r.Change.Seeds), f(r.Change.SpreadPct), r.Tool, string(c.Patched), string(c.Against))
					w.Write(rec)
				}
			}
		}
	}
	w.Flush()
	return buf.String()
}

// pairText is one field of a shape: "tcg", or "tcg vs kvm" when the two
// sides of a comparison differ.
func pairText(p variant.Pair[string]) string {
	if p.Baseline == p.Patched {
		return p.Baseline
	}
	return p.Baseline + " vs " + p.Patched
}

// JSON is the whole document.
func JSON(d *Document) ([]byte, error) {
	return json.MarshalIndent(d, "", "  ")
}

// Text is the terminal report: the headlines and the claims' verdicts, then
// each table; color marks significant changes (only on a terminal).
func Text(d *Document, color bool) string {
	var b strings.Builder
	for _, h := range d.Header {
		b.WriteString(h + "\n")
	}
	grids := Grids(d)
	for _, g := range grids {
		for _, h := range g.Headlines {
			b.WriteString(h + "\n")
		}
	}
	// Two runs set against each other may differ in more than the series
	// (the source's point release, the lab): say so before any figure.
	if d.Compare {
		for _, c := range d.Caveats {
			b.WriteString("caveat: " + c + "\n")
		}
	}
	if len(d.Claims) > 0 {
		b.WriteString(ClaimsLine(d.Claims) + "\n")
		for _, c := range d.Claims {
			fmt.Fprintf(&b, "  claim: %s: %s\n", c.Text(), strings.ToUpper(c.Verdict))
		}
	}
	for _, g := range grids {
		b.WriteString("\n" + g.Header + "\n" + textTable(g, color) + "\n")
		for _, n := range g.Notes {
			b.WriteString("  " + n + "\n")
		}
	}
	b.WriteString(WhereText(d))
	return b.String()
}

// textTable is a grid drawn by go-pretty for a terminal.
func textTable(g Grid, color bool) string {
	tw := table.NewWriter()
	tw.SetStyle(PlainStyle())
	head := table.Row{"benchmark", "producers"}
	for _, k := range g.Kernels {
		head = append(head, string(k)+" M/s")
	}
	for _, c := range g.Changes {
		head = append(head, c.Head, "p")
	}
	tw.AppendHeader(head)
	var cols []table.ColumnConfig
	for i := 2; i <= len(head); i++ {
		cols = append(cols, table.ColumnConfig{Number: i, Align: text.AlignRight})
	}
	tw.SetColumnConfigs(cols)
	add := func(l Line, name, producers string) {
		row := table.Row{name, producers}
		for _, s := range l.Sides {
			row = append(row, s.Terminal)
		}
		for _, c := range l.Changes {
			if c == nil {
				row = append(row, "–", "")
				continue
			}
			row = append(row, paint(c.DeltaTerminal, c.Row.Change.Verdict, color), c.PMarked)
		}
		tw.AppendRow(row)
	}
	for _, l := range g.Rates {
		add(l, l.Name, l.Producers)
	}
	if len(g.Ratios) > 0 {
		tw.AppendSeparator()
		for _, l := range g.Ratios {
			add(l, l.Short, l.ShortProducers)
		}
	}
	return tw.Render()
}

func paint(s, verdict string, color bool) string {
	if !color {
		return s
	}
	switch verdict {
	case stats.Faster:
		return text.FgGreen.Sprint(s)
	case stats.Slower:
		return text.FgRed.Sprint(s)
	}
	return s
}

// PlainStyle is go-pretty's table as lab prints it in plain text: no
// borders, no rules, headers as written.
func PlainStyle() table.Style {
	s := table.StyleDefault
	s.Options.DrawBorder = false
	s.Options.SeparateColumns = false
	s.Options.SeparateHeader = false
	s.Options.SeparateRows = false
	s.Format.Header = text.FormatDefault
	return s
}
