// Package bisect finds which step of a series (or which commit of a range)
// moved a figure. The search runs against an Env that measures steps, so
// that the whole algorithm is tested with a fake one in milliseconds; the
// real Env builds each step's kernel (incrementally, from the cache) and
// boots it.
package bisect

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"lab/internal/results"
	"lab/internal/stats"
	"lab/internal/variant"
	"lab/internal/verdict"
	"lab/internal/workpool"
)

// Obs is one boot of one step: the figure followed, and the controls'
// rates (which say how far icount can resolve).
type Obs struct {
	Value    float64
	Controls map[string]float64
}

// SkipError is a step that cannot be measured because of the step itself:
// its kernel does not build, or does not boot. The search goes around it,
// as `git bisect skip` does.
type SkipError struct {
	Why string
	Err error
}

func (e *SkipError) Error() string { return fmt.Sprintf("%s: %v", e.Why, e.Err) }
func (e *SkipError) Unwrap() error { return e.Err }

// Env builds and measures steps 0..N of a bisect: step 0 is the good end
// (baseline), step N the bad end (patched). Image builds step k's kernel
// (from the cache when it can) and returns the image's sha256: builds are
// reproducible, so a step that changes no code has its parent's image.
// Measure boots step k once more. A *SkipError says the step does not build
// or boot; any other error (QEMU cannot start, the disk is full, Ctrl-C)
// stops the search.
type Env interface {
	Steps() int // N: the number of patches or commits
	Image(ctx context.Context, k int) (string, error)
	Measure(ctx context.Context, k int) (Obs, error)
}

// Mode is how a step's boots are judged.
type Mode struct {
	// ICount: figures are path lengths that repeat to ~0.01 %: one boot a
	// step, a second when the first is near an end (3× the floor).
	ICount bool
	// Sample is the agent's sample length under icount (0: a second):
	// shorter samples widen the least floor (verdict.MinICountFloorPctFor).
	Sample time.Duration
	// Benchmark is the followed figure's benchmark: its own least icount
	// floor holds where it needs more than the sample's (a workload's).
	Benchmark string
	// MinBoots per step and per end under the wall clock (the U test
	// cannot reach 0.05 with fewer than 4), doubled while a step is
	// unclear, up to MaxBoots.
	MinBoots, MaxBoots int
	// EndBoots are the boots of each end before the search starts.
	EndBoots int
	// Parallel is how many boots may run at once under icount, where a
	// boot's figures are guest instructions that a guest beside it does
	// not change: the ends' boots, and --each's steps. The wall clock
	// boots one at a time whatever it says (guests side by side measure
	// each other). 0 or 1: one at a time.
	Parallel int
}

// Verdicts of a step.
const (
	LikeGood = "like good"
	LikeBad  = "like bad"
	Neither  = "neither"  // differs from both ends: part of the change, or another one
	Unclear  = "unclear"  // not decided after the most boots allowed
	Skipped  = "skipped"  // does not build or boot
	Untested = "untested" // the search did not need it
	EndGood  = "good end" // step 0
	EndBad   = "bad end"  // step N
	NoCode   = "no code change"
)

// Outcomes of a search.
const (
	Found      = results.Found      // one step (or a range around skipped steps) moved the figure
	NoChange   = "no change"        // the ends do not differ
	Range      = "range"            // skipped steps leave a range of suspects
	Doubt      = "unclear"          // an unclear step, or a series that is not monotonic
	Attributed = results.Attributed // --each: every step measured, the change shared out
	Probed     = "probed"           // --run: one step judged against the ends, for git bisect run
)

// Step is what the search learnt about one step.
type Step struct {
	Index   int
	Obs     []Obs
	Verdict string
	Skip    string // why it was skipped
	Image   string // sha256 of the kernel image, once built
	SameAs  int    // the measured step with the same image, -1 when none
}

// Values are the step's figures, one per boot.
func (s Step) Values() []float64 {
	var v []float64
	for _, o := range s.Obs {
		v = append(v, o.Value)
	}
	return v
}

// Mean of the step's figures.
func (s Step) Mean() float64 { return Mean(s.Values()) }

// Result is the search's answer.
type Result struct {
	Outcome string
	// Culprit is the first step like the bad end; Suspects the steps it may
	// be when skipped steps sit next to it (First..Culprit).
	Culprit  int
	First    int
	Steps    []Step
	Change   stats.Change // bad end against good end
	FloorPct float64      // icount: the smallest change the controls let us resolve
	MinFloor float64      // icount: the least FloorPct can be, for the sample length
	LikePct  float64      // icount: a step this near an end is like it (verdict.LikeEndPct)
	Own      stats.Change // the culprit step against the step before it
	Explains float64      // the culprit's own change over the whole change
	Notes    []string
	Measured int // boots spent, ends included
}

// Search bisects: it measures both ends, stops when they do not differ, then
// halves the range between the last step like good and the first like bad.
func Search(ctx context.Context, env Env, mode Mode) (*Result, error) {
	s := newSearch(env, mode)
	if err := s.ends(ctx); err != nil {
		return s.res, err
	}
	if s.res.Outcome == NoChange {
		return s.res, nil
	}
	lo, hi := 0, s.n
	for hi-lo > 1 {
		k, ok := s.pick(lo, hi)
		if !ok {
			break // only skipped steps left between lo and hi
		}
		v, err := s.judge(ctx, k)
		if err != nil {
			return s.res, err
		}
		switch v {
		case LikeGood, NoCode:
			lo = k
		case LikeBad, Neither:
			hi = k
		case Unclear:
			s.res.Outcome, s.res.First, s.res.Culprit = Doubt, lo+1, hi
			s.note(fmt.Sprintf("step %d stayed unclear after %d boots: the culprit is somewhere in steps %d..%d", k, len(s.res.Steps[k].Obs), lo+1, hi))
			return s.finish(lo, hi), nil
		}
	}
	s.res.Culprit, s.res.First = hi, lo+1
	switch {
	case s.res.First < hi:
		s.res.Outcome = Range
		s.note(fmt.Sprintf("steps %d..%d could not be measured: the culprit is one of steps %d..%d", lo+1, hi-1, lo+1, hi))
	default:
		s.res.Outcome = Found
	}
	return s.finish(lo, hi), nil
}

// Each measures every step, for a patch-by-patch attribution of the change.
func Each(ctx context.Context, env Env, mode Mode) (*Result, error) {
	s := newSearch(env, mode)
	if err := s.ends(ctx); err != nil {
		return s.res, err
	}
	if s.res.Outcome == NoChange {
		return s.res, nil
	}
	var middle []int
	for k := 1; k < s.n; k++ {
		middle = append(middle, k)
	}
	if err := s.prefetch(ctx, middle); err != nil {
		return s.res, err
	}
	for _, k := range middle {
		if s.res.Steps[k].Verdict == Skipped {
			continue // by prefetch: its build failed, and is not retried
		}
		if _, err := s.judge(ctx, k); err != nil {
			return s.res, err
		}
	}
	// The culprit of an attribution is the step with the largest own change.
	best, bestK := -1.0, s.n
	for k := 1; k <= s.n; k++ {
		prev := s.prevMeasured(k)
		if prev < 0 || len(s.values(k)) == 0 {
			continue
		}
		if d := math.Abs(Mean(s.values(k)) - Mean(s.values(prev))); d > best {
			best, bestK = d, k
		}
	}
	s.res.Outcome = Attributed
	s.res.Culprit, s.res.First = bestK, bestK
	return s.finish(s.prevMeasured(bestK), bestK), nil
}

// Probe judges step k alone against the ends, for a bisect someone else
// drives (git bisect run): the ends first, then the step, decided as a
// search decides its steps. The verdict is the step's.
func Probe(ctx context.Context, env Env, mode Mode, k int) (*Result, error) {
	s := newSearch(env, mode)
	if k <= 0 || k >= s.n {
		return s.res, fmt.Errorf("probe step %d of %d: not between the ends", k, s.n)
	}
	if err := s.ends(ctx); err != nil {
		return s.res, err
	}
	if s.res.Outcome == NoChange {
		return s.res, nil
	}
	v, err := s.judge(ctx, k)
	if err != nil {
		return s.res, err
	}
	s.res.Outcome, s.res.Culprit, s.res.First = Probed, k, k
	if v == Neither {
		s.note(fmt.Sprintf("step %d differs from both ends: part of the change, or another one", k))
	}
	return s.res, nil
}

type search struct {
	env  Env
	mode Mode
	n    int
	res  *Result
}

func newSearch(env Env, mode Mode) *search {
	n := env.Steps()
	if mode.MinBoots < stats.MinN() {
		mode.MinBoots = stats.MinN()
	}
	if mode.MaxBoots < mode.MinBoots {
		mode.MaxBoots = 4 * mode.MinBoots
	}
	if mode.EndBoots < 1 {
		mode.EndBoots = mode.MinBoots
		if mode.ICount {
			mode.EndBoots = 2
		}
	}
	res := &Result{Steps: make([]Step, n+1)}
	for k := range res.Steps {
		res.Steps[k] = Step{Index: k, Verdict: Untested, SameAs: -1}
	}
	res.Steps[0].Verdict, res.Steps[n].Verdict = EndGood, EndBad
	return &search{env: env, mode: mode, n: n, res: res}
}

func (s *search) note(n string) { s.res.Notes = append(s.res.Notes, n) }

// boot measures step k once more.
func (s *search) boot(ctx context.Context, k int) error {
	errs, _ := s.bootAll(ctx, []int{k}, stopAlways)
	return errs[0]
}

// workers is how many boots run at once: Mode.Parallel under icount, one
// under the wall clock.
func (s *search) workers() int {
	if !s.mode.ICount {
		return 1
	}
	return max(s.mode.Parallel, 1)
}

// bootAll boots each step of ks once, up to workers() at a time, and adds
// the figures to the steps in the order of ks, not the order the guests
// finish in, so that the record does not depend on which finished first.
// It returns each boot's error, and the index in ks of the one that
// stopped the batch (see workpool.Run), -1 when none did.
func (s *search) bootAll(ctx context.Context, ks []int, stops func(error) bool) ([]error, int) {
	obs := make([]Obs, len(ks))
	errs, stop := workpool.Run(ctx, len(ks), s.workers(), func(ctx context.Context, i int) (err error) {
		obs[i], err = s.env.Measure(ctx, ks[i])
		return err
	}, stops)
	for i, k := range ks {
		if errors.Is(errs[i], workpool.ErrNotStarted) {
			continue
		}
		s.res.Measured++
		if errs[i] == nil {
			s.res.Steps[k].Obs = append(s.res.Steps[k].Obs, obs[i])
		}
	}
	return errs, stop
}

// stopAlways: any failure ends a batch of boots (an end that cannot be
// measured, the infrastructure, Ctrl-C).
func stopAlways(error) bool { return true }

// stopUnlessSkip: a step that does not boot is skipped; anything else ends
// the batch.
func stopUnlessSkip(err error) bool {
	var skip *SkipError
	return !errors.As(err, &skip)
}

// prefetch boots, for --each, what judge would boot of the steps ks, a
// round at a time and up to workers() at once: their kernels first (one
// source tree: one build at a time), then a boot of each step, then a
// second of those near an end. judge then decides each step from these
// boots. Steps that do not build or boot are marked skipped here; a step
// with an image already booted is left to judge (no code change). With one
// worker it does nothing, and judge boots as it always did.
func (s *search) prefetch(ctx context.Context, ks []int) error {
	if s.workers() < 2 {
		return nil
	}
	seen := map[string]bool{s.res.Steps[0].Image: true, s.res.Steps[s.n].Image: true}
	var todo []int
	for _, k := range ks {
		st := &s.res.Steps[k]
		h, err := s.env.Image(ctx, k)
		if s.skipped(k, err) {
			continue
		}
		if err != nil {
			return err
		}
		st.Image = h
		if !seen[h] {
			seen[h] = true
			todo = append(todo, k)
		}
	}
	for len(todo) > 0 {
		var need []int
		for _, k := range todo {
			st := s.res.Steps[k]
			if len(st.Obs) >= s.maxBoots() {
				continue
			}
			if len(st.Obs) > 0 {
				if _, more := s.classify(k); !more {
					continue
				}
			}
			need = append(need, k)
		}
		errs, stop := s.bootAll(ctx, need, stopUnlessSkip)
		if stop >= 0 {
			return errs[stop]
		}
		todo = nil
		for i, k := range need {
			if errs[i] == nil {
				todo = append(todo, k)
			}
			s.skipped(k, errs[i])
		}
	}
	return nil
}

// ends measures both ends, interleaved, and decides whether they differ.
func (s *search) ends(ctx context.Context) error {
	if s.n < 1 {
		return fmt.Errorf("nothing to bisect: the series has no patch")
	}
	for _, k := range []int{0, s.n} {
		h, err := s.env.Image(ctx, k)
		if err != nil {
			return fmt.Errorf("the %s end (step %d): %w", endName(k, s.n), k, err)
		}
		s.res.Steps[k].Image = h
	}
	if s.res.Steps[0].Image == s.res.Steps[s.n].Image {
		s.res.Outcome = NoChange
		s.note("both ends build the same kernel image: the series changes no code")
		return nil
	}
	var ks []int
	for i := 0; i < s.mode.EndBoots; i++ {
		ks = append(ks, 0, s.n)
	}
	if errs, stop := s.bootAll(ctx, ks, stopAlways); stop >= 0 {
		err, k := errs[stop], ks[stop]
		var skip *SkipError
		if errors.As(err, &skip) {
			return fmt.Errorf("the %s end (step %d) cannot be measured: %w", endName(k, s.n), k, err)
		}
		return err
	}
	good, bad := s.res.Steps[0], s.res.Steps[s.n]
	s.res.FloorPct = s.floor()
	s.res.Change = stats.Compare(good.Values(), bad.Values(), s.res.FloorPct)
	differ := s.res.Change.Verdict != stats.Same
	if s.mode.ICount {
		differ = verdict.ICountEndsDiffer(s.res.Change.Pct, s.res.FloorPct)
	}
	s.res.LikePct = verdict.LikeEndPct(s.res.FloorPct, s.res.Change.Pct)
	if !differ {
		s.res.Outcome = NoChange
		s.note(fmt.Sprintf("the ends do not differ: %+.3f %% [%+.3f, %+.3f], p = %.3f; nothing to bisect",
			s.res.Change.Pct, s.res.Change.Lo, s.res.Change.Hi, s.res.Change.P))
	}
	return nil
}

func endName(k, n int) string {
	if k == 0 {
		return "good"
	}
	return "bad"
}

// floor is the smallest change, in percent, this bisect resolves under
// icount (verdict.ICountFloor over the ends' controls and the followed
// figure at each end); 0 under the wall clock, where the U test decides.
func (s *search) floor() float64 {
	if !s.mode.ICount {
		return 0
	}
	good, bad := s.res.Steps[0].Obs, s.res.Steps[s.n].Obs
	names := map[string]bool{}
	for _, o := range append(append([]Obs(nil), good...), bad...) {
		for c := range o.Controls {
			names[c] = true
		}
	}
	var controls []variant.Pair[stats.Summary]
	for c := range names {
		g, b := controlValues(good, c), controlValues(bad, c)
		if len(g) == 0 || len(b) == 0 {
			continue
		}
		controls = append(controls, variant.Pair[stats.Summary]{Baseline: stats.Summarize(g), Patched: stats.Summarize(b)})
	}
	s.res.MinFloor = verdict.MinICountFloorPctOf(s.mode.Sample, s.mode.Benchmark)
	return verdict.ICountFloor(s.res.MinFloor, controls, stats.Summarize(s.res.Steps[0].Values()), stats.Summarize(s.res.Steps[s.n].Values()))
}

func controlValues(obs []Obs, name string) []float64 {
	var v []float64
	for _, o := range obs {
		if x, ok := o.Controls[name]; ok && x > 0 {
			v = append(v, x)
		}
	}
	return v
}

// pick chooses the step to test between lo and hi: the middle, or the
// nearest step to it that was not skipped.
func (s *search) pick(lo, hi int) (int, bool) {
	mid := (lo + hi) / 2
	var cands []int
	for k := lo + 1; k < hi; k++ {
		if s.res.Steps[k].Verdict != Skipped {
			cands = append(cands, k)
		}
	}
	if len(cands) == 0 {
		return 0, false
	}
	sort.SliceStable(cands, func(i, j int) bool { return abs(cands[i]-mid) < abs(cands[j]-mid) })
	return cands[0], true
}

// judge measures step k until it is decided: like good, like bad, neither,
// or unclear at the cap; a step that cannot be measured is skipped.
func (s *search) judge(ctx context.Context, k int) (string, error) {
	st := &s.res.Steps[k]
	if st.Verdict != Untested && len(st.Obs) > 0 {
		return st.Verdict, nil // judged already, in the place of a step with its image
	}
	h, err := s.env.Image(ctx, k)
	if s.skipped(k, err) {
		return Skipped, nil
	}
	if err != nil {
		return "", err
	}
	st.Image = h
	if v, ok := s.sameImage(k, h); ok {
		return v, nil
	}
	if v, ok, err := s.judgeParent(ctx, k, h); err != nil || ok {
		return v, err
	}
	first := 1
	if !s.mode.ICount {
		first = s.mode.MinBoots
	}
	// Boots prefetch made count (under icount: a step's boots need no
	// interleaving with the ends').
	for i := len(st.Obs); i < first; i++ {
		if skipped, err := s.bootStep(ctx, k, i); err != nil {
			return "", err
		} else if skipped {
			return Skipped, nil
		}
	}
	for {
		v, more := s.classify(k)
		if !more || len(st.Obs) >= s.maxBoots() {
			if more {
				v = Unclear
			}
			st.Verdict = v
			return v, nil
		}
		n := len(st.Obs)
		if s.mode.ICount {
			n = 1
		}
		for i := 0; i < n && len(st.Obs) < s.maxBoots(); i++ {
			if skipped, err := s.bootStep(ctx, k, i); err != nil {
				return "", err
			} else if skipped {
				return Skipped, nil
			}
		}
	}
}

// judgeParent judges step k by the step before it when both have the
// image h: step k changes no code (a documentation or comment commit), and
// the step that made the image is booted in its place, so that a step that
// changes no code is never booted. An incremental build of one step more.
func (s *search) judgeParent(ctx context.Context, k int, h string) (string, bool, error) {
	if k-1 <= 0 || s.res.Steps[k-1].Verdict != Untested {
		return "", false, nil
	}
	ph, err := s.env.Image(ctx, k-1)
	if err != nil || ph != h {
		return "", false, nil // a parent that does not build says nothing of step k
	}
	s.res.Steps[k-1].Image = ph
	if _, err := s.judge(ctx, k-1); err != nil {
		return "", false, err
	}
	v, ok := s.sameImage(k, h)
	return v, ok, nil
}

// sameImage judges step k, whose image is h, like a step already measured
// with the same image: the same figure, no boot. Step k changes no code
// when it has an earlier step's image; with a later one's (the bad end's)
// it is that step's culprit or like it, and says so (lab bisect --run:
// bad).
func (s *search) sameImage(k int, h string) (string, bool) {
	st := &s.res.Steps[k]
	for _, other := range s.res.Steps {
		if other.Index == k || other.Image != h || len(other.Obs) == 0 {
			continue
		}
		st.SameAs = other.Index
		s.note(sameImageNote(k, other.Index))
		v := other.Verdict
		switch v {
		case EndGood:
			v = LikeGood
		case EndBad:
			v = LikeBad
		}
		st.Verdict = v
		if other.Index < k {
			st.Verdict = NoCode
		}
		if v == LikeGood {
			return NoCode, true
		}
		return v, true
	}
	return "", false
}

// bootStep boots step k once more (its i-th boot of this round) and,
// under the wall clock, an end after it, alternating, so that drift hits
// the step and the ends alike. skipped: the step does not boot.
func (s *search) bootStep(ctx context.Context, k, i int) (skipped bool, err error) {
	if err := s.bootSkipping(ctx, k); err != nil {
		return false, err
	}
	if s.res.Steps[k].Verdict == Skipped {
		return true, nil
	}
	if !s.mode.ICount {
		return false, s.boot(ctx, []int{0, s.n}[i%2])
	}
	return false, nil
}

// sameImageNote says which steps change no code when step k builds the
// image of step other: the steps after the earlier of the two, up to the
// later. The earlier may well have changed code (a culprit with the bad
// end's image): it is the steps after it that change none.
func sameImageNote(k, other int) string {
	lo, hi := min(k, other), max(k, other)
	which := fmt.Sprintf("steps %d-%d change", lo+1, hi)
	if hi == lo+1 {
		which = fmt.Sprintf("step %d changes", hi)
	}
	return fmt.Sprintf("%s no code: the same kernel image as step %d (step %d judged like step %d, no boot)", which, lo, k, other)
}

func (s *search) maxBoots() int {
	if s.mode.ICount {
		return 2
	}
	return s.mode.MaxBoots
}

// skipped marks step k skipped when err says it does not build or boot,
// and says whether it did.
func (s *search) skipped(k int, err error) bool {
	var skip *SkipError
	if !errors.As(err, &skip) {
		return false
	}
	st := &s.res.Steps[k]
	st.Verdict, st.Skip = Skipped, skip.Error()
	s.note(fmt.Sprintf("step %d skipped: %s", k, skip.Error()))
	return true
}

// bootSkipping boots step k; a SkipError marks the step skipped.
func (s *search) bootSkipping(ctx context.Context, k int) error {
	err := s.boot(ctx, k)
	if s.skipped(k, err) {
		return nil
	}
	return err
}

// classify decides a step from its boots so far; more says another boot
// could decide it.
func (s *search) classify(k int) (verdict string, more bool) {
	st := s.res.Steps[k]
	good, bad := s.res.Steps[0], s.res.Steps[s.n]
	if s.mode.ICount {
		f := st.Mean()
		dGood := 100 * math.Abs(f/good.Mean()-1)
		dBad := 100 * math.Abs(f/bad.Mean()-1)
		floor := s.res.LikePct
		switch {
		case dGood <= floor && dBad > floor:
			verdict = LikeGood
		case dBad <= floor && dGood > floor:
			verdict = LikeBad
		case dGood > floor && dBad > floor:
			verdict = Neither
		default:
			verdict = Unclear
		}
		// Near an end but not within its floor, or undecided: a second
		// boot before trusting one.
		near := math.Min(dGood, dBad)
		more = len(st.Obs) < 2 && (verdict == Unclear || (near > floor && near <= 3*floor))
		return verdict, more
	}
	pGood := stats.Compare(good.Values(), st.Values(), 0)
	pBad := stats.Compare(bad.Values(), st.Values(), 0)
	diffGood, diffBad := pGood.Verdict != stats.Same, pBad.Verdict != stats.Same
	switch {
	case diffGood && !diffBad:
		return LikeBad, false
	case diffBad && !diffGood:
		return LikeGood, false
	case diffGood && diffBad:
		return Neither, false
	}
	return Unclear, true
}

// prevMeasured is the nearest step before k with figures.
func (s *search) prevMeasured(k int) int {
	for j := k - 1; j >= 0; j-- {
		if len(s.values(j)) > 0 {
			return j
		}
	}
	return -1
}

// values are step k's figures, or those of the step with its image.
func (s *search) values(k int) []float64 {
	st := s.res.Steps[k]
	if len(st.Obs) == 0 && st.SameAs >= 0 {
		return s.res.Steps[st.SameAs].Values()
	}
	return st.Values()
}

// finish computes the culprit's own change (the step before it against it)
// and how much of the whole change it explains, and flags a series that is
// not monotonic.
func (s *search) finish(lo, hi int) *Result {
	r := s.res
	if lo >= 0 && r.Steps[hi].Image != "" && r.Steps[hi].Image == r.Steps[lo].Image {
		s.note(fmt.Sprintf("impossible culprit: step %d builds the same image as step %d, so it cannot have moved the figure; the measurements are not to be trusted", hi, lo))
		if r.Outcome == Found {
			r.Outcome = Doubt
		}
	}
	if lo >= 0 && hi <= s.n && len(s.values(lo)) > 0 && len(s.values(hi)) > 0 {
		r.Own = stats.Compare(s.values(lo), s.values(hi), r.FloorPct)
		total := r.Steps[s.n].Mean() - r.Steps[0].Mean()
		if total != 0 {
			r.Explains = (Mean(s.values(hi)) - Mean(s.values(lo))) / total
		}
	}
	lowEnd, highEnd := math.Min(r.Steps[0].Mean(), r.Steps[s.n].Mean()), math.Max(r.Steps[0].Mean(), r.Steps[s.n].Mean())
	margin := (highEnd - lowEnd) * 0.25
	if s.mode.ICount {
		margin = math.Max(margin, lowEnd*r.FloorPct/100)
	}
	var odd []string
	for _, st := range r.Steps[1:s.n] {
		if len(st.Obs) == 0 {
			continue
		}
		if m := st.Mean(); m < lowEnd-margin || m > highEnd+margin {
			odd = append(odd, fmt.Sprintf("step %d", st.Index))
		}
	}
	neither := 0
	for _, st := range r.Steps {
		if st.Verdict == Neither {
			neither++
		}
	}
	if r.Outcome == Attributed {
		// Every step was measured: the table shares the change out, and a
		// figure that goes up then down is there to see.
		return r
	}
	if len(odd) > 0 || neither > 0 || (r.Outcome == Found && (r.Explains < 0.5 || r.Explains > 1.5)) {
		why := fmt.Sprintf("the culprit explains %.0f %% of the change", 100*r.Explains)
		if len(odd) > 0 {
			why = fmt.Sprintf("%v lie outside the range of the ends", odd)
		} else if neither > 0 {
			why = fmt.Sprintf("%d step(s) differ from both ends", neither)
		}
		s.note("the figure does not move in one step from good to bad (" + why + "): the change is spread over several patches, or goes up then down; measure every step with --each")
		if r.Outcome == Found {
			r.Outcome = Doubt
		}
	}
	return r
}

// Mean is the mean of x, 0 when it is empty.
func Mean(x []float64) float64 {
	if len(x) == 0 {
		return 0
	}
	var m float64
	for _, v := range x {
		m += v
	}
	return m / float64(len(x))
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
