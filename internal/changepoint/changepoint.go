// Package changepoint finds where a series of figures (one per commit, in
// commit order) moved to a new level, the way Apache Otava does: E-divisive
// means (Matteson and James) splits the series where the distributions
// either side differ most, and a t-test instead of a permutation test says
// whether the split is real, so the answer repeats. Splitting recurses
// within sliding windows (Otava's windowed variant, so long series stay
// fast), then the weakest splits are dropped until every one left is
// significant (Otava's merge step). Last, a minimum effect says which of
// the real changes are worth reporting: a size in percent, a step rather
// than a stretch of a ramp, and for the wall clock a multiple of the
// segments' spread (Chromeperf's filters).
//
// Where it departs from Otava, and why: each segment must have MinSegment
// points, so a spike is never a change (Otava #150); the t-test is Welch's
// with each side's variance at least the pooled one, robust both to a
// spike in a short segment and to a short segment quiet by chance; a split
// is also tested over the stretch where the divergence peaked, so that an
// excursion of a few points (a regression fixed three commits later) is
// found; and a change too small to report still bounds its neighbours'
// segments, since a layout shift is a real level.
//
// The package only computes: it reads no store and knows nothing of
// commits; an index is a position in the series given.
package changepoint

import (
	"math"
	"slices"
)

// Options tune Detect. ICount and Wall give lab's defaults for each clock.
type Options struct {
	// MaxP is the significance level of the t-test a change must pass
	// (Otava's default, 0.001, when 0). Splitting inside the windows uses
	// a first pass at ten times this, as Otava does, so that a change is
	// not missed for being weak in its window alone.
	MaxP float64
	// Window is the length of the sliding windows the splitting looks at
	// (overlapping by half; at least two segments long); 0 looks at the
	// whole series at once, which costs O(n²).
	Window int
	// MinSegment is the fewest points a level must have either side of a
	// change (at least 2, the least a t-test can use): an excursion shorter
	// than this, such as a single spike, is never a change point, and a
	// change fewer than this many points before the end is not yet found.
	MinSegment int
	// MinPct is the least relative change of the segment means (Pct), in
	// percent, that is reported (0: any).
	MinPct float64
	// MinSteppiness is the least share of the change of the means that
	// happens where the segments meet (StepPct/Pct) for a change to be
	// reported (0: any). A ramp, each commit moving a figure a little the
	// same way, is cut by the t-test into pieces whose means differ, but
	// no commit in it stands out from its neighbours: its pieces meet
	// with no step, so it has no change point. (Comparing the ends of the
	// series finds a ramp.) Chromeperf's steppiness filter has the same
	// aim; its measure differs.
	MinSteppiness float64
	// MinSigma is the least change of the segment means, in standard
	// deviations of the points about their segment's mean (pooled over
	// both segments), that is reported (0: any): Chromeperf's "multiple of
	// std dev" filter, except that Chromeperf takes the smaller of the two
	// segments' deviations, which a short segment can make small by chance
	// (pure noise at the wall clock's 3 % passed it).
	MinSigma float64
	// Exact judges figures that repeat to their last digits between boots
	// of one image (icount, with the guest held deterministic): each
	// observation is a level of its own, however short, so a step at
	// either end of a line or two steps one commit apart are found. A
	// change is a step between neighbouring observations of at least
	// MinPct and, when NoiseSD is set, of at least MinSigma standard
	// errors. MaxP, Window, MinSegment and MinSteppiness do not apply.
	Exact bool
	// NoiseSD is, for Exact, the relative sd of one boot's figure (see
	// RepeatSD): what the boots of one image show, at least what the
	// caller knows images without a code change to differ by.
	NoiseSD float64
}

// DefaultMaxP is Otava's default significance level.
const DefaultMaxP = 0.001

// DefaultWindow is Otava's default window, and Chromeperf's.
const DefaultWindow = 50

// ICount is the default for figures under QEMU's instruction counter. The
// guest is held deterministic (vm.ICountFixes), so boots of one image give
// one figure to the last digit, and one point is a level: Exact. Boots
// that drew different random streams, as two images without a code change
// do, agree within 0.0003 % (docs/validation.md); 0.01 % is the least
// change reported. MinSigma guards lines whose boots of one image do
// scatter (histories from before the guest was held still).
func ICount() Options {
	return Options{Exact: true, MinPct: 0.01, MinSigma: 5}
}

// ICountGoProducers is the default for icount figures of agents whose
// producers were goroutines (histories from before protocol.Method): the
// random stream moved the Go runtime's wake-ups, and uprobe rows between
// two levels 0.065 % apart in images without a code change; 0.08 % is the
// least change reported in those lines.
func ICountGoProducers() Options {
	return Options{Exact: true, MinPct: 0.08, MinSigma: 5}
}

// Wall is the default for wall-clock figures, Chromeperf's filters: a
// change of at least 1 % and 2.5 standard deviations between segments of
// at least 6 points, half of it a step. Under TCG the wall clock varies
// 2-5 % between boots and drifts, so only large steps pass.
func Wall() Options {
	return Options{MaxP: DefaultMaxP, Window: DefaultWindow, MinSegment: 6, MinPct: 1, MinSigma: 2.5, MinSteppiness: 0.5}
}

// ChangePoint is one change of level.
type ChangePoint struct {
	// Index is the first point of the new level, in the points given to
	// Detect (points that are not finite count in the index but nowhere
	// else: segments and means are of the finite points).
	Index int `json:"index"`
	// Before and After are the means of the segments either side: from the
	// previous significant change (reported or not) to this one, and from
	// this one to the next.
	Before float64 `json:"before"`
	After  float64 `json:"after"`
	// SDBefore and SDAfter are the segments' sample standard deviations.
	SDBefore float64 `json:"sd_before"`
	SDAfter  float64 `json:"sd_after"`
	// Pct is the relative change of the means, (After-Before)/|Before| ×
	// 100; ±Inf when Before is 0 and After is not.
	Pct float64 `json:"pct"`
	// StepPct is the change where the segments meet, in percent of
	// |Before|: each segment's least-squares line evaluated there. Between
	// level segments it is Pct give or take the noise; between two pieces
	// of a ramp it is about zero.
	StepPct float64 `json:"step_pct"`
	// P is the two-sided p-value of the t-test between the segments
	// (Welch's, each side's variance at least the pooled one).
	P float64 `json:"p"`
	// NBefore and NAfter are the segments' sizes in points.
	NBefore int `json:"n_before"`
	NAfter  int `json:"n_after"`
}

// Detect returns the change points of points, in order. Points that are
// NaN or infinite are skipped (a failed measurement is not a level);
// empty or short input has no change point. The answer depends only on
// points and opt.
func Detect(points []float64, opt Options) []ChangePoint {
	if opt.Exact {
		return DetectPoints(Values(points), opt)
	}
	return eDivisive(points, opt)
}

// eDivisive is Detect for figures that scatter from boot to boot.
func eDivisive(points []float64, opt Options) []ChangePoint {
	opt = opt.normalized()
	// pos maps an index among the finite points back to points.
	var x []float64
	var pos []int
	for i, v := range points {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			x = append(x, v)
			pos = append(pos, i)
		}
	}
	if len(x) < 2*opt.MinSegment {
		return nil
	}
	weak := split(x, opt)
	strong := merge(x, weak, opt)
	var out []ChangePoint
	for _, c := range strong {
		if opt.passes(c) {
			c.Index = pos[c.Index]
			out = append(out, c)
		}
	}
	return out
}

func (o Options) normalized() Options {
	if o.MaxP <= 0 {
		o.MaxP = DefaultMaxP
	}
	o.MinSegment = max(o.MinSegment, 2)
	if o.Window > 0 {
		// A shorter window could not be split at all.
		o.Window = max(o.Window, 2*o.MinSegment)
	} else {
		o.Window = 0
	}
	return o
}

// firstPassP is the level of the splitting inside windows, Otava's: ten
// times the final level below 0.05.
func (o Options) firstPassP() float64 {
	switch {
	case o.MaxP < 0.05:
		return o.MaxP * 10
	case o.MaxP < 0.5:
		return o.MaxP * 2
	}
	return o.MaxP
}

// passes applies the minimum effect. The change is measured between the
// levels either side, even when a neighbouring change was too small to
// report: a layout shift is a real level, and folding it into the
// neighbouring segment would misstate the change next to it.
func (o Options) passes(c ChangePoint) bool {
	if o.MinPct > 0 && math.Abs(c.Pct) < o.MinPct {
		return false
	}
	if o.MinSteppiness > 0 && !(c.steppiness() >= o.MinSteppiness) {
		return false
	}
	if o.MinSigma > 0 && math.Abs(c.After-c.Before) < o.MinSigma*c.pooledSD() {
		return false
	}
	return true
}

// steppiness is StepPct/Pct: 1 for a clean step, about 0 inside a ramp,
// NaN when nothing changed. From a mean of 0 both are infinite, and only
// their signs can be compared.
func (c ChangePoint) steppiness() float64 {
	if math.IsInf(c.Pct, 0) {
		if math.Signbit(c.Pct) == math.Signbit(c.StepPct) && c.StepPct != 0 {
			return 1
		}
		return 0
	}
	return c.StepPct / c.Pct
}

// pooledSD is the standard deviation of the points about their segment's
// mean, over both segments.
func (c ChangePoint) pooledSD() float64 {
	df := c.NBefore + c.NAfter - 2
	if df <= 0 {
		return 0
	}
	ss := float64(c.NBefore-1)*c.SDBefore*c.SDBefore + float64(c.NAfter-1)*c.SDAfter*c.SDAfter
	return math.Sqrt(ss / float64(df))
}

// split is Otava's split step: E-divisive within windows of the series,
// each window overlapping the last by half (or starting at the last change
// found), with the first-pass level. It returns the union of the changes
// found, sorted, as indices into x.
func split(x []float64, opt Options) []int {
	n := len(x)
	w := opt.Window
	if w <= 0 || w > n {
		w = n
	}
	step := max(w/2, 1)
	found := map[int]bool{}
	for start := 0; start < n; {
		end := min(start+w, n)
		last := 0
		for _, i := range divide(x[start:end], opt.MinSegment, opt.firstPassP()) {
			found[start+i] = true
			last = max(last, start+i)
		}
		if end == n {
			break
		}
		start = max(last, start+step)
	}
	out := make([]int, 0, len(found))
	for i := range found {
		out = append(out, i)
	}
	slices.Sort(out)
	return out
}

// divide splits y recursively: at the best E-divisive split of each part,
// as long as splitP says the split is real at level p. It returns the
// splits, in no particular order.
func divide(y []float64, minSeg int, p float64) []int {
	tau, kappa, _, ok := bestSplit(y, minSeg)
	if !ok || splitP(y, tau, kappa, minSeg) > p {
		return nil
	}
	out := []int{tau}
	out = append(out, divide(y[:tau], minSeg, p)...)
	for _, i := range divide(y[tau:], minSeg, p) {
		out = append(out, tau+i)
	}
	return out
}

// splitP is how surely y[:tau] and what follows differ. Otava tests y[:tau]
// against all of y[tau:]; but when the divergence peaked at a κ short of
// the end, the points from τ to κ may be an excursion that the rest of
// y[tau:] dilutes (a regression fixed three commits later), so y[tau:kappa]
// is tested too. κ was chosen among the len(y)-tau-minSeg+1 ends possible,
// so that test's p is multiplied by their number (Bonferroni): without it,
// noise under the wall clock yields short "excursions".
func splitP(y []float64, tau, kappa, minSeg int) float64 {
	left := describe(y[:tau])
	p := welchP(left, describe(y[tau:]))
	if kappa < len(y) {
		ends := float64(len(y) - tau - minSeg + 1)
		p = math.Min(p, ends*welchP(left, describe(y[tau:kappa])))
	}
	return p
}

// merge is Otava's merge step without its magnitude test: with the
// segments between the candidate changes, it drops the change the t-test
// supports least (a segment shorter than MinSegment counts as no support)
// and measures its neighbours again, until every change left is
// significant at MaxP.
func merge(x []float64, idx []int, opt Options) []ChangePoint {
	cps := make([]ChangePoint, len(idx))
	for i, at := range idx {
		cps[i].Index = at
	}
	measure := func(i int) {
		lo, hi := 0, len(x)
		if i > 0 {
			lo = cps[i-1].Index
		}
		if i+1 < len(cps) {
			hi = cps[i+1].Index
		}
		cps[i] = measured(x, lo, cps[i].Index, hi, opt.MinSegment)
	}
	for i := range cps {
		measure(i)
	}
	for len(cps) > 0 {
		weakest := 0
		for i, c := range cps {
			if c.P > cps[weakest].P {
				weakest = i
			}
		}
		if cps[weakest].P <= opt.MaxP {
			break
		}
		cps = slices.Delete(cps, weakest, weakest+1)
		if weakest > 0 {
			measure(weakest - 1)
		}
		if weakest < len(cps) {
			measure(weakest)
		}
	}
	return cps
}

// measured describes the change at i between the segments x[lo:i] and
// x[i:hi].
func measured(x []float64, lo, i, hi, minSeg int) ChangePoint {
	b, a := describe(x[lo:i]), describe(x[i:hi])
	c := ChangePoint{
		Index: i, Before: b.mean, After: a.mean, SDBefore: b.sd, SDAfter: a.sd,
		NBefore: b.n, NAfter: a.n, P: 1,
	}
	if b.n >= minSeg && a.n >= minSeg {
		c.P = welchP(b, a)
	}
	c.Pct = relPct(b.mean, a.mean, b.mean)
	// Where the segments meet: half a point before i.
	at := float64(i) - 0.5
	c.StepPct = relPct(lineAt(x[lo:i], lo, at), lineAt(x[i:hi], i, at), b.mean)
	return c
}

// relPct is the change from one to another in percent of |base|; ±Inf when
// base is 0 and they differ.
func relPct(from, to, base float64) float64 {
	switch {
	case base != 0:
		return (to - from) / math.Abs(base) * 100
	case to == from:
		return 0
	}
	return math.Inf(int(math.Copysign(1, to-from)))
}

// lineAt evaluates at position t the least-squares line through y, whose
// first point is at position first; with fewer than three points the line
// is flat (two points would give it their noise as a slope).
func lineAt(y []float64, first int, t float64) float64 {
	s := describe(y)
	if s.n < 3 {
		return s.mean
	}
	center := float64(first) + float64(s.n-1)/2
	var sxy, sxx float64
	for k, v := range y {
		d := float64(first+k) - center
		sxy += d * (v - s.mean)
		sxx += d * d
	}
	return s.mean + sxy/sxx*(t-center)
}
