package report

import (
	"fmt"
	"strings"

	"lab/internal/variant"
	"lab/internal/verdict"
)

// Every report lays its tables out one way: a column per kernel (the
// baseline and each series of a run, or each run of lab compare) and, per
// comparison, its change and p. A run of one series is two kernels and one
// comparison, "patched vs baseline", which goes unnamed: its columns read
// "baseline", "patched" and "Δ [95% CI]".

// Grid is one shape's table laid out for every format at once: its header,
// a headline per comparison, which columns its boots can fill, and every
// cell, formatted once. Markdown, HTML, the terminal and the 80-column text
// only choose which of these strings to show where.
type Grid struct {
	Header    string
	Headlines []string
	// Kernels are the kernels with boots in this shape, a column each;
	// Changes the comparisons of two of them, a Δ column each.
	Kernels []variant.Variant
	Changes []Change
	// Medians: some row has a median 95 % CI (n ≥ 6); without one the
	// median columns would read "no 95% CI" in every cell and are left out.
	Medians bool
	Rates   []Line
	Ratios  []Line // within-boot ratios: scaling, probe ÷ probe-free
	Notes   []string
	// blocks are the comparisons with a table of this shape (tables), with
	// or without boots on both sides: the 80-column text shows a block of
	// rows for each.
	blocks []int
	tables []verdict.Table
}

// Change is one comparison's Δ column of a grid.
type Change struct {
	variant.Comparison
	Head string // "Δ [95% CI]", or "Δ v2 vs v1 [95% CI]"
}

// Line is one row of a grid.
type Line struct {
	Name, Producers       string   // "uprobe-nop", "1"
	Short, ShortProducers string   // "uprobe-nop scaling", "2/1"
	Class                 string   // CSS: its change against the first kernel, and "control"
	Sides                 []Side   // by Grid.Kernels
	Changes               []*Cells // by Grid.Changes; nil where that comparison lacks the row
	ratio                 bool
	byComparison          []*Cells // by Document.Comparisons
}

// Side is one kernel's cells of a line.
type Side struct {
	MeanSD   string // "1.03298 ± 0.00001 (n=4)"
	Median   string // "1.03298 [1.03290, 1.03301]"
	Terminal string // "0.612 ± 0.018 (0.612/prod)"
}

// named says whether the comparisons are named in headlines and column
// heads: all but the one of a run of one series, patched vs baseline.
func (d *Document) named() bool {
	return len(d.Comparisons) != 1 || d.Comparisons[0].Comparison != variant.Comparison{Patched: variant.Patched, Against: variant.Baseline}
}

// Grids lines up the comparisons' tables by shape, and their rows by
// benchmark, tool, producers and metric, in the first comparison's order:
// rates first, then within-boot ratios.
func Grids(d *Document) []Grid {
	var out []Grid
	index := map[string]int{}
	rowIndex := []map[string]int{}
	for ci, c := range d.Comparisons {
		for _, t := range c.Tables {
			gi, ok := index[t.Name()]
			if !ok {
				gi = len(out)
				index[t.Name()] = gi
				out = append(out, Grid{Header: gridHeader(d, t)})
				rowIndex = append(rowIndex, map[string]int{})
			}
			g := &out[gi]
			g.blocks, g.tables = append(g.blocks, ci), append(g.tables, t)
			g.Headlines = append(g.Headlines, headline(d, c, t))
			digits := digitsFor(t)
			for ri, rows := range [][]verdict.Row{t.Rows, t.Scaling} {
				for _, r := range rows {
					key := fmt.Sprintf("%s|%s|%s|%d", r.Metric, r.Benchmark, r.Tool, r.Producers)
					cells := cellsOf(r, digits)
					i, ok := rowIndex[gi][key]
					if !ok {
						i = len(g.Rates)
						rowIndex[gi][key] = i
						g.Rates = append(g.Rates, Line{Name: cells.Name, Producers: cells.Producers, Short: cells.Short,
							ShortProducers: cells.ShortProducers, Class: cells.Class, ratio: ri == 1,
							byComparison: make([]*Cells, len(d.Comparisons))})
					}
					g.Rates[i].byComparison[ci] = &cells
				}
			}
		}
	}
	for gi := range out {
		fill(d, &out[gi])
	}
	return out
}

// fill sets a grid's columns, notes and cells once its rows are known.
func fill(d *Document, g *Grid) {
	lines := g.Rates
	g.Rates = nil
	for _, l := range lines {
		if l.ratio {
			g.Ratios = append(g.Ratios, l)
		} else {
			g.Rates = append(g.Rates, l)
		}
	}
	booted := map[variant.Variant]bool{}
	var changed []int // by Changes: the comparison's index
	for i, ci := range g.blocks {
		c, t := d.Comparisons[ci], g.tables[i]
		booted[c.Against] = booted[c.Against] || t.Boots.Baseline > 0
		booted[c.Patched] = booted[c.Patched] || t.Boots.Patched > 0
		if t.Boots.Baseline > 0 && t.Boots.Patched > 0 {
			// Exact (icount) changes have no interval: the seeds' spread
			// is in the notes.
			interval := " [95% CI]"
			if t.Shape.ICount() {
				interval = ""
			}
			head := "Δ" + interval
			if d.named() {
				head = "Δ " + c.Name() + interval
			}
			g.Changes = append(g.Changes, Change{Comparison: c.Comparison, Head: head})
			changed = append(changed, ci)
		}
	}
	for _, k := range d.Kernels {
		if booted[k] {
			g.Kernels = append(g.Kernels, k)
		}
	}
	g.Notes = sharedNotes(d, g.blocks, g.tables)
	for _, lines := range [][]Line{g.Rates, g.Ratios} {
		for i := range lines {
			l := &lines[i]
			for _, k := range g.Kernels {
				l.Sides = append(l.Sides, side(d, l, k))
			}
			for _, ci := range changed {
				l.Changes = append(l.Changes, l.byComparison[ci])
			}
			for _, c := range l.byComparison {
				if c == nil {
					continue
				}
				for _, v := range variant.Both {
					g.Medians = g.Medians || c.Row.Variants.Get(v).HasCI
				}
			}
		}
	}
}

// sharedNotes are the notes of a shape's tables: one every comparison
// shares is said once, one that is not names its comparison.
func sharedNotes(d *Document, blocks []int, tables []verdict.Table) []string {
	count := map[string]int{}
	for _, t := range tables {
		for _, n := range Notes(t) {
			count[n]++
		}
	}
	var out []string
	seen := map[string]bool{}
	for i, t := range tables {
		for _, n := range Notes(t) {
			switch {
			case count[n] == len(tables):
				if !seen[n] {
					seen[n] = true
					out = append(out, n)
				}
			default:
				out = append(out, d.Comparisons[blocks[i]].Name()+": "+n)
			}
		}
	}
	return out
}

// side is kernel k's cells of a line: the baseline side of a comparison
// against it, or the patched side of one of it.
func side(d *Document, l *Line, k variant.Variant) Side {
	for ci, c := range d.Comparisons {
		cells := l.byComparison[ci]
		var v variant.Variant
		switch {
		case cells == nil:
			continue
		case c.Against == k:
			v = variant.Baseline
		case c.Patched == k:
			v = variant.Patched
		default:
			continue
		}
		return Side{MeanSD: cells.MeanSD.Get(v), Median: cells.Median.Get(v), Terminal: cells.Terminal.Get(v)}
	}
	return Side{MeanSD: "–", Median: "–", Terminal: "–"}
}

// gridHeader is a table's line: its shape and how many boots each kernel
// delivered ("5 boots each" in a run of one series, "5+5+5 boots").
func gridHeader(d *Document, t verdict.Table) string {
	h := Header(d.Lab, t)
	if !d.named() {
		return h
	}
	n := map[variant.Variant]int{}
	for _, c := range d.Comparisons {
		for _, ct := range c.Tables {
			if ct.Name() == t.Name() {
				n[c.Against], n[c.Patched] = ct.Boots.Baseline, ct.Boots.Patched
			}
		}
	}
	var parts []string
	for _, k := range d.Kernels {
		parts = append(parts, fmt.Sprint(n[k]))
	}
	return h[:strings.LastIndex(h, " · ")] + " · " + strings.Join(parts, "+") + " boots"
}

// headline is the headline of comparison c's table t, named by c when the
// report names its comparisons.
func headline(d *Document, c Judged, t verdict.Table) string {
	h := Headline(t)
	if !d.named() {
		return h
	}
	return c.Name() + ": " + strings.Replace(h, "patched is ", string(c.Patched)+" is ", 1)
}
