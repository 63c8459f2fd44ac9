// Command paired measures, on the committed example runs, whether judging
// baseline against patched on pairs (Wilcoxon signed-rank on per-pair
// ratios, stats.ComparePaired: what reports use for boots from several
// hosts) finds the real effects with fewer boots than the unpaired test
// single-host reports use (Mann-Whitney U, stats.Compare).
//
// For each example and n = 2 .. boots per variant it keeps the first n
// rounds (a round is a baseline boot and the patched boot after it) and
// judges every non-control row both ways, with the table's own icount
// floor. The reference is what is real: under icount a change beyond the
// floor at full n (instruction counts repeat to ~0.01 %, so that is the
// truth); under the wall clock the unpaired verdict at full n.
//
//	go run ./bench/paired [-glob 'results/examples/*/*/results.json']
package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"text/tabwriter"

	"lab/internal/results"
	"lab/internal/stats"
	"lab/internal/variant"
	"lab/internal/verdict"
)

func main() {
	glob := flag.String("glob", "results/examples/*/*/results.json", "the runs to measure")
	rows := flag.Bool("rows", false, "also print, at full n, every row on which the two tests disagree")
	flag.Parse()
	if err := measureAll(*glob, *rows, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "paired:", err)
		os.Exit(1)
	}
}

// verdicts are one row's judgements.
type judgement struct {
	unpaired, paired stats.Change
}

// line is one (example, n) of the table.
type line struct {
	example                  string
	clock                    string
	n, rows, ref             int
	sigU, sigP, agree        int
	foundU, foundP           int // reference effects found, same direction
	falseU, falseP           int // significant where the reference sees nothing
	minPairsP, minPerVariant int
	// widthU, widthP are the median width of the rows' 95 % intervals of
	// the change, in percentage points: does pairing remove noise?
	widthU, widthP float64
}

func measureAll(glob string, rows bool, out io.Writer) error {
	files, err := filepath.Glob(glob)
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no runs match %s", glob)
	}
	sort.Strings(files)
	var lines []line
	for _, f := range files {
		l, err := measure(f)
		if err != nil {
			return err
		}
		if l == nil {
			fmt.Fprintf(out, "skipped %s: fewer than 2 rounds\n", f)
		}
		lines = append(lines, l...)
		if rows {
			if err := printDisagreements(out, f); err != nil {
				return err
			}
		}
	}
	printTable(out, lines)
	printSummary(out, lines)
	return nil
}

// printDisagreements prints the rows of a run, at full n, that the tests
// judge differently, with both changes and p-values.
func printDisagreements(out io.Writer, path string) error {
	r, err := results.Load(path)
	if err != nil {
		return err
	}
	assignRounds(r)
	for key, v := range judge(r) {
		if v.unpaired.Verdict == v.paired.Verdict {
			continue
		}
		fmt.Fprintf(out, "%s: %s: unpaired %+.2f %% p=%.3f %s; paired %+.2f %% p=%.3f %s\n", path, key.row,
			v.unpaired.Pct, v.unpaired.P, v.unpaired.Verdict, v.paired.Pct, v.paired.P, v.paired.Verdict)
	}
	return nil
}

// measure does every n of one example.
func measure(path string) ([]line, error) {
	r, err := results.Load(path)
	if err != nil {
		return nil, err
	}
	assignRounds(r)
	full := rounds(r)
	if full < 2 {
		return nil, nil
	}
	name := filepath.Base(filepath.Dir(filepath.Dir(path))) + "/" + filepath.Base(filepath.Dir(path))
	ref := reference(r, full)
	var out []line
	for n := 2; n <= full; n++ {
		l := line{example: name, n: n, minPairsP: stats.MinPairs(), minPerVariant: stats.MinN()}
		var wu, wp []float64
		for key, v := range judge(firstRounds(r, n)) {
			l.clock = key.clock
			l.add(v, ref[key.row])
			wu, wp = append(wu, v.unpaired.Hi-v.unpaired.Lo), append(wp, v.paired.Hi-v.paired.Lo)
		}
		l.widthU, l.widthP = median(wu), median(wp)
		out = append(out, l)
	}
	return out, nil
}

// add counts one row.
func (l *line) add(v judgement, ref string) {
	u, p := v.unpaired.Verdict, v.paired.Verdict
	l.rows++
	if ref != stats.Same {
		l.ref++
	}
	count := func(got string, sig, found, falsePos *int) {
		if got == stats.Same {
			return
		}
		*sig++
		switch {
		case got == ref:
			*found++
		case ref == stats.Same:
			*falsePos++
		}
	}
	count(u, &l.sigU, &l.foundU, &l.falseU)
	count(p, &l.sigP, &l.foundP, &l.falseP)
	if u == p {
		l.agree++
	}
}

// assignRounds numbers each shape's boots of each variant in boot order:
// runs saved before rounds were recorded have them all 0. Boots
// interleave, so the i-th baseline and the i-th patched boot are a pair.
func assignRounds(r *results.Run) {
	seen := map[string]int{}
	for i := range r.Boots {
		b := &r.Boots[i]
		k := shapeOf(*b) + "|" + string(b.Variant)
		b.Round = seen[k]
		seen[k]++
	}
}

func shapeOf(b results.Boot) string {
	s := fmt.Sprintf("%s %d", b.Arch, b.CPUs)
	if b.Shape != nil {
		s += " " + b.Shape.String()
	}
	return s
}

// rounds is how many whole pairs every shape has.
func rounds(r *results.Run) int {
	count := map[string]int{}
	for _, b := range r.Boots {
		count[shapeOf(b)+"|"+string(b.Variant)]++
	}
	n := math.MaxInt
	for _, c := range count {
		n = min(n, c)
	}
	if n == math.MaxInt {
		return 0
	}
	return n
}

func firstRounds(r *results.Run, n int) *results.Run {
	sub := *r
	sub.Boots = nil
	for _, b := range r.Boots {
		if b.Round < n {
			sub.Boots = append(sub.Boots, b)
		}
	}
	return &sub
}

// rowKey names a row across subsamples.
type rowKey struct{ clock, row string }

// judge gives every non-control row of every table both verdicts.
func judge(r *results.Run) map[rowKey]judgement {
	out := map[rowKey]judgement{}
	for _, t := range verdict.Tables(r) {
		clock := t.Shape.Clock.Get(variant.Baseline)
		for _, row := range t.AllRows() {
			if row.Control {
				continue
			}
			base, pat := verdict.PairUp(row.Variants)
			out[rowKey{clock, tableName(t) + " " + row.Label()}] = judgement{
				unpaired: stats.Compare(row.Variants.Baseline.Values, row.Variants.Patched.Values, t.FloorPct),
				paired:   stats.ComparePaired(base, pat, t.FloorPct),
			}
		}
	}
	return out
}

func tableName(t verdict.Table) string { return t.Shape.Arch + " " + t.Shape.Topology }

// reference is each row's real effect (faster, slower, or ~): under icount
// a change beyond the table's floor at full n, under the wall clock the
// unpaired verdict at full n.
func reference(r *results.Run, full int) map[string]string {
	ref := map[string]string{}
	for key, v := range judge(firstRounds(r, full)) {
		c := v.unpaired
		if key.clock == "icount" {
			switch {
			case math.Abs(c.Pct) <= c.FloorPct:
				ref[key.row] = stats.Same
			case c.Pct > 0:
				ref[key.row] = stats.Faster
			default:
				ref[key.row] = stats.Slower
			}
			continue
		}
		ref[key.row] = c.Verdict
	}
	return ref
}

func printTable(out io.Writer, lines []line) {
	w := tabwriter.NewWriter(out, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "example\tclock\tn\trows\treal\tsig unpaired\tsig paired\tagree\tfound U\tfound P\tfalse U\tfalse P\tCI width U\tCI width P\t")
	for _, l := range lines {
		fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d/%d\t%d/%d\t%d\t%d\t%.3f\t%.3f\t\n", l.example, l.clock, l.n, l.rows, l.ref,
			l.sigU, l.sigP, l.agree, l.foundU, l.ref, l.foundP, l.ref, l.falseU, l.falseP, l.widthU, l.widthP)
	}
	w.Flush()
	if len(lines) > 0 {
		fmt.Fprintf(out, "n: rounds (boots per variant); U: Mann-Whitney U (needs %d per variant for p < %.2f); P: Wilcoxon signed-rank on pairs (needs %d pairs)\n",
			lines[0].minPerVariant, stats.Alpha, lines[0].minPairsP)
		fmt.Fprintln(out, "real: icount, a change beyond the table's floor at full n; wall clock, the unpaired verdict at full n. CI width: median over rows of the 95 % interval, percentage points")
	}
}

// printSummary says, per example, the fewest rounds with which each test
// found every real effect (and kept finding them), and their false alarms.
func printSummary(out io.Writer, lines []line) {
	byEx := map[string][]line{}
	var order []string
	for _, l := range lines {
		if _, ok := byEx[l.example]; !ok {
			order = append(order, l.example)
		}
		byEx[l.example] = append(byEx[l.example], l)
	}
	fmt.Fprintln(out, "\nfewest rounds that find every real effect, and stay found:")
	for _, ex := range order {
		ls := byEx[ex]
		last := ls[len(ls)-1]
		fmt.Fprintf(out, "  %-42s %s, %d real of %d rows: unpaired %s, paired %s; false alarms: unpaired %d, paired %d (over every n)\n",
			ex, last.clock, last.ref, last.rows, firstAll(ls, func(l line) int { return l.foundU }), firstAll(ls, func(l line) int { return l.foundP }),
			sum(ls, func(l line) int { return l.falseU }), sum(ls, func(l line) int { return l.falseP }))
	}
}

func median(x []float64) float64 {
	if len(x) == 0 {
		return 0
	}
	x = append([]float64(nil), x...)
	sort.Float64s(x)
	return x[len(x)/2]
}

func firstAll(ls []line, found func(line) int) string {
	if ls[len(ls)-1].ref == 0 {
		return "-"
	}
	first := 0
	for i := len(ls) - 1; i >= 0 && found(ls[i]) == ls[i].ref; i-- {
		first = ls[i].n
	}
	if first == 0 {
		return fmt.Sprintf("not within %d", ls[len(ls)-1].n)
	}
	return fmt.Sprintf("n=%d", first)
}

func sum(ls []line, f func(line) int) int {
	s := 0
	for _, l := range ls {
		s += f(l)
	}
	return s
}
