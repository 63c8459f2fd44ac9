package changepoint

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// Under icount held deterministic one point is a level: a step is found
// wherever it is, the line's edges and neighbouring steps included, and
// what images without a code change differ by is not reported.
func TestExact(t *testing.T) {
	const lvl = 1.10554
	at := func(pcts ...float64) []float64 {
		out := make([]float64, len(pcts))
		for i, p := range pcts {
			out[i] = lvl * (1 + p/100)
		}
		return out
	}
	noisy := ICount()
	noisy.NoiseSD = 0.05 / 100 // boots of one image scatter by 0.05 %
	for _, tc := range []struct {
		name   string
		points []float64
		opt    Options
		want   []int
	}{
		{"a step in the first commit", at(0, -53, -53, -53, -53), ICount(), []int{1}},
		{"a step in the last commit", at(0, 0, 0, 0, -10), ICount(), []int{4}},
		{"two steps two commits apart", at(0, 0, -53, -53, 0, 0), ICount(), []int{2, 4}},
		{"two steps one commit apart", at(0, 0, 5, 0, 0), ICount(), []int{2, 3}},
		{"two points", at(0, 1), ICount(), []int{1}},
		{"images without a code change", at(0, 0.0003, -0.0002, 0.0001, 0.0003, 0, 0.0002), ICount(), []int{}},
		{"a 0.02 % step among them", at(0, 0.0003, -0.0002, 0.0001, 0.0203, 0.0201, 0.0202), ICount(), []int{4}},
		{"Go producers: the random stream's two levels", at(0, 0.065, 0, 0.065, 0.065, 0, 0.003), ICountGoProducers(), []int{}},
		{"Go producers: a 0.1 % step among them", at(0, 0.065, 0, 0.065, 0.165, 0.165, 0.1), ICountGoProducers(), []int{4}},
		{"a step the boots' scatter hides", at(0, 0, 0.1, 0.1), noisy, []int{}},
		{"a step beyond the boots' scatter", at(0, 0, 1, 1), noisy, []int{2}},
		{"constant", at(0, 0, 0, 0), ICount(), []int{}},
		{"one point", at(0), ICount(), []int{}},
		{"NaN skipped, index kept", []float64{lvl, math.NaN(), lvl * 1.01, lvl * 1.01}, ICount(), []int{2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := indices(Detect(tc.points, tc.opt))
			if !slices.Equal(got, tc.want) {
				t.Errorf("change points at %v, want %v", got, tc.want)
			}
		})
	}
}

// A change point of the Exact detector measures its step and the levels
// either side, with their lengths.
func TestExactFields(t *testing.T) {
	x := []float64{1, 1, 1, 0.5, 0.5, 1}
	cps := Detect(x, ICount())
	if len(cps) != 2 {
		t.Fatalf("change points %+v, want 2", cps)
	}
	c := cps[0]
	if c.Index != 3 || c.Before != 1 || c.After != 0.5 || c.NBefore != 3 || c.NAfter != 2 || c.Pct != -50 || c.StepPct != -50 || c.P != 0 {
		t.Errorf("first change point %+v", c)
	}
	if c := cps[1]; c.Index != 5 || c.Before != 0.5 || c.After != 1 || c.NBefore != 2 || c.NAfter != 1 || c.Pct != 100 {
		t.Errorf("second change point %+v", c)
	}
}

// Commits that repeat their parent's image are one observation with it:
// they neither make a level longer nor a step of their own, and a change
// point names the first commit of the new image.
func TestPoolsIdenticalImages(t *testing.T) {
	pts := []Point{
		{Value: 1, N: 1, Image: "a"},
		{Value: 1, N: 1, Image: "a"},
		{Value: 0.9, N: 2, Image: "b"},
		{Value: 0.9, N: 1, Image: "b"},
		{Value: 0.9, N: 1, Image: "c"},
	}
	cps := DetectPoints(pts, ICount())
	if len(cps) != 1 || cps[0].Index != 2 || cps[0].NBefore != 1 || cps[0].NAfter != 2 {
		t.Errorf("change points %+v, want one at point 2 between 1 and 2 observations", cps)
	}
	obs, first := pool(pts)
	if len(obs) != 3 || obs[1].N != 3 || !slices.Equal(first, []int{0, 2, 4}) {
		t.Errorf("pooled %+v from %v", obs, first)
	}
	// Under the E-divisive detector the same pooling applies.
	if cps := DetectPoints(pts, Wall()); len(cps) != 0 {
		t.Errorf("wall: change points %+v in 3 observations", cps)
	}
}

// A line too short to judge says so, and how many points it would need.
func TestJudgeable(t *testing.T) {
	one := []Point{{Value: 1, Image: "a"}, {Value: 1, Image: "a"}}
	if ok, why := Judgeable(one, ICount()); ok || !strings.Contains(why, "1 observation of distinct images") || !strings.Contains(why, "at least 2") {
		t.Errorf("one image: %v %q", ok, why)
	}
	if ok, _ := Judgeable(Values([]float64{1, 2}), ICount()); !ok {
		t.Errorf("two images: not judgeable under icount")
	}
	if ok, why := Judgeable(Values([]float64{1, 2, 3}), Wall()); ok || !strings.Contains(why, "at least 12") {
		t.Errorf("wall, 3 points: %v %q", ok, why)
	}
}

// The noise of one boot comes from images booted more than once.
func TestRepeatSD(t *testing.T) {
	if sd := RepeatSD([][]float64{{2}, {3, 3, 3}}); sd != 0 {
		t.Errorf("exact repeats: %v", sd)
	}
	sd := RepeatSD([][]float64{{99, 101}, {5}})
	if math.Abs(sd-math.Sqrt(2)/100) > 1e-12 {
		t.Errorf("sd %v, want %v", sd, math.Sqrt(2)/100)
	}
}
