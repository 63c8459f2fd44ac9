package changepoint

import (
	"math"
	"strconv"
)

// Point is one level of a line: one commit's figure, the mean of its boots,
// with what says how much evidence it is.
type Point struct {
	Value float64
	// N is how many boots Value is the mean of; 0 counts as 1.
	N int
	// Image is the kernel image the boots ran ("" when unknown). Points in
	// a row with one image are one observation: a commit that changed no
	// code repeats its parent's figure, which is no new evidence of a level.
	Image string
}

// Values are plain figures as points of one boot each, of unknown images.
func Values(x []float64) []Point {
	out := make([]Point, len(x))
	for i, v := range x {
		out[i] = Point{Value: v, N: 1}
	}
	return out
}

// DetectPoints is Detect for points that carry their boots and images:
// consecutive points of one image are pooled into one observation first.
// With opt.Exact, every observation is a level of its own (see Exact);
// otherwise the E-divisive means of Detect judge the observations. Indices
// in the answer are into points: a change point is the first point of the
// new level.
func DetectPoints(points []Point, opt Options) []ChangePoint {
	obs, first := pool(points)
	var out []ChangePoint
	if opt.Exact {
		out = steps(obs, opt)
	} else {
		x := make([]float64, len(obs))
		for i, o := range obs {
			x[i] = o.Value
		}
		out = eDivisive(x, opt)
	}
	for i := range out {
		out[i].Index = first[out[i].Index]
	}
	return out
}

// pool merges each run of consecutive finite points of one known image into
// one point (their boots' mean), skipping points that are not finite. It
// returns the observations and the index in points of each one's first.
func pool(points []Point) (obs []Point, first []int) {
	for i, p := range points {
		if math.IsNaN(p.Value) || math.IsInf(p.Value, 0) {
			continue
		}
		n := max(p.N, 1)
		if k := len(obs) - 1; k >= 0 && p.Image != "" && obs[k].Image == p.Image {
			o := &obs[k]
			o.Value = (o.Value*float64(o.N) + p.Value*float64(n)) / float64(o.N+n)
			o.N += n
			continue
		}
		obs = append(obs, Point{Value: p.Value, N: n, Image: p.Image})
		first = append(first, i)
	}
	return obs, first
}

// Judgeable says whether a line of these points has enough observations
// for opt to find a change in it, and if not, why.
func Judgeable(points []Point, opt Options) (bool, string) {
	obs, _ := pool(points)
	need := 2
	if !opt.Exact {
		need = 2 * opt.normalized().MinSegment
	}
	if len(obs) >= need {
		return true, ""
	}
	return false, tooFew(len(obs), need)
}

func tooFew(have, need int) string {
	what := "observations"
	if have == 1 {
		what = "observation"
	}
	return "too few points to judge: " + strconv.Itoa(have) + " " + what + " of distinct images in a row, at least " + strconv.Itoa(need) + " needed"
}

// steps is the Exact detector: a change point wherever an observation
// differs from the one before it by at least MinPct and by at least
// MinSigma standard errors of the two, each observation's sd being
// NoiseSD of its value over the square root of its boots. The segments
// either side run to the neighbouring change points.
func steps(obs []Point, opt Options) []ChangePoint {
	var at []int
	var ps []float64
	for i := 1; i < len(obs); i++ {
		a, b := obs[i-1], obs[i]
		pct := relPct(a.Value, b.Value, a.Value)
		if math.Abs(pct) < opt.MinPct || pct == 0 {
			continue
		}
		se := opt.NoiseSD * math.Abs(a.Value) * math.Sqrt(1/float64(a.N)+1/float64(b.N))
		p := 0.0
		if se > 0 {
			z := math.Abs(b.Value-a.Value) / se
			if z < opt.MinSigma {
				continue
			}
			p = math.Erfc(z / math.Sqrt2)
		}
		at = append(at, i)
		ps = append(ps, p)
	}
	out := make([]ChangePoint, len(at))
	for k, i := range at {
		lo, hi := 0, len(obs)
		if k > 0 {
			lo = at[k-1]
		}
		if k+1 < len(at) {
			hi = at[k+1]
		}
		before, after := weighted(obs[lo:i]), weighted(obs[i:hi])
		out[k] = ChangePoint{
			Index: i, Before: before.mean, After: after.mean, SDBefore: before.sd, SDAfter: after.sd,
			NBefore: before.n, NAfter: after.n, P: ps[k],
			Pct:     relPct(before.mean, after.mean, before.mean),
			StepPct: relPct(obs[i-1].Value, obs[i].Value, before.mean),
		}
	}
	return out
}

// weighted describes a segment of observations: its points' mean weighted
// by their boots, and the sd of the observations about it.
func weighted(obs []Point) segment {
	s := segment{n: len(obs)}
	var w float64
	for _, o := range obs {
		s.mean += o.Value * float64(o.N)
		w += float64(o.N)
	}
	if w == 0 {
		return s
	}
	s.mean /= w
	if s.n < 2 {
		return s
	}
	var ss float64
	for _, o := range obs {
		ss += (o.Value - s.mean) * (o.Value - s.mean)
	}
	s.sd = math.Sqrt(ss / float64(s.n-1))
	return s
}

// RepeatSD is the relative sd of one boot's figure, estimated from repeats
// of one image (groups: each image's boot figures), pooled over the
// images with more than one boot; 0 with none, or when they repeat exactly.
func RepeatSD(groups [][]float64) float64 {
	var ss, df float64
	for _, g := range groups {
		s := describe(g)
		if s.n < 2 || s.mean == 0 {
			continue
		}
		for _, v := range g {
			d := (v - s.mean) / s.mean
			ss += d * d
		}
		df += float64(s.n - 1)
	}
	if df == 0 {
		return 0
	}
	return math.Sqrt(ss / df)
}
