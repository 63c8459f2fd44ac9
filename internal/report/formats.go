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
	if len(d.Comparisons) > 0 {
		return markdownSeveral(d)
	}
	var b strings.Builder
	b.WriteString(Lead(d))
	for _, v := range Views(d) {
		fmt.Fprintf(&b, "## %s\n\n", v.Header)
		head := []string{"benchmark", "producers"}
		align := []string{"---", "--:"}
		for _, side := range v.Sides {
			head = append(head, string(side)+" M/s (mean ± sd)")
			align = append(align, "--:")
			if v.Medians {
				head = append(head, string(side)+" median [95% CI]")
				align = append(align, "--:")
			}
		}
		if v.Compared {
			head = append(head, "Δ [95% CI]", "p", "")
			align = append(align, "--:", "--:", "---")
		}
		fmt.Fprintf(&b, "| %s |\n|%s|\n", strings.Join(head, " | "), strings.Join(align, "|"))
		for _, c := range append(append([]Cells(nil), v.Rates...), v.Ratios...) {
			cells := []string{c.Name, c.Producers}
			for _, side := range v.Sides {
				cells = append(cells, c.MeanSD.Get(side))
				if v.Medians {
					cells = append(cells, c.Median.Get(side))
				}
			}
			if v.Compared {
				cells = append(cells, c.Delta, c.P, c.Mark)
			}
			fmt.Fprintf(&b, "| %s |\n", strings.Join(cells, " | "))
		}
		b.WriteString("\n")
		for _, n := range v.Notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
		b.WriteString("\n")
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
func Lead(d *Document) string {
	if len(d.Comparisons) > 0 {
		return leadSeveral(d, columnTables(d))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", d.Title)
	for _, h := range d.Header {
		fmt.Fprintf(&b, "- %s\n", h)
	}
	if len(d.Header) > 0 {
		b.WriteString("\n")
	}
	for _, t := range d.Tables {
		fmt.Fprintf(&b, "%s\n\n", Headline(t))
	}
	if len(d.Claims) > 0 {
		fmt.Fprintf(&b, "**%s**\n\n| claim | verdict | evidence |\n|---|---|---|\n", capitalize(ClaimsLine(d.Claims)))
		for _, c := range d.Claims {
			fmt.Fprintf(&b, "| %s | **%s** | %s |\n", verdict.ClaimText(c.Claim), c.Verdict, evidence(c))
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
		parts = append(parts, fmt.Sprintf("%s, %s: %+.3f %% [%+.3f, %+.3f], p=%.3f → %s%s", k.Table, k.Row, k.Change.Pct, k.Change.Lo, k.Change.Hi, k.Change.P, k.Verdict, why))
	}
	return strings.Join(parts, "; ")
}

// Plain is an 80-column report for mailing lists, in the style of the
// seeds' cover letters: the headlines and claims first, then one line per
// row with the means of boots.
func Plain(d *Document) string {
	if len(d.Comparisons) > 0 {
		return plainSeveral(d)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", Wrap(d.Title, 80, ""))
	for _, h := range d.Header {
		b.WriteString(Wrap(h, 80, "  ") + "\n")
	}
	views := Views(d)
	for _, v := range views {
		b.WriteString("\n" + Wrap(v.Headline, 80, "  ") + "\n")
	}
	if len(d.Claims) > 0 {
		b.WriteString("\n" + ClaimsLine(d.Claims) + ":\n")
		for _, c := range d.Claims {
			b.WriteString(Wrap(fmt.Sprintf("- %s: %s", verdict.ClaimText(c.Claim), strings.ToUpper(c.Verdict)), 80, "  ") + "\n")
		}
	}
	for _, v := range views {
		b.WriteString("\n" + Wrap(v.Header, 80, "  ") + "\n")
		fmt.Fprintf(&b, "%-24s %4s %12s %12s %9s %6s\n", "benchmark (M/s)", "P", "baseline", "patched", "change", "p")
		for _, c := range append(append([]Cells(nil), v.Rates...), v.Ratios...) {
			plainRow(&b, c)
		}
		for _, n := range v.Notes {
			b.WriteString(Wrap(n, 80, "  ") + "\n")
		}
	}
	plainTail(&b, d)
	return b.String()
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
		b.WriteString(Wrap("reproduce: "+r.Reproducer, 80, "  ") + "\n")
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

// CSV has one line per table row, every figure in its own column.
func CSV(d *Document) string {
	if len(d.Comparisons) > 0 {
		return csvSeveral(d)
	}
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Write([]string{"arch", "cpus", "topology", "accel", "clock", "benchmark", "producers", "metric", "control",
		"baseline_n", "baseline_mean", "baseline_stddev", "baseline_median", "baseline_median_lo", "baseline_median_hi",
		"patched_n", "patched_mean", "patched_stddev", "patched_median", "patched_median_lo", "patched_median_hi",
		"change_pct", "change_lo_pct", "change_hi_pct", "p", "verdict", "floor_pct", "tool"})
	f := func(v float64) string { return fmt.Sprintf("%.6g", v) }
	for _, t := range d.Tables {
		for _, rows := range [][]verdict.Row{t.Rows, t.Scaling} {
			for _, r := range rows {
				rec := []string{t.Shape.Arch, fmt.Sprint(t.Shape.CPUs), t.Shape.Topology, pairText(t.Shape.Accel), pairText(t.Shape.Clock),
					r.Benchmark, fmt.Sprint(r.Producers), r.Metric, fmt.Sprint(r.Control)}
				for _, v := range variant.Both {
					s := r.Variants.Get(v)
					rec = append(rec, fmt.Sprint(s.N), f(s.Mean), f(s.Stddev), f(s.Median), f(s.Lo), f(s.Hi))
				}
				rec = append(rec, f(r.Change.Pct), f(r.Change.Lo), f(r.Change.Hi), f(r.Change.P), r.Change.Verdict, f(r.Change.FloorPct), r.Tool)
				w.Write(rec)
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
	if len(d.Comparisons) > 0 {
		return textSeveral(d, color)
	}
	var b strings.Builder
	for _, h := range d.Header {
		b.WriteString(h + "\n")
	}
	views := Views(d)
	for _, v := range views {
		b.WriteString(v.Headline + "\n")
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
			fmt.Fprintf(&b, "  claim: %s: %s\n", verdict.ClaimText(c.Claim), strings.ToUpper(c.Verdict))
		}
	}
	for _, v := range views {
		b.WriteString("\n" + v.Header + "\n")
		tw := table.NewWriter()
		tw.SetStyle(PlainStyle())
		head := table.Row{"benchmark", "producers"}
		for _, side := range v.Sides {
			head = append(head, string(side)+" M/s")
		}
		if v.Compared {
			head = append(head, "Δ [95% CI]", "p")
		}
		tw.AppendHeader(head)
		var cols []table.ColumnConfig
		for i := 2; i <= len(head); i++ {
			cols = append(cols, table.ColumnConfig{Number: i, Align: text.AlignRight})
		}
		tw.SetColumnConfigs(cols)
		add := func(c Cells, name, producers string) {
			row := table.Row{name, producers}
			for _, side := range v.Sides {
				row = append(row, c.Terminal.Get(side))
			}
			if v.Compared {
				row = append(row, paint(c.DeltaTerminal, c.Row.Change.Verdict, color), c.PMarked)
			}
			tw.AppendRow(row)
		}
		for _, c := range v.Rates {
			add(c, c.Name, c.Producers)
		}
		if len(v.Ratios) > 0 {
			tw.AppendSeparator()
			for _, c := range v.Ratios {
				add(c, c.Short, c.ShortProducers)
			}
		}
		b.WriteString(tw.Render() + "\n")
		for _, n := range v.Notes {
			b.WriteString("  " + n + "\n")
		}
	}
	return b.String()
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
