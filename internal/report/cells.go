package report

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"lab/internal/stats"
	"lab/internal/variant"
	"lab/internal/verdict"
)

// Cells are one row's figures, formatted once for every format.
type Cells struct {
	Row       verdict.Row
	Name      string // "uprobe-nop", "uprobe-nop p2/p1"
	Producers string // "1"
	// Short and ShortProducers name the row in two narrow columns:
	// "uprobe-nop scaling", "2/1".
	Short, ShortProducers string
	MeanSD                variant.Pair[string] // "1.03298 ± 0.00001 (n=4)"
	Median                variant.Pair[string] // "1.03298 [1.03290, 1.03301]"
	Terminal              variant.Pair[string] // "0.612 ± 0.018 (0.612/prod)"
	Value                 variant.Pair[string] // "1.03298"
	Delta                 string               // "+7.096 % [+7.095, +7.097]"
	DeltaTerminal         string               // at the table's digits
	DeltaShort            string               // "+7.10%"
	P                     string               // "0.029", "–" without data
	PMarked               string               // "0.029  " or "0.690 ~"
	Mark                  string               // "faster", "slower" or "~"
	MarkShort             string               // "~" or ""
	Class                 string               // CSS: faster, slower, same; control
}

// digitsFor is how many decimals a table's rates need: icount repeats to
// about 0.01 %.
func digitsFor(t verdict.Table) int {
	if t.Shape.ICount() {
		return 5
	}
	return 3
}

// rowScale is how a row's values are shown: rates in M/s at the table's
// digits, ratios as they are at three.
func rowScale(r verdict.Row, digits int) (scale float64, d int) {
	if r.Metric != verdict.MetricRate {
		return 1, 3
	}
	return 1e6, digits
}

func cellsOf(r verdict.Row, digits int) Cells {
	scale, d := rowScale(r, digits)
	c := Cells{Row: r, Name: r.Name(), Producers: fmt.Sprint(r.Producers),
		Delta: deltaCI(r, d+2), DeltaTerminal: deltaCI(r, digits), DeltaShort: pct(r, d),
		P: pText(r.Change), PMarked: pMarked(r.Change), Mark: verdictMark(r.Change), MarkShort: markShort(r.Change)}
	c.Short, c.ShortProducers = shortRow(r)
	for _, side := range variant.Both {
		s := r.Variants.Get(side)
		c.MeanSD.Set(side, meanSD(s, scale, d))
		c.Median.Set(side, medianCI(s, scale, d))
		c.Value.Set(side, num(s, scale, d))
		if r.Metric == verdict.MetricRate {
			c.Terminal.Set(side, perProd(s, r.Producers, digits))
		} else {
			c.Terminal.Set(side, ratioCell(s))
		}
	}
	c.Class = r.Change.Verdict
	if c.Class == stats.Same {
		c.Class = "same"
	}
	if r.Control {
		c.Class += " control"
	}
	return c
}

// Headline says in one sentence what moved in a table, by how much and with
// what confidence, in the style of the kernel test robot's "noticed a
// -4.7% regression of will-it-scale.per_process_ops": the rates first, then
// the within-boot ratios, then the controls.
func Headline(t verdict.Table) string {
	name := t.Name()
	b, p := t.Boots.Baseline, t.Boots.Patched
	if b == 0 || p == 0 {
		return fmt.Sprintf("%s: %d baseline and %d patched boots delivered: nothing to compare.", name, b, p)
	}
	d := 1
	if t.Shape.ICount() {
		d = 3
	}
	figure := func(r verdict.Row) string {
		c := r.Change
		switch {
		case c.Exact:
			return r.Label() + " " + c.Words()
		case r.Variants.Baseline.N < 2 || r.Variants.Patched.N < 2:
			return fmt.Sprintf("%s %+.*f %%", r.Label(), d, c.Pct) // one boot a side: no interval, no test
		}
		return fmt.Sprintf("%s %+.*f %% [%+.*f, %+.*f] (p = %.3f)", r.Label(), d, c.Pct, d, c.Lo, d, c.Hi, c.P)
	}
	rates, movedRates := judged(t.Rows)
	ratios, movedRatios := judged(t.Scaling)
	var s string
	switch {
	case len(rates)+len(ratios) == 0:
		return fmt.Sprintf("%s: no benchmark delivered figures on both sides.", name)
	case len(movedRates) > 0:
		s = fmt.Sprintf("%s: patched is %s (%d+%d boots): %s.", name, tally(movedRates, len(rates), "benchmarks"), b, p, top(movedRates, figure))
		if len(movedRatios) > 0 {
			s += fmt.Sprintf(" Within-boot ratios: %s.", tally(movedRatios, len(ratios), ""))
		}
	case len(movedRatios) > 0:
		s = fmt.Sprintf("%s: no rate changed significantly (%d+%d boots), but within-boot ratios did: %s: %s.",
			name, b, p, tally(movedRatios, len(ratios), "ratios"), top(movedRatios, figure))
	default:
		all := append(append([]verdict.Row(nil), rates...), ratios...)
		byEffect(all)
		if minN := stats.MinN(); (b < minN || p < minN) && !all[0].Change.Exact {
			return fmt.Sprintf("%s: with %d+%d boots no change can be significant (%d per variant needed); the largest seen was %s.",
				name, b, p, minN, figure(all[0]))
		}
		return fmt.Sprintf("%s: no row changed significantly (%d rows, %d+%d boots); the largest was %s.", name, len(all), b, p, figure(all[0]))
	}
	var controls []string
	for _, r := range t.AllRows() {
		if r.Control && !r.Change.NoData && r.Change.Verdict != stats.Same {
			controls = append(controls, figure(r))
		}
	}
	if len(controls) > 0 {
		return s + " A control moved too: " + strings.Join(controls, "; ") + "."
	}
	return s + " The controls did not move."
}

// judged returns the rows other than controls that have figures on both
// sides, and those of them that changed significantly, largest first.
func judged(rows []verdict.Row) (all, moved []verdict.Row) {
	for _, r := range rows {
		if r.Control || r.Change.NoData {
			continue
		}
		all = append(all, r)
		if r.Change.Verdict != stats.Same {
			moved = append(moved, r)
		}
	}
	byEffect(moved)
	return all, moved
}

func byEffect(rs []verdict.Row) {
	sort.SliceStable(rs, func(i, j int) bool { return math.Abs(rs[i].Change.Pct) > math.Abs(rs[j].Change.Pct) })
}

// tally says "faster in 6 of 6 benchmarks", or "faster in 2 and slower in 1
// of 8 ratios".
func tally(moved []verdict.Row, of int, what string) string {
	var faster, slower int
	for _, r := range moved {
		if r.Change.Verdict == stats.Faster {
			faster++
		} else {
			slower++
		}
	}
	var parts []string
	if faster > 0 {
		parts = append(parts, fmt.Sprintf("faster in %d", faster))
	}
	if slower > 0 {
		parts = append(parts, fmt.Sprintf("slower in %d", slower))
	}
	return strings.TrimSpace(fmt.Sprintf("%s of %d %s", strings.Join(parts, " and "), of, what))
}

// top shows the three largest changes and counts the rest.
func top(moved []verdict.Row, figure func(verdict.Row) string) string {
	var shown []string
	for i, r := range moved {
		if i == 3 {
			shown = append(shown, fmt.Sprintf("%d more", len(moved)-3))
			break
		}
		shown = append(shown, figure(r))
	}
	return strings.Join(shown, "; ")
}

// ClaimsLine sums the claims up: "claims: 5 reproduced, 1 not shown (of 6)".
func ClaimsLine(claims []verdict.ClaimResult) string {
	if len(claims) == 0 {
		return ""
	}
	count := map[string]int{}
	for _, c := range claims {
		count[c.Verdict]++
	}
	var parts []string
	for _, v := range []string{verdict.Reproduced, verdict.Contradicts, verdict.NotShown, verdict.NotMeasured} {
		if count[v] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", count[v], v))
		}
	}
	return fmt.Sprintf("claims: %s (of %d)", strings.Join(parts, ", "), len(claims))
}

// verdictMark is benchstat's notation: the change, or "~".
func verdictMark(c stats.Change) string {
	if c.Verdict == stats.Same {
		return "~"
	}
	return c.Verdict
}

func markShort(c stats.Change) string {
	if c.Verdict == stats.Same {
		return "~"
	}
	return ""
}

// decimals is how many decimals show digits significant digits of v, at
// least digits: ratios like 0.019 need more than rates do.
func decimals(v float64, digits int) int {
	if v == 0 || math.Abs(v) >= 1 {
		return digits
	}
	return max(digits, digits-1-int(math.Floor(math.Log10(math.Abs(v)))))
}

func meanSD(s verdict.Summary, scale float64, digits int) string {
	if s.N == 0 {
		return "–"
	}
	d := decimals(s.Mean/scale, digits)
	if s.N == 1 {
		return fmt.Sprintf("%.*f (n=1)", d, s.Mean/scale)
	}
	return fmt.Sprintf("%.*f ± %.*f (n=%d)", d, s.Mean/scale, d, s.Stddev/scale, s.N)
}

func medianCI(s verdict.Summary, scale float64, digits int) string {
	if s.N == 0 {
		return "–"
	}
	d := decimals(s.Median/scale, digits)
	if !s.HasCI {
		return fmt.Sprintf("%.*f [n=%d: no 95%% CI]", d, s.Median/scale, s.N)
	}
	return fmt.Sprintf("%.*f [%.*f, %.*f]", d, s.Median/scale, d, s.Lo/scale, d, s.Hi/scale)
}

func num(s verdict.Summary, scale float64, digits int) string {
	if s.N == 0 {
		return "–"
	}
	return fmt.Sprintf("%.*f", decimals(s.Mean/scale, digits), s.Mean/scale)
}

// pText is the p column: the U test's p, or "exact" for a change judged by
// its size (icount figures, stats.CompareExact).
func pText(c stats.Change) string {
	switch {
	case c.NoData:
		return "–"
	case c.Exact:
		return "exact"
	}
	return fmt.Sprintf("%.3f", c.P)
}

func pMarked(c stats.Change) string {
	if c.NoData {
		return ""
	}
	if c.Verdict == stats.Same {
		return pText(c) + " ~"
	}
	return pText(c) + "  "
}

func pct(r verdict.Row, digits int) string {
	if r.Change.NoData {
		return "–"
	}
	return fmt.Sprintf("%+.*f%%", digits-2, r.Change.Pct)
}

func deltaCI(r verdict.Row, digits int) string {
	base, pat := r.Variants.Baseline, r.Variants.Patched
	if base.N == 0 || pat.N == 0 || base.Mean == 0 {
		return "–"
	}
	d := digits - 2
	if base.N < 2 && pat.N < 2 || r.Change.Exact {
		// One boot a side, or exact figures: no interval to give (the
		// seeds' spread is in the notes).
		return fmt.Sprintf("%+.*f %%", d, r.Change.Pct)
	}
	return fmt.Sprintf("%+.*f %% [%+.*f, %+.*f]", d, r.Change.Pct, d, r.Change.Lo, d, r.Change.Hi)
}

func ratioCell(s verdict.Summary) string {
	if s.N == 0 {
		return "–"
	}
	d := decimals(s.Mean, 3)
	if s.N < 2 {
		return fmt.Sprintf("%.*f", d, s.Mean)
	}
	return fmt.Sprintf("%.*f ± %.*f", d, s.Mean, d, s.Stddev)
}

func perProd(s verdict.Summary, producers, digits int) string {
	if s.N == 0 {
		return "–"
	}
	m, sd := s.Mean/1e6, s.Stddev/1e6
	if s.N < 2 {
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

// shortRow names a row in two short columns: "uprobe-nop scaling", "2/1".
func shortRow(r verdict.Row) (name, producers string) {
	switch r.Metric {
	case verdict.MetricScaling:
		return r.Bench() + " scaling", fmt.Sprintf("%d/1", r.Producers)
	case verdict.MetricVsFree:
		return r.Bench() + " ÷free", fmt.Sprint(r.Producers)
	case verdict.MetricVsBench:
		return r.Benchmark + " agent÷bench", fmt.Sprint(r.Producers)
	}
	return r.Bench(), fmt.Sprint(r.Producers)
}
