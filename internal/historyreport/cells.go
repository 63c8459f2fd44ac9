package historyreport

import (
	"fmt"
	"math"
	"strings"

	"lab/internal/gitcmd"
	"lab/internal/history"
	"lab/internal/lines"
)

// The cells every format lays out: what lab history lists, what lab history
// detect prints and the report's tables, each computed once here.

// GroupTitle names a group: lab, line, guest shape, accelerator and clock, host
// class, and the agent's measuring method when it named one.
func GroupTitle(g lines.Group) string {
	t := fmt.Sprintf("%s · %s · %s · %s %s · %s", g.Lab, lineName(g.Variant), shapeText(g.Arch, g.CPUs, g.Topology), g.Accel, g.Clock, g.HostClass)
	if g.Method != "" {
		t += " · " + g.Method
	}
	return t
}

// lineName is what a series follows: a variant of lab run, or the commits
// of a branch and of bisects.
func lineName(variant string) string {
	if variant == "" {
		return "commits"
	}
	return variant
}

func shapeText(arch string, cpus int, topology string) string {
	s := fmt.Sprintf("%s %d vCPU", arch, cpus)
	if cpus > 1 {
		s += "s"
	}
	// The plain shape, one socket of single-thread cores, goes without
	// saying.
	if topology != fmt.Sprintf("sockets=1,clusters=1,cores=%d,threads=1", cpus) {
		s += " (" + topology + ")"
	}
	return s
}

// RowName is a series' benchmark row as the tables show it.
func RowName(k history.LineKey) string {
	s := k.Benchmark
	if k.Tool != "" {
		s += " (" + k.Tool + ")"
	}
	s += fmt.Sprintf(" p%d", k.Producers)
	if k.Metric != history.MetricRate {
		s += " " + k.Metric
	}
	return s
}

// MetricName is a series' row as one word, as LKP and Otava name metrics:
// benchmark[.tool].pN.metric.
func MetricName(k history.LineKey) string {
	parts := []string{k.Benchmark}
	if k.Tool != "" {
		parts = append(parts, k.Tool)
	}
	return strings.Join(append(parts, fmt.Sprintf("p%d", k.Producers), k.Metric), ".")
}

// unit says what a metric's figures are, as the tables print them.
func unit(metric string) string {
	if metric == history.MetricScaling {
		return "rate(P)/rate(1)"
	}
	return "M/s"
}

// ValueText prints a figure: a rate in M/s, a ratio as it is.
func ValueText(metric string, v float64) string {
	if metric == history.MetricScaling {
		return fmt.Sprintf("%.4f", v)
	}
	return fmt.Sprintf("%.5f", v/1e6)
}

// MeanText is a level's mean, ± its boots' sd when it has several.
func MeanText(metric string, l lines.Level) string {
	if len(l.Values) < 2 {
		return ValueText(metric, l.Mean)
	}
	return ValueText(metric, l.Mean) + " ± " + ValueText(metric, l.SD)
}

// LevelLabel names a level: its commit, or its run when the commit is unknown.
func LevelLabel(l lines.Level) string {
	if l.Commit != "" {
		return gitcmd.Short(l.Commit)
	}
	return "run " + l.RunID
}

// runText is a level's run and kind.
func runText(l lines.Level) string {
	if l.Kind == history.KindRun {
		return l.RunID
	}
	return l.RunID + " (" + l.Kind + ")"
}

// pctText is a change in percent.
func pctText(pct float64) string {
	if math.IsInf(pct, 0) {
		return fmt.Sprintf("%+v %%", pct)
	}
	return fmt.Sprintf("%+.3f %%", pct)
}

// pText is a p-value as a reader takes it: "< 0.001" below a thousandth.
func pText(p float64) string {
	if p < 0.001 {
		return "< 0.001"
	}
	return fmt.Sprintf("%.3f", p)
}

// ChangeP is how sure a change point of line k is: "exact" for a line of
// exact figures (icount: every boot of an image one figure, and a change
// judged by its size against the floor), else Welch's p between the levels.
func ChangeP(k history.LineKey, c lines.Change) string {
	if k.Clock == history.ClockICount {
		return "exact"
	}
	return pText(c.P)
}

// verdictText says which way a change went.
func verdictText(c lines.Change) string {
	if c.Slower {
		return "slower"
	}
	return "faster"
}

// ChangeMark is a change point of line k as a level's row marks it.
func ChangeMark(k history.LineKey, c lines.Change) string {
	arrow := "▲"
	if c.Slower {
		arrow = "▼"
	}
	if k.Clock == history.ClockICount {
		return fmt.Sprintf("%s %s %s, exact", arrow, verdictText(c), pctText(c.Pct))
	}
	return fmt.Sprintf("%s %s %s, p %s", arrow, verdictText(c), pctText(c.Pct), pText(c.P))
}

// Table is one table of cells under a title: the same for text, Markdown
// and HTML.
type Table struct {
	Title string
	Head  []string
	Right []bool // right-aligned columns
	Rows  [][]string
	// Marked rows hold a change point (HTML colours them): "slower",
	// "faster" or "".
	Marked []string
}

// ListTables are lab history's listing: a table a group, a line a series.
func (h *History) ListTables() []Table {
	var out []Table
	for _, g := range h.Groups() {
		t := Table{Title: GroupTitle(g), Head: []string{"row", "unit", "commits", "boots", "latest", "change points"},
			Right: []bool{false, false, true, true, true, false}}
		for _, s := range h.InGroup(g) {
			last := s.Levels[len(s.Levels)-1]
			t.Rows = append(t.Rows, []string{RowName(s.Key) + controlNote(s), unit(s.Key.Metric), fmt.Sprint(len(s.Levels)),
				fmt.Sprint(s.Boots()), MeanText(s.Key.Metric, last), ChangesText(s)})
			t.Marked = append(t.Marked, changesClass(s))
		}
		out = append(out, t)
	}
	return out
}

func controlNote(s *lines.Line) string {
	if s.Control {
		return " (control)"
	}
	return ""
}

// ChangesText lists a line's change points ("none", or why it has too few levels).
func ChangesText(s *lines.Line) string {
	if s.TooFew != "" {
		return s.TooFew
	}
	if len(s.Changes) == 0 {
		return "none"
	}
	var parts []string
	for _, c := range s.Changes {
		parts = append(parts, fmt.Sprintf("%s at %s", pctText(c.Pct), LevelLabel(s.Levels[c.Index])))
	}
	return strings.Join(parts, "; ")
}

func changesClass(s *lines.Line) string {
	class := ""
	for _, c := range s.Changes {
		if c.Slower {
			return "slower"
		}
		class = "faster"
	}
	return class
}

// CulpritText is what bisecting the change point found: "-" when it was
// not bisected.
func CulpritText(c lines.Change) string {
	cu := c.Culprit
	switch {
	case cu == nil:
		return "-"
	case cu.Culprit == "":
		return cu.Outcome + ", no single commit (" + cu.BisectRun + ")"
	case cu.BisectRun == "":
		return gitcmd.Short(cu.Culprit) + " (" + cu.Outcome + ")"
	}
	return gitcmd.Short(cu.Culprit) + " (" + cu.BisectRun + ")"
}

// AnnotationText is the latest word people gave the change point
// ("expected: a known cost of the fix (Ann)"), "-" for none.
func AnnotationText(c lines.Change) string {
	a := c.Annotation()
	if a == nil {
		return "-"
	}
	text := a.Label
	if a.Note != "" {
		text += ": " + a.Note
	}
	return text + " (" + a.Author + ")"
}

// ChangeTables are lab history detect's answer: a table a group that has
// change points, a line a change point; an annotation column when people
// annotated one.
func (h *History) ChangeTables() []Table {
	annotated := false
	for _, f := range h.Changes() {
		annotated = annotated || f.Change.Annotation() != nil
	}
	var out []Table
	for _, g := range h.Groups() {
		t := Table{Title: GroupTitle(g), Head: []string{"row", "before", "after", "change", "p", "levels (commits)", "", "culprit"},
			Right: []bool{false, false, false, true, true, true, false, false}}
		if annotated {
			t.Head, t.Right = append(t.Head, "annotation"), append(t.Right, false)
		}
		for _, s := range h.InGroup(g) {
			for _, c := range s.Changes {
				b, a := s.Levels[c.Index-1], s.Levels[c.Index]
				row := []string{RowName(s.Key) + controlNote(s), LevelLabel(b) + " · " + runText(b), LevelLabel(a) + " · " + runText(a),
					pctText(c.Pct), ChangeP(s.Key, c), fmt.Sprintf("%d | %d", c.NBefore, c.NAfter), verdictText(c), CulpritText(c)}
				if annotated {
					row = append(row, AnnotationText(c))
				}
				t.Rows = append(t.Rows, row)
				t.Marked = append(t.Marked, verdictText(c))
			}
		}
		if len(t.Rows) > 0 {
			out = append(out, t)
		}
	}
	return out
}

// LevelTables are the report's tables: a table a group, a line a level of
// each series, change points marked where the new level starts.
func (h *History) LevelTables() []Table {
	var out []Table
	for _, g := range h.Groups() {
		t := Table{Title: GroupTitle(g), Head: []string{"row", "commit", "run", "boots", "value", "change point"},
			Right: []bool{false, false, false, true, true, false}}
		for _, s := range h.InGroup(g) {
			for i, l := range s.Levels {
				name := ""
				if i == 0 {
					name = RowName(s.Key) + controlNote(s) + " (" + unit(s.Key.Metric) + ")"
				}
				commit := gitcmd.Short(l.Commit)
				if commit == "" {
					commit = "—"
				}
				mark, class := "", ""
				if c, ok := s.ChangeAt(i); ok {
					mark, class = ChangeMark(s.Key, c), verdictText(c)
				}
				t.Rows = append(t.Rows, []string{name, commit, runText(l), fmt.Sprint(len(l.Boots)), MeanText(s.Key.Metric, l), mark})
				t.Marked = append(t.Marked, class)
			}
		}
		out = append(out, t)
	}
	return out
}

// Summary is one line on what the change points amount to.
func (h *History) Summary() string {
	slower, faster, dismissed := 0, 0, 0
	for _, f := range h.Changes() {
		switch {
		case f.Change.Dismissed():
			dismissed++
		case f.Change.Slower:
			slower++
		default:
			faster++
		}
	}
	levels, boots := 0, 0
	for i := range h.Lines {
		levels += len(h.Lines[i].Levels)
		boots += h.Lines[i].Boots()
	}
	s := fmt.Sprintf("%s (%d levels, %d figures): ", plural(len(h.Lines), "line"), levels, boots)
	if dismissed > 0 {
		s += fmt.Sprintf("%s marked expected or a false positive, ", plural(dismissed, "change point"))
		if slower+faster == 0 {
			return s + "no other"
		}
	}
	switch {
	case slower+faster == 0:
		return s + "no change point"
	case slower == 0:
		return s + plural(faster, "change point") + ", each faster: no regression"
	case faster == 0:
		return s + plural(slower, "change point") + ", each slower: a regression"
	}
	return s + fmt.Sprintf("%s: %d slower (a regression), %d faster", plural(slower+faster, "change point"), slower, faster)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// detectNote says what counts as a change, for every format's footer.
func (h *History) detectNote() string {
	var parts []string
	seen := map[string]bool{}
	for _, s := range h.Lines {
		if seen[s.Key.Clock] {
			continue
		}
		seen[s.Key.Clock] = true
		o := s.Options
		p := fmt.Sprintf("%s: levels of at least %d commits, a change of at least %g %% at p < %g", s.Key.Clock, o.MinSegment, o.MinPct, o.MaxP)
		if o.MinSigma > 0 {
			p += fmt.Sprintf(" and %g sd", o.MinSigma)
		}
		parts = append(parts, p)
	}
	return "change points: E-divisive means with Welch's t-test over each line's levels (one a commit and run); " +
		strings.Join(parts, "; ") + ". Slower: the figure went down (rates: higher is better)."
}
