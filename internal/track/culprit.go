package track

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"lab/internal/bisect"
	"lab/internal/gitcmd"
	"lab/internal/history"
	"lab/internal/lines"
	"lab/internal/results"
	"lab/internal/testbed"
)

// Suspect is one change point of the tracked branch to bisect: the last
// commit measured before it and the first after, and the series that moved
// there (several rows often move at one commit: they are bisected once).
type Suspect struct {
	Good, Bad Commit
	Series    []history.LineKey
	Figure    results.Figure // the figure a bisect follows: the row that moved most
	Pct       float64        // its change
	Slower    bool
	control   bool // Figure is a control's
}

// Adjacent reports whether Bad is the commit right after Good: the change
// point is its own culprit, nothing to bisect.
func (s Suspect) Adjacent() bool { return s.Bad.Seq == s.Good.Seq+1 }

// Suspected reads the lab's lines from the history and gives the change
// points a track of this host and these shapes can bisect: lines of the
// track's shapes, clocks and accelerators on hosts of its class (a
// history may hold other hosts' and shapes' lines), not a run's variants.
func Suspected(ctx context.Context, store *history.Store, lab string, res *Result, minPct float64) (*lines.History, []Suspect, error) {
	h, err := lines.Load(ctx, store, lines.Options{Lab: lab, MinPct: minPct})
	if err != nil {
		return nil, nil, err
	}
	host := res.Run.Host
	hostPrefix := strings.TrimSuffix(history.Host{CPUModel: host.CPUModel, CPUs: host.CPUs}.Class(), "unknown")
	keep := func(k history.LineKey) bool {
		if k.Variant != "" || !strings.HasPrefix(k.HostClass, hostPrefix) {
			return false
		}
		return slices.ContainsFunc(res.Plans, func(p testbed.ShapePlan) bool {
			return p.Arch.Name == k.Arch && p.Shape.CPUs == k.CPUs && p.Clock == k.Clock && p.Accel.Name == k.Accel
		})
	}
	return h, Suspects(h, keep), nil
}

// Suspects are the change points of the history's series that keep
// accepts, grouped by the commits either side, oldest first. A change
// point without commits and places on both sides (a run's variants, not
// a branch) is not a suspect.
func Suspects(h *lines.History, keep func(history.LineKey) bool) []Suspect {
	type ends struct{ good, bad string }
	byEnds := map[ends]*Suspect{}
	var order []ends
	for _, f := range h.Changes() {
		k := f.Line.Key
		if !keep(k) || k.Tool != "" {
			continue // a guest tool's figure: lab bisect follows the agent's
		}
		before, after := f.Before(), f.After()
		if before.Commit == "" || after.Commit == "" || before.CommitSeq == 0 || after.CommitSeq <= before.CommitSeq {
			continue
		}
		e := ends{before.Commit, after.Commit}
		s, ok := byEnds[e]
		if !ok {
			s = &Suspect{Good: Commit{Hash: before.Commit, Seq: before.CommitSeq}, Bad: Commit{Hash: after.Commit, Seq: after.CommitSeq}}
			byEnds[e] = s
			order = append(order, e)
		}
		s.Series = append(s.Series, k)
		// The figure: a benchmark's before a control's, then the largest
		// change.
		better := len(s.Series) == 1 || (s.control && !f.Line.Control) ||
			(s.control == f.Line.Control && math.Abs(f.Change.Pct) > math.Abs(s.Pct))
		if better {
			s.Figure = results.Figure{Benchmark: k.Benchmark, Producers: k.Producers, Scaling: k.Metric == history.MetricScaling}
			s.Pct, s.Slower, s.control = f.Change.Pct, f.Change.Slower, f.Line.Control
		}
	}
	var out []Suspect
	for _, e := range order {
		out = append(out, *byEnds[e])
	}
	slices.SortStableFunc(out, func(a, b Suspect) int { return cmp.Compare(a.Bad.Seq, b.Bad.Seq) })
	return out
}

// Bisector bisects good..bad following fig and says what it found: the
// bisect's outcome, the culprit commit ("" when none) and its run id.
type Bisector func(ctx context.Context, good, bad string, fig results.Figure) (outcome, culprit, runID string, err error)

// Adjacent is the outcome of a suspect whose ends are neighbours.
const Adjacent = "adjacent"

// Resolve finds each suspect's culprit: the first commit after the change
// point when it follows the last one before directly, else by bisect; and
// writes it into the history for every series that moved there. A bisect
// that fails stops the rest (what was found is kept).
func Resolve(ctx context.Context, store *history.Store, lab string, sus []Suspect, bisect Bisector, logf func(string, ...any)) ([]history.Culprit, error) {
	var out []history.Culprit
	for _, s := range sus {
		c := history.Culprit{Lab: lab, Good: s.Good.Hash, Bad: s.Bad.Hash}
		if s.Adjacent() {
			c.Culprit, c.Outcome = s.Bad.Hash, Adjacent
			logf("culprit: %s (%s %+.3f %%): the first commit after the change point follows the last before it", gitcmd.Short(s.Bad.Hash), s.Figure, s.Pct)
		} else {
			logf("bisect: %s..%s (%d commits), following %s (%+.3f %%)", gitcmd.Short(s.Good.Hash), gitcmd.Short(s.Bad.Hash), s.Bad.Seq-s.Good.Seq, s.Figure, s.Pct)
			outcome, culprit, runID, err := bisect(ctx, s.Good.Hash, s.Bad.Hash, s.Figure)
			if err != nil {
				return out, fmt.Errorf("bisect of %s..%s: %w", gitcmd.Short(s.Good.Hash), gitcmd.Short(s.Bad.Hash), err)
			}
			c.Culprit, c.Outcome, c.BisectRun = culprit, outcome, runID
			logf("bisect %s: %s %s", runID, outcome, gitcmd.Short(culprit))
		}
		for _, k := range s.Series {
			c.Line = k.String()
			if err := store.AddCulprit(ctx, c); err != nil {
				return out, err
			}
			out = append(out, c)
		}
	}
	return out, nil
}

// Command is the lab bisect command line that bisects a suspect: what
// lab track --bisect --print prints for a person (or a scheduler) to run.
// extra are the flags that choose the lab's shape, as track was given them.
func Command(labFile string, s Suspect, extra []string) string {
	args := []string{"lab", "bisect", labFile, "--good", s.Good.Hash, "--bad", s.Bad.Hash, "--benchmark", s.Figure.Benchmark,
		"--producers", fmt.Sprint(s.Figure.Producers)}
	if s.Figure.Scaling {
		args = append(args, "--scaling")
	}
	args = append(args, extra...)
	return strings.Join(args, " ")
}

// EndObs are the history's boots of a suspect's ends, as lab bisect takes
// them (the followed figure, the controls' rates of the same boot), so
// that a bisect of a tracked branch boots no end again. Under icount only:
// wall-clock boots of another session are not comparable with new ones.
func EndObs(h *lines.History, s Suspect) *bisect.Ends {
	var fig *lines.Line
	for i := range h.Lines {
		k := h.Lines[i].Key
		if slices.Contains(s.Series, k) && k.Benchmark == s.Figure.Benchmark && k.Producers == s.Figure.Producers &&
			(k.Metric == history.MetricScaling) == s.Figure.Scaling {
			fig = &h.Lines[i]
			break
		}
	}
	if fig == nil || fig.Key.Clock != history.ClockICount {
		return nil
	}
	// The controls of the same shape: one boot's rate each.
	var controls []*lines.Line
	for i := range h.Lines {
		k := h.Lines[i].Key
		if h.Lines[i].Control && k.Producers == 1 && k.Metric == history.MetricRate && k.Tool == "" &&
			k.Lab == fig.Key.Lab && k.Variant == fig.Key.Variant && k.Arch == fig.Key.Arch && k.CPUs == fig.Key.CPUs &&
			k.Topology == fig.Key.Topology && k.Clock == fig.Key.Clock && k.Accel == fig.Key.Accel && k.HostClass == fig.Key.HostClass && k.Method == fig.Key.Method {
			controls = append(controls, &h.Lines[i])
		}
	}
	obs := func(commit string) []bisect.Obs {
		var out []bisect.Obs
		for _, l := range fig.Levels {
			if l.Commit != commit {
				continue
			}
			for j, boot := range l.Boots {
				o := bisect.Obs{Value: l.Values[j], Controls: map[string]float64{}}
				for _, c := range controls {
					if v, ok := valueOf(c, l.RunID, commit, boot); ok {
						o.Controls[c.Key.Benchmark] = v
					}
				}
				out = append(out, o)
			}
		}
		return out
	}
	e := &bisect.Ends{Good: obs(s.Good.Hash), Bad: obs(s.Bad.Hash)}
	if len(e.Good) == 0 && len(e.Bad) == 0 {
		return nil
	}
	return e
}

// valueOf is a series' figure of one boot.
func valueOf(s *lines.Line, run, commit string, boot int) (float64, bool) {
	for _, l := range s.Levels {
		if l.RunID != run || l.Commit != commit {
			continue
		}
		if j := slices.Index(l.Boots, boot); j >= 0 {
			return l.Values[j], true
		}
	}
	return 0, false
}
