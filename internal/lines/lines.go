// Package lines reads lab's history (internal/history) as lines of levels
// and finds where each line moved (internal/changepoint): the analysis
// that lab track, lab history and the history's writers
// (internal/historyreport) share. A line is one benchmark row of one
// shape, clock, accelerator and host class, along the commits measured.
//
// A level is the boots of one commit in one run: the detector sees one
// point a commit (their mean), as it expects, whatever the number of boots
// a run gave it. A bisect's ends (recorded as its baseline and patched
// boots) are commits of the line like its steps, so they join its steps'
// line. Levels are in the history's order: along the branch where a
// commit's place is known, else by run and boot.
//
// Everything is computed once (Load); the writers render it.
package lines

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"lab/initramfs/protocol"
	"lab/internal/benchmark"
	"lab/internal/changepoint"
	"lab/internal/history"
	"lab/internal/verdict"
)

// Options say what to read and how surely a change is reported.
type Options struct {
	// Lab is the one lab to read, or "" for every lab in the history.
	Lab string
	// MinPct is the least change of a level, in percent, that is reported;
	// below 0, each clock's default (changepoint.ICount, changepoint.Wall).
	MinPct float64
}

// History is the history as lines of levels, each with its change points.
type History struct {
	Where string // the store, as it names itself
	Lab   string // the lab asked for, or ""
	Lines []Line
}

// Line is one line of the history: one benchmark row, shape, clock,
// accelerator and host class of one lab.
type Line struct {
	Key     history.LineKey
	Control bool // a control benchmark: no kernel change should move it
	Levels  []Level
	Options changepoint.Options // what detection used
	Changes []Change
	// TooFew says why the line has too few points for detection to
	// judge it ("" when it has enough): no change point is then no news.
	TooFew string
}

// Level is the boots of one commit in one run.
type Level struct {
	RunID, Kind   string
	Commit        string // "" when the run did not record it
	CommitSeq     int    // its place along the branch; 0: unknown
	Started       time.Time
	LabVersion    string
	KernelKey     string
	ImageSHA256   string
	SourceID      string
	KernelVersion string
	Hosts         []string
	Boots         []int
	Values        []float64
	Mean, SD      float64 // SD: 0 for one boot
}

// Ref names the level where a person's annotation of the change point
// before it is kept: its commit, or its run when it recorded none.
func (l Level) Ref() string {
	if l.Commit != "" {
		return l.Commit
	}
	return "run " + l.RunID
}

// Change is a change point between two levels of a line.
type Change struct {
	changepoint.ChangePoint // Index: the first level of the new level
	// Slower: the figure went down. Every figure lab keeps is a rate or a
	// ratio of rates: higher is better, so down is a regression.
	Slower bool
	// Culprit is what bisecting this change point found (lab track
	// --bisect), nil when it was not bisected.
	Culprit *history.Culprit
	// Annotations are what people said of it (lab serve), oldest first.
	Annotations []history.Annotation
}

// Annotation is the latest word on the change point, nil for none.
func (c Change) Annotation() *history.Annotation {
	if len(c.Annotations) == 0 {
		return nil
	}
	return &c.Annotations[len(c.Annotations)-1]
}

// Dismissed says whether its latest annotation takes the change point out
// of the verdict (expected, or a false positive).
func (c Change) Dismissed() bool {
	a := c.Annotation()
	return a != nil && a.Dismisses()
}

// Load reads every line of the history (of opt.Lab, when set) and finds
// their change points. An unknown lab is an error naming those there are.
func Load(ctx context.Context, s *history.Store, opt Options) (*History, error) {
	keys, err := s.LineKeys(ctx, opt.Lab)
	if err != nil {
		return nil, err
	}
	if len(keys) == 0 && opt.Lab != "" {
		all, err := s.LineKeys(ctx, "")
		if err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("history %s: no lab %q in it (%s)", s, opt.Lab, labsText(all))
	}
	h := &History{Where: s.String(), Lab: opt.Lab}
	points := map[history.LineKey][]history.Point{}
	var order []history.LineKey
	for _, k := range keys {
		pts, err := s.Points(ctx, k)
		if err != nil {
			return nil, err
		}
		for _, p := range pts {
			line := k
			line.Variant = history.LineVariant(p.Kind, k.Variant)
			if _, ok := points[line]; !ok {
				order = append(order, line)
			}
			points[line] = append(points[line], p)
		}
	}
	slices.SortFunc(order, compareKeys)
	for _, k := range order {
		pts := points[k]
		slices.SortStableFunc(pts, ComparePoints)
		sr := Line{Key: k, Control: benchmark.IsControl(k.Benchmark), Levels: levels(pts), Options: detectOptions(k, opt.MinPct)}
		sr.detect()
		h.Lines = append(h.Lines, sr)
	}
	culprits, err := s.Culprits(ctx, opt.Lab)
	if err != nil {
		return nil, err
	}
	h.attach(culprits)
	notes, err := s.Annotations(ctx, opt.Lab)
	if err != nil {
		return nil, err
	}
	h.annotate(notes)
	return h, nil
}

// WithAnnotations is the history with these annotations in place of those
// it was read with: its lines and change points copied, their levels
// shared. For a reader that keeps the analysis while people annotate.
func (h *History) WithAnnotations(notes []history.Annotation) *History {
	out := *h
	out.Lines = slices.Clone(h.Lines)
	for i := range out.Lines {
		out.Lines[i].Changes = slices.Clone(out.Lines[i].Changes)
		for j := range out.Lines[i].Changes {
			out.Lines[i].Changes[j].Annotations = nil
		}
	}
	out.annotate(notes)
	return &out
}

// attach gives each change point the culprit bisected for it: one of its
// line whose bisect named the first commit after the change point, or
// that bisected exactly the commits either side of it.
func (h *History) attach(culprits []history.Culprit) {
	for i := range h.Lines {
		sr := &h.Lines[i]
		for j := range sr.Changes {
			c := &sr.Changes[j]
			before, after := sr.Levels[c.Index-1], sr.Levels[c.Index]
			for k := range culprits {
				cu := &culprits[k]
				if cu.Lab == sr.Key.Lab && cu.Line == sr.Key.String() &&
					((cu.Culprit != "" && cu.Culprit == after.Commit) || (cu.Good == before.Commit && cu.Bad == after.Commit)) {
					c.Culprit = cu
				}
			}
		}
	}
}

// annotate gives each change point what people said of it: the
// annotations of its line at the first commit after it. Indexed once: it
// runs again for every annotation lab serve takes.
func (h *History) annotate(notes []history.Annotation) {
	type at struct{ lab, line, ref string }
	byPoint := map[at][]history.Annotation{}
	for _, a := range notes {
		k := at{a.Lab, a.Line, a.Commit}
		byPoint[k] = append(byPoint[k], a)
	}
	if len(byPoint) == 0 {
		return
	}
	for i := range h.Lines {
		l := &h.Lines[i]
		if len(l.Changes) == 0 {
			continue
		}
		line := l.Key.String()
		for j := range l.Changes {
			c := &l.Changes[j]
			c.Annotations = append(c.Annotations, byPoint[at{l.Key.Lab, line, l.Levels[c.Index].Ref()}]...)
		}
	}
}

func labsText(keys []history.LineKey) string {
	var labs []string
	for _, k := range keys {
		if !slices.Contains(labs, k.Lab) {
			labs = append(labs, k.Lab)
		}
	}
	if len(labs) == 0 {
		return "it is empty"
	}
	return "it holds " + strings.Join(labs, ", ")
}

// detectOptions are the clock's defaults for the line's measuring method,
// with the least change the user gave (minPct >= 0).
func detectOptions(k history.LineKey, minPct float64) changepoint.Options {
	o := changepoint.Wall()
	switch {
	case k.Clock == history.ClockICount && k.Method == "":
		o = changepoint.ICountGoProducers()
	case k.Clock == history.ClockICount:
		o = changepoint.ICount()
		// The floor a verdict has for this method's sample length.
		o.MinPct = verdict.MinICountFloorPctOf(protocol.MethodSample(k.Method), k.Benchmark)
	}
	if minPct >= 0 {
		o.MinPct = minPct
	}
	return o
}

// compareKeys orders lines as the store lists them.
func compareKeys(a, b history.LineKey) int {
	return cmp.Or(cmp.Compare(a.Lab, b.Lab), cmp.Compare(a.Arch, b.Arch), cmp.Compare(a.CPUs, b.CPUs),
		cmp.Compare(a.Topology, b.Topology), cmp.Compare(a.Clock, b.Clock), cmp.Compare(a.Accel, b.Accel),
		cmp.Compare(a.HostClass, b.HostClass), cmp.Compare(a.Method, b.Method), cmp.Compare(a.Variant, b.Variant),
		cmp.Compare(a.Benchmark, b.Benchmark), cmp.Compare(a.Tool, b.Tool), cmp.Compare(a.Producers, b.Producers),
		cmp.Compare(a.Metric, b.Metric))
}

// ComparePoints is the store's order of points: along the branch where the
// commit's place is known, then by the run's start, run and boot; within
// a bisect, its good end first and its bad end last, the steps between
// in the order measured (lab bisect --each measures them in order).
func ComparePoints(a, b history.Point) int {
	seq := 0
	switch {
	case a.CommitSeq == b.CommitSeq:
	case a.CommitSeq == 0:
		seq = 1
	case b.CommitSeq == 0:
		seq = -1
	default:
		seq = cmp.Compare(a.CommitSeq, b.CommitSeq)
	}
	return cmp.Or(seq, a.Started.Compare(b.Started), cmp.Compare(a.RunID, b.RunID),
		cmp.Compare(endRank(a), endRank(b)), cmp.Compare(a.Boot, b.Boot))
}

// endRank places a bisect's ends: its baseline (the good end) first, its
// patched end last.
func endRank(p history.Point) int {
	if p.Kind != history.KindBisect {
		return 0
	}
	switch p.Variant {
	case "baseline":
		return -1
	case "patched":
		return 1
	}
	return 0
}

// levels groups points by run and commit, in the order of each group's
// first point.
func levels(pts []history.Point) []Level {
	type key struct{ run, commit string }
	at := map[key]int{}
	var out []Level
	for _, p := range pts {
		k := key{p.RunID, p.Commit}
		i, ok := at[k]
		if !ok {
			i = len(out)
			at[k] = i
			out = append(out, Level{RunID: p.RunID, Kind: p.Kind, Commit: p.Commit, CommitSeq: p.CommitSeq,
				Started: p.Started, LabVersion: p.LabVersion, KernelKey: p.KernelKey, ImageSHA256: p.ImageSHA256,
				SourceID: p.SourceID, KernelVersion: p.KernelVersion})
		}
		l := &out[i]
		l.Boots = append(l.Boots, p.Boot)
		l.Values = append(l.Values, p.Value)
		if !slices.Contains(l.Hosts, p.HostName) {
			l.Hosts = append(l.Hosts, p.HostName)
		}
	}
	for i := range out {
		out[i].Mean, out[i].SD = MeanSD(out[i].Values)
	}
	return out
}

func MeanSD(v []float64) (mean, sd float64) {
	if len(v) == 0 {
		return math.NaN(), 0
	}
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	if len(v) < 2 {
		return mean, 0
	}
	var ss float64
	for _, x := range v {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / float64(len(v)-1))
}

// detect finds the line's change points over its levels: each level's
// mean, of its boots, of its image. Under icount (Exact) the noise of one
// boot is what the line's repeated images show.
func (s *Line) detect() {
	points := make([]changepoint.Point, len(s.Levels))
	byImage := map[string][]float64{}
	for i, l := range s.Levels {
		points[i] = changepoint.Point{Value: l.Mean, N: len(l.Values), Image: l.ImageSHA256}
		key := l.ImageSHA256
		if key == "" {
			key = fmt.Sprintf("level %d", i) // an unknown image repeats only within its level
		}
		byImage[key] = append(byImage[key], l.Values...)
	}
	if s.Options.Exact {
		groups := make([][]float64, 0, len(byImage))
		for _, g := range byImage {
			groups = append(groups, g)
		}
		s.Options.NoiseSD = max(s.Options.NoiseSD, changepoint.RepeatSD(groups))
	}
	s.Changes, s.TooFew = nil, ""
	if ok, why := changepoint.Judgeable(points, s.Options); !ok {
		s.TooFew = why
		return
	}
	for _, c := range changepoint.DetectPoints(points, s.Options) {
		s.Changes = append(s.Changes, Change{ChangePoint: c, Slower: c.After < c.Before})
	}
}

// ChangeAt is the change point whose new level starts at level i.
func (s *Line) ChangeAt(i int) (Change, bool) {
	for _, c := range s.Changes {
		if c.Index == i {
			return c, true
		}
	}
	return Change{}, false
}

// Boots counts the line's boots.
func (s *Line) Boots() int {
	n := 0
	for _, l := range s.Levels {
		n += len(l.Boots)
	}
	return n
}

// Found is one change point of one line.
type Found struct {
	Line   *Line
	Change Change
}

// Before and After are the levels either side of the change.
func (f Found) Before() Level { return f.Line.Levels[f.Change.Index-1] }
func (f Found) After() Level  { return f.Line.Levels[f.Change.Index] }

// Changes lists every change point of every line, in the lines' order.
func (h *History) Changes() []Found {
	var out []Found
	for i := range h.Lines {
		s := &h.Lines[i]
		for _, c := range s.Changes {
			out = append(out, Found{Line: s, Change: c})
		}
	}
	return out
}

// Movement sums up the change points for CI.
type Movement int

const (
	NoChange    Movement = iota // no change point
	Regression                  // at least one figure went down
	Improvement                 // change points, every one a figure going up
)

// Movement is what the change points amount to; one that people marked
// expected or a false positive does not count.
func (h *History) Movement() Movement {
	out := NoChange
	for _, f := range h.Changes() {
		if f.Change.Dismissed() {
			continue
		}
		if f.Change.Slower {
			return Regression
		}
		out = Improvement
	}
	return out
}

// Labs are the labs of the history's lines, in order.
func (h *History) Labs() []string {
	var out []string
	for _, s := range h.Lines {
		if !slices.Contains(out, s.Key.Lab) {
			out = append(out, s.Key.Lab)
		}
	}
	return out
}

// Group is what lines share when their figures come from the same boots:
// every field of the key but the benchmark row's.
type Group struct {
	Lab, Variant, Arch, Topology, Clock, Accel, HostClass, Method string
	CPUs                                                          int
}

// GroupOf is the group of a line key.
func GroupOf(k history.LineKey) Group {
	return Group{Lab: k.Lab, Variant: k.Variant, Arch: k.Arch, CPUs: k.CPUs, Topology: k.Topology,
		Clock: k.Clock, Accel: k.Accel, HostClass: k.HostClass, Method: k.Method}
}

// Groups lists the groups of the history's lines, in their order.
func (h *History) Groups() []Group {
	var out []Group
	for _, s := range h.Lines {
		if g := GroupOf(s.Key); !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	return out
}

// InGroup lists the lines of one group.
func (h *History) InGroup(g Group) []*Line {
	var out []*Line
	for i := range h.Lines {
		if GroupOf(h.Lines[i].Key) == g {
			out = append(out, &h.Lines[i])
		}
	}
	return out
}
