package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"lab/internal/stats"
	"lab/internal/vm"
)

// digitsFor is how many decimals a table's rates need: icount repeats to
// about 0.01 %.
func digitsFor(t Table) int {
	if t.Shape.Clock == vm.ClockICount {
		return 5
	}
	return 3
}

// rowScale is how a row's values are shown: rates in M/s at the table's
// digits, ratios as they are.
func rowScale(r Row, digits int) (scale float64, d int) {
	if r.Metric != MetricRate {
		return 1, 3
	}
	return 1e6, digits
}

// verdictMark is benchstat's notation: the change, or "~".
func verdictMark(c stats.Change) string {
	if c.Verdict == stats.Same {
		return "~"
	}
	return c.Verdict
}

// Markdown is the report for a cover letter or a pull request.
func Markdown(d *Document) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", d.Title)
	for _, t := range d.Tables {
		fmt.Fprintf(&b, "## %s\n\n", Header(d.Lab, t))
		digits := digitsFor(t)
		b.WriteString("| benchmark | producers | baseline M/s (mean ± sd) | baseline median [95% CI] | patched M/s (mean ± sd) | patched median [95% CI] | Δ [95% CI] | p | |\n")
		b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|---|\n")
		for _, rows := range [][]Row{t.Rows, t.Scaling} {
			for _, r := range rows {
				scale, d := rowScale(r, digits)
				base, pat := r.Variants["baseline"], r.Variants["patched"]
				fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s | %s | %s |\n", r.Name(), r.Producers,
					meanSD(base, scale, d), medianCI(base, scale, d), meanSD(pat, scale, d), medianCI(pat, scale, d),
					deltaCI(r, d+2), pText(r.Change), verdictMark(r.Change))
			}
		}
		b.WriteString("\n")
		for _, n := range Notes(t) {
			fmt.Fprintf(&b, "- %s\n", n)
		}
		b.WriteString("\n")
	}
	if len(d.Claims) > 0 {
		b.WriteString("## Claims\n\n| claim | verdict | evidence |\n|---|---|---|\n")
		for _, c := range d.Claims {
			fmt.Fprintf(&b, "| %s | **%s** | %s |\n", ClaimText(c.Claim), c.Verdict, evidence(c))
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

func writeProvenance(b *strings.Builder, r RunInfo, bullet, code string) {
	fmt.Fprintf(b, "%srun %s (%s), %s\n", bullet, r.RunID, r.Dir, r.Role)
	fmt.Fprintf(b, "%sreproduce: %s%s%s\n", bullet, code, r.Reproducer, code)
	fmt.Fprintf(b, "%slab version %s; complete: %v\n", bullet, r.LabVersion, r.Complete)
	fmt.Fprintf(b, "%skernel source: Linux %s, %s (base commit %s)\n", bullet, r.Source.Version, r.Source.Desc, short(r.Source.Commit))
	fmt.Fprintf(b, "%sseries: %s\n", bullet, r.Series)
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

func evidence(c ClaimResult) string {
	if len(c.Checks) == 0 {
		return "no matching row in this run (producer counts or benchmark not run)"
	}
	var parts []string
	for _, k := range c.Checks {
		why := ""
		if k.Verdict != Reproduced && k.Change.Why != "" {
			why = " (" + k.Change.Why + ")"
		}
		parts = append(parts, fmt.Sprintf("%s, %s: %+.3f %% [%+.3f, %+.3f], p=%.3f → %s%s", k.Table, k.Row, k.Change.Pct, k.Change.Lo, k.Change.Hi, k.Change.P, k.Verdict, why))
	}
	return strings.Join(parts, "; ")
}

// decimals is how many decimals show digits significant digits of v, at
// least digits: ratios like 0.019 need more than rates do.
func decimals(v float64, digits int) int {
	if v == 0 || math.Abs(v) >= 1 {
		return digits
	}
	return max(digits, digits-1-int(math.Floor(math.Log10(math.Abs(v)))))
}

func meanSD(s Summary, scale float64, digits int) string {
	if len(s.PerBoot) == 0 {
		return "–"
	}
	d := decimals(s.Mean/scale, digits)
	if len(s.PerBoot) == 1 {
		return fmt.Sprintf("%.*f (n=1)", d, s.Mean/scale)
	}
	return fmt.Sprintf("%.*f ± %.*f (n=%d)", d, s.Mean/scale, d, s.Stddev/scale, len(s.PerBoot))
}

func medianCI(s Summary, scale float64, digits int) string {
	if len(s.PerBoot) == 0 {
		return "–"
	}
	d := decimals(s.Stats.Median/scale, digits)
	if !s.Stats.HasCI {
		return fmt.Sprintf("%.*f [n=%d: no 95%% CI]", d, s.Stats.Median/scale, len(s.PerBoot))
	}
	return fmt.Sprintf("%.*f [%.*f, %.*f]", d, s.Stats.Median/scale, d, s.Stats.Lo/scale, d, s.Stats.Hi/scale)
}

func pText(c stats.Change) string {
	if c.Why == "no observations" {
		return "–"
	}
	return fmt.Sprintf("%.3f", c.P)
}

// Plain is an 80-column table for mailing lists, in the style of the
// seeds' cover letters: one line per benchmark, medians of boots.
func Plain(d *Document) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", wrap(d.Title, 80, ""))
	for _, t := range d.Tables {
		b.WriteString("\n" + wrap(Header(d.Lab, t), 80, "  ") + "\n")
		fmt.Fprintf(&b, "%-24s %4s %12s %12s %9s %6s\n", "benchmark (M/s)", "P", "baseline", "patched", "change", "p")
		digits := digitsFor(t)
		for _, rows := range [][]Row{t.Rows, t.Scaling} {
			for _, r := range rows {
				scale, dg := rowScale(r, digits)
				name, prod := shortRow(r)
				if len(name) > 24 {
					name = name[:24]
				}
				base, pat := r.Variants["baseline"], r.Variants["patched"]
				fmt.Fprintf(&b, "%-24s %4s %12s %12s %9s %6s %-1s\n", name, prod,
					num(base, scale, dg), num(pat, scale, dg), pct(r, dg), pText(r.Change), mark(r.Change))
			}
		}
		for _, n := range Notes(t) {
			b.WriteString(wrap(n, 80, "  ") + "\n")
		}
	}
	if len(d.Claims) > 0 {
		b.WriteString("\nclaims:\n")
		for _, c := range d.Claims {
			b.WriteString(wrap(fmt.Sprintf("- %s: %s", ClaimText(c.Claim), strings.ToUpper(c.Verdict)), 80, "  ") + "\n")
		}
	}
	for _, c := range d.Caveats {
		b.WriteString(wrap("caveat: "+c, 80, "  ") + "\n")
	}
	for _, r := range d.Runs {
		b.WriteString(wrap("reproduce: "+r.Reproducer, 80, "  ") + "\n")
	}
	return b.String()
}

// shortRow names a row in two short columns: "uprobe-nop scaling", "2/1".
func shortRow(r Row) (name, producers string) {
	switch r.Metric {
	case MetricScaling:
		return r.Benchmark + " scaling", fmt.Sprintf("%d/1", r.Producers)
	case MetricVsFree:
		return r.Benchmark + " ÷free", fmt.Sprint(r.Producers)
	}
	return r.Benchmark, fmt.Sprint(r.Producers)
}

func num(s Summary, scale float64, digits int) string {
	if len(s.PerBoot) == 0 {
		return "–"
	}
	return fmt.Sprintf("%.*f", decimals(s.Mean/scale, digits), s.Mean/scale)
}

func pct(r Row, digits int) string {
	if r.Change.Why == "no observations" {
		return "–"
	}
	return fmt.Sprintf("%+.*f%%", digits-2, r.Change.Pct)
}

func mark(c stats.Change) string {
	if c.Verdict == stats.Same {
		return "~"
	}
	return ""
}

// wrap breaks s at spaces so that no line is longer than width.
func wrap(s string, width int, indent string) string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		switch {
		case line == "":
			line = w
		case len(line)+1+len(w) > width:
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
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Write([]string{"arch", "cpus", "topology", "accel", "clock", "benchmark", "producers", "metric", "control",
		"baseline_n", "baseline_mean", "baseline_stddev", "baseline_median", "baseline_median_lo", "baseline_median_hi",
		"patched_n", "patched_mean", "patched_stddev", "patched_median", "patched_median_lo", "patched_median_hi",
		"change_pct", "change_lo_pct", "change_hi_pct", "p", "verdict", "floor_pct"})
	f := func(v float64) string { return fmt.Sprintf("%.6g", v) }
	for _, t := range d.Tables {
		for _, rows := range [][]Row{t.Rows, t.Scaling} {
			for _, r := range rows {
				rec := []string{t.Shape.Arch, fmt.Sprint(t.Shape.CPUs), t.Shape.Topology, t.Shape.Accel, t.Shape.Clock,
					r.Benchmark, fmt.Sprint(r.Producers), r.Metric, fmt.Sprint(r.Control)}
				for _, v := range []string{"baseline", "patched"} {
					s := r.Variants[v]
					rec = append(rec, fmt.Sprint(len(s.PerBoot)), f(s.Mean), f(s.Stddev), f(s.Stats.Median), f(s.Stats.Lo), f(s.Stats.Hi))
				}
				rec = append(rec, f(r.Change.Pct), f(r.Change.Lo), f(r.Change.Hi), f(r.Change.P), r.Change.Verdict, f(r.Change.FloorPct))
				w.Write(rec)
			}
		}
	}
	w.Flush()
	return buf.String()
}

// JSON is the whole document.
func JSON(d *Document) ([]byte, error) {
	return json.MarshalIndent(d, "", "  ")
}
