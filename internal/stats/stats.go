// Package stats compares baseline and patched observations (one per boot) the
// way benchstat does: medians with distribution-free confidence intervals and
// a two-sided Mann-Whitney U test, through golang.org/x/perf/benchmath. On top
// it gives the change a confidence interval and an effect-size floor, because
// a p-value alone flags meaningless orderings when the noise is tiny (icount).
package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"

	"golang.org/x/perf/benchmath"
)

// Alpha is the significance level, as benchstat's default.
const Alpha = 0.05

// Confidence is the level of every interval.
const Confidence = 0.95

// Summary is one variant's observations.
type Summary struct {
	N      int       `json:"n"`
	Values []float64 `json:"values"`
	Mean   float64   `json:"mean"`
	Stddev float64   `json:"stddev"` // sample standard deviation
	Median float64   `json:"median"`
	Lo     float64   `json:"median_lo"` // 95 % CI of the median, when HasCI
	Hi     float64   `json:"median_hi"`
	// HasCI is false when there are too few observations for a
	// distribution-free interval at 95 % (fewer than 6).
	HasCI    bool     `json:"has_ci"`
	Warnings []string `json:"warnings,omitempty"`
}

// CV is the relative spread (stddev/mean), 0 when undefined.
func (s Summary) CV() float64 {
	if s.Mean == 0 || s.N < 2 {
		return 0
	}
	return s.Stddev / math.Abs(s.Mean)
}

// Summarize describes observations. Values keeps them in the order given
// (boot order): benchmath sorts the copy it works on.
func Summarize(values []float64) Summary {
	values = slices.Clone(values)
	s := Summary{N: len(values), Values: values}
	if s.N == 0 {
		return s
	}
	for _, v := range values {
		s.Mean += v
	}
	s.Mean /= float64(s.N)
	if s.N > 1 {
		var ss float64
		for _, v := range values {
			ss += (v - s.Mean) * (v - s.Mean)
		}
		s.Stddev = math.Sqrt(ss / float64(s.N-1))
	}
	sum := benchmath.AssumeNothing.Summary(sample(values), Confidence)
	s.Median = sum.Center
	if !math.IsInf(sum.Lo, 0) && !math.IsInf(sum.Hi, 0) && !math.IsNaN(sum.Lo) && !math.IsNaN(sum.Hi) {
		s.Lo, s.Hi, s.HasCI = sum.Lo, sum.Hi, true
	}
	for _, w := range sum.Warnings {
		s.Warnings = append(s.Warnings, w.Error())
	}
	return s
}

// Verdicts of a comparison.
const (
	Faster = "faster"
	Slower = "slower"
	Same   = "~" // not significant, as benchstat prints it
)

// Change is patched against baseline.
type Change struct {
	// Pct is (patched/baseline − 1) × 100 of the means: what kernel cover
	// letters quote. The medians and their intervals are in the Summaries.
	Pct float64 `json:"pct"`
	// Lo and Hi bound Pct at 95 % (bootstrap over boots, fixed seed so that
	// a report is reproducible).
	Lo float64 `json:"pct_lo"`
	Hi float64 `json:"pct_hi"`
	P  float64 `json:"p,omitempty"` // two-sided Mann-Whitney U; none for an exact change
	// Exact: the figures are exact (QEMU's instruction counter), so the
	// change is judged by its size against the floor, not by a test over
	// boots that repeat to the last digit (CompareExact). Lo and Hi are
	// then the range of the change over the boots' seeds.
	Exact bool `json:"exact,omitempty"`
	// Seeds is how many boots (each its own random seed) each side had
	// at least, and SpreadPct how far apart a side's seeds were at most,
	// in percent of its mean: the part of a figure the random stream moves.
	Seeds     int     `json:"seeds,omitempty"`
	SpreadPct float64 `json:"spread_pct,omitempty"`
	// FloorPct is the smallest change counted as real here (0: none); see
	// Compare.
	FloorPct float64 `json:"floor_pct,omitempty"`
	Verdict  string  `json:"verdict"` // Faster, Slower or Same; for rates, higher is faster
	Why      string  `json:"why,omitempty"`
	// NoData: one side has no observation, so nothing was compared.
	NoData bool `json:"no_data,omitempty"`
}

// Compare tests patched against baseline. A change is significant when the
// U test says p < Alpha and, when floorPct > 0, it is also larger than
// floorPct: the size the controls say this measurement cannot resolve.
func Compare(base, pat []float64, floorPct float64) Change {
	c := Change{FloorPct: floorPct, Verdict: Same}
	if len(base) == 0 || len(pat) == 0 {
		c.Why, c.NoData = "no observations", true
		return c
	}
	b, p := Summarize(base), Summarize(pat)
	if b.Mean == 0 {
		c.Why = "baseline mean is 0"
		return c
	}
	c.Pct = (p.Mean/b.Mean - 1) * 100
	c.Lo, c.Hi = bootstrapCI(base, pat)
	cmp := benchmath.AssumeNothing.Compare(sample(base), sample(pat))
	c.P = cmp.P
	switch {
	case c.P >= Alpha:
		c.Why = fmt.Sprintf("p=%.3f ≥ %.2f", c.P, Alpha)
		if min := MinN(); len(base) < min || len(pat) < min {
			c.Why += fmt.Sprintf("; with n=%d+%d no difference can reach p<%.2f (need %d boots per variant)", len(base), len(pat), Alpha, min)
		}
	case floorPct > 0 && math.Abs(c.Pct) <= floorPct:
		c.Why = fmt.Sprintf("|%.3f %%| is within the %.3f %% floor: what the controls, or images without a code change, differ by", c.Pct, floorPct)
	case c.Pct > 0:
		c.Verdict = Faster
	case c.Pct < 0:
		c.Verdict = Slower
	}
	return c
}

// SpreadFloor is how many times the seeds' spread a change must exceed to
// count: a change no larger than the seeds of one kernel differ by is not
// told from another random stream. Once is enough: the least icount floor
// is set above the spread 16 seeds of two images showed (0.0074 % at 1 s
// samples, under 0.01 %; docs/validation.md), so the spread rules only
// when a run meets noise the floor did not foresee; three times a 2-seed
// spread would hide a 0.02 % change whenever the two seeds drew the two
// modes of a row.
const SpreadFloor = 1

// CompareExact judges patched against baseline when every figure is exact
// (QEMU's instruction counter: boots of one image and seed repeat to the
// last digit, boots of other seeds within thousandths of a percent). A U
// test over such boots would call any ordering significant, or (with one
// boot a side) nothing; so the change is significant when it is larger
// than floorPct and than the seeds' spread (SpreadFloor). Lo and Hi
// are the change's range over every pair of one baseline and one patched
// boot.
func CompareExact(base, pat []float64, floorPct float64) Change {
	c := Change{FloorPct: floorPct, Verdict: Same, Exact: true, Seeds: min(len(base), len(pat))}
	if len(base) == 0 || len(pat) == 0 {
		c.Why, c.NoData = "no observations", true
		return c
	}
	b, p := Summarize(base), Summarize(pat)
	if b.Mean == 0 {
		c.Why = "baseline mean is 0"
		return c
	}
	c.Pct = (p.Mean/b.Mean - 1) * 100
	c.Lo, c.Hi = math.Inf(1), math.Inf(-1)
	for _, x := range base {
		for _, y := range pat {
			if x != 0 {
				c.Lo, c.Hi = math.Min(c.Lo, (y/x-1)*100), math.Max(c.Hi, (y/x-1)*100)
			}
		}
	}
	c.SpreadPct = math.Max(spreadPct(base), spreadPct(pat))
	c.FloorPct = math.Max(floorPct, SpreadFloor*c.SpreadPct)
	switch {
	case math.Abs(c.Pct) <= c.FloorPct:
		c.Why = fmt.Sprintf("|%.4f %%| is within the %.3f %% floor", c.Pct, c.FloorPct)
	case c.Pct > 0:
		c.Verdict = Faster
	default:
		c.Verdict = Slower
	}
	return c
}

// CompareFigures is CompareExact for exact figures (icount), Compare
// otherwise.
func CompareFigures(exact bool, base, pat []float64, floorPct float64) Change {
	if exact {
		return CompareExact(base, pat, floorPct)
	}
	return Compare(base, pat, floorPct)
}

// Words say a change as a reader of a cover letter takes it. An exact one:
// "faster by 1.164 % (exact; 2 seeds agree within 0.0001 %; floor
// 0.010 %)", or "+0.0003 %, unchanged (exact; ...)"; one judged by a
// test: "+1.164 % [+1.101, +1.230], p = 0.029".
func (c Change) Words() string {
	switch {
	case c.NoData:
		return "no data"
	case !c.Exact:
		return fmt.Sprintf("%+.3f %% [%+.3f, %+.3f], p = %.3f", c.Pct, c.Lo, c.Hi, c.P)
	}
	var size string
	switch c.Verdict {
	case Faster:
		size = fmt.Sprintf("faster by %.3f %%", c.Pct)
	case Slower:
		size = fmt.Sprintf("slower by %.3f %%", -c.Pct)
	default:
		size = fmt.Sprintf("%+.4f %%, unchanged", c.Pct)
	}
	return size + " (" + c.ExactNote() + ")"
}

// ExactNote is what an exact change rests on: its seeds and its floor.
func (c Change) ExactNote() string {
	seeds := "1 boot per kernel"
	switch {
	case c.Seeds > 1 && c.SpreadPct == 0:
		seeds = fmt.Sprintf("%d seeds agree to the last digit", c.Seeds)
	case c.Seeds > 1:
		seeds = fmt.Sprintf("%d seeds agree within %s %%", c.Seeds, SpreadText(c.SpreadPct))
	}
	return fmt.Sprintf("exact; %s; floor %.3f %%", seeds, c.FloorPct)
}

// SpreadText prints a seeds' spread in percent to two significant digits,
// without an exponent: 0.0001, 0.00023, 0.012.
func SpreadText(pct float64) string {
	if pct <= 0 {
		return "0"
	}
	d := max(4, 1-int(math.Floor(math.Log10(pct)+1e-9)))
	s := strings.TrimRight(fmt.Sprintf("%.*f", d, pct), "0")
	return strings.TrimSuffix(s, ".")
}

// spreadPct is max − min of values in percent of their mean.
func spreadPct(values []float64) float64 {
	if len(values) < 2 {
		return 0
	}
	m := mean(values)
	if m == 0 {
		return 0
	}
	return (slices.Max(values) - slices.Min(values)) / math.Abs(m) * 100
}

// sample makes a benchmath sample of a copy: NewSample sorts its input in
// place, and callers' slices are in boot order.
func sample(values []float64) *benchmath.Sample {
	return benchmath.NewSample(slices.Clone(values), &benchmath.DefaultThresholds)
}

// MinN is the smallest number of observations per variant with which the
// two-sided U test can reach Alpha at all.
func MinN() int {
	for n := 1; n < 20; n++ {
		if uMinP(n, n) < Alpha {
			return n
		}
	}
	return 20
}

// uMinP is the smallest two-sided p the U test gives for n1, n2 observations:
// total separation, 2/C(n1+n2, n1).
func uMinP(n1, n2 int) float64 {
	c := 1.0
	for i := 1; i <= n1; i++ {
		c = c * float64(n2+i) / float64(i)
	}
	return 2 / c
}

// bootstrapCI resamples boots within each variant and returns the 2.5th and
// 97.5th percentiles of the change of means, in percent.
func bootstrapCI(base, pat []float64) (lo, hi float64) {
	const rounds = 2000
	rng := rand.New(rand.NewPCG(1, 2))
	d := make([]float64, 0, rounds)
	bs, ps := make([]float64, len(base)), make([]float64, len(pat))
	for r := 0; r < rounds; r++ {
		for i := range bs {
			bs[i] = base[rng.IntN(len(base))]
		}
		for i := range ps {
			ps[i] = pat[rng.IntN(len(pat))]
		}
		mb := mean(bs)
		if mb == 0 {
			continue
		}
		d = append(d, (mean(ps)/mb-1)*100)
	}
	if len(d) == 0 {
		return 0, 0
	}
	sort.Float64s(d)
	return d[int(0.025*float64(len(d)))], d[int(math.Min(0.975*float64(len(d)), float64(len(d)-1)))]
}

func mean(x []float64) float64 {
	var m float64
	for _, v := range x {
		m += v
	}
	return m / float64(len(x))
}
