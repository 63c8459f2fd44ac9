package report

import (
	"fmt"
	"strings"

	"lab/internal/insnprof"
	"lab/internal/results"
	"lab/internal/stats"
	"lab/internal/variant"
	"lab/internal/verdict"
)

// WhereMoved is where a moved row's path changed in the kernel, from the
// run's instruction profiles (results.Profile) of the comparison's two
// kernels.
type WhereMoved struct {
	Table string `json:"table"` // the shape, as tables name it
	Row   string `json:"row"`   // the row's label: "uprobe-nop p=1"
	insnprof.Where
}

// wheres are the where-blocks of comparison c's rows that both its kernels
// have a profile of: under icount, rates the agent measured, controls left
// out; a block for each row that moved, and for a row that did not but
// whose profile shows a function's instructions a hit changed (a path
// change under the floor). profiled says whether both kernels had
// profiles at all, so that a report can say "nowhere" for a comparison
// without a block.
func wheres(r *results.Run, c Judged) (out []WhereMoved, profiled bool) {
	for _, t := range c.Tables {
		if !t.Shape.ICount() {
			continue
		}
		for _, row := range t.Rows {
			if row.Control || !row.Agent() || row.Change.NoData {
				continue
			}
			a, okA := profileOf(r, t, row, c.Against)
			b, okB := profileOf(r, t, row, c.Patched)
			if !okA || !okB {
				continue
			}
			profiled = true
			// The figure is hits per instruction: its path changes by the
			// inverse of its rate.
			measured := (1/(1+row.Change.Pct/100) - 1) * 100
			w := insnprof.Diff(a, b, measured)
			if row.Change.Verdict != stats.Same || len(w.Rows) > 0 {
				out = append(out, WhereMoved{Table: t.Name(), Row: row.Label(), Where: w})
			}
		}
	}
	return out, profiled
}

// profileOf is kernel k's profile of row in table t's shape.
func profileOf(r *results.Run, t verdict.Table, row verdict.Row, k variant.Variant) (results.ProfileResult, bool) {
	for _, p := range r.Profiles {
		if p.Arch != t.Shape.Arch || p.Topology != t.Shape.Topology || p.Variant != k || !p.Same {
			continue
		}
		for _, res := range p.Results {
			if res.Benchmark == row.Benchmark && res.Producers == row.Producers && res.Tool == "" {
				return res, true
			}
		}
	}
	return results.ProfileResult{}, false
}

// WhereText is every where-block of the document as text for a terminal
// or a mail: a heading per comparison, then each row's functions.
func WhereText(d *Document) string {
	var b strings.Builder
	for _, c := range d.Comparisons {
		name := ""
		if d.named() {
			name = c.Name() + ", "
		}
		if c.Profiled && len(c.Where) == 0 {
			fmt.Fprintf(&b, "\nwhere it moved, %s%s: nowhere: no row moved, and no function's instructions a hit changed by %.2f or more\n",
				name, c.Tables[0].Name(), insnprof.MinDelta)
		}
		for i, w := range c.Where {
			if i == 0 || c.Where[i-1].Table != w.Table {
				fmt.Fprintf(&b, "\nwhere it moved, %s%s (%s → %s; exact: every instruction counted in one profiled boot a kernel):\n",
					name, w.Table, c.Against, c.Patched)
			}
			b.WriteString(w.Text("  "))
		}
	}
	return b.String()
}
