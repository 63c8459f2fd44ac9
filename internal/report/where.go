package report

import (
	"fmt"
	"strings"

	"lab/internal/insnprof"
	"lab/internal/results"
	"lab/internal/stackprof"
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
	// Sampled is the block of a wall-clock row, from the kernels' sampled
	// profiles (stackprof); the instruction profile's fields then name
	// only the row.
	Sampled *stackprof.Where `json:"sampled,omitempty"`
}

// wheres are the where-blocks of comparison c's rows that both its kernels
// have a profile of: under icount, rates the agent measured, controls left
// out; a block for each row that moved, and for a row that did not but
// whose profile shows a function's instructions a hit changed (a path
// change under the floor). On the wall clock, from the sampled profiles,
// the same: a block for each row that moved, and for one whose profile
// shows a share that moved beyond the sampling's noise (a change the
// wall clock's figures under TCG are too noisy to show). profiled says whether both kernels had profiles
// at all, so that a report can say "nowhere" for a comparison without a
// block.
func wheres(r *results.Run, c Judged) (out []WhereMoved, profiled bool) {
	for _, t := range c.Tables {
		method := ""
		if !t.Shape.ICount() {
			method = stackprof.Method
		}
		for _, row := range t.Rows {
			if row.Control || !row.Agent() || row.Change.NoData {
				continue
			}
			a, okA := profileOf(r, t, row, c.Against, method)
			b, okB := profileOf(r, t, row, c.Patched, method)
			if !okA || !okB {
				continue
			}
			profiled = true
			if method == stackprof.Method {
				if sw := stackprof.Diff(a, b); row.Change.Verdict != stats.Same || len(sw.Lines) > 0 {
					out = append(out, WhereMoved{Table: t.Name(), Row: row.Label(),
						Where: insnprof.Where{Benchmark: row.Benchmark, Producers: row.Producers}, Sampled: &sw})
				}
				continue
			}
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

// profileOf is kernel k's profile of row in table t's shape, taken by
// method (results.Profile.Method).
func profileOf(r *results.Run, t verdict.Table, row verdict.Row, k variant.Variant, method string) (results.ProfileResult, bool) {
	for _, p := range r.Profiles {
		if p.Arch != t.Shape.Arch || p.Topology != t.Shape.Topology || p.Variant != k || !p.Same || p.Method != method {
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
			if c.Tables[0].Shape.ICount() {
				fmt.Fprintf(&b, "\nwhere it moved, %s%s: nowhere: no row moved, and no function's instructions a hit changed by %.2f or more\n",
					name, c.Tables[0].Name(), insnprof.MinDelta)
			} else {
				fmt.Fprintf(&b, "\nwhere it moved, %s%s: nowhere: no row moved, and no function's share of the sampled stacks changed beyond the sampling's noise\n", name, c.Tables[0].Name())
			}
		}
		for i, w := range c.Where {
			if i == 0 || c.Where[i-1].Table != w.Table {
				how := "exact: every instruction counted in one profiled boot a kernel"
				if w.Sampled != nil {
					how = fmt.Sprintf("sampled: kernel stacks, %s at %d Hz a CPU, in one more sample of each benchmark in the first boot of each kernel; shares as the kernel test robot's perf-profile self and children",
						w.Sampled.Event, w.Sampled.Hz)
				}
				fmt.Fprintf(&b, "\nwhere it moved, %s%s (%s → %s; %s):\n", name, w.Table, c.Against, c.Patched, how)
			}
			if w.Sampled != nil {
				b.WriteString(w.Sampled.Text("  "))
				continue
			}
			b.WriteString(w.Text("  "))
		}
	}
	return b.String()
}
