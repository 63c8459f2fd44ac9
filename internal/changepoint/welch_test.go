package changepoint

import (
	"math"
	"testing"
)

// Reference values from numerical integration of Student's t density.
func TestStudentTwoSidedP(t *testing.T) {
	for _, tc := range []struct {
		t, df, want float64
	}{
		{2, 8, 0.08051623795728802},
		{1, 1, 0.5}, // Cauchy: half the mass beyond ±1
		{2.228138851986, 10, 0.05},
		{3.5, 4.5, 0.020541689969372112}, // Welch's df are not integers
		{-3.5, 4.5, 0.020541689969372112},
		{0.7, 2.3, 0.5480072210646558},
		{6, 20, 7.243699902126366e-06},
		{0, 7, 1},
		{math.Inf(1), 3, 0},
	} {
		got := studentTwoSidedP(tc.t, tc.df)
		if math.Abs(got-tc.want) > 1e-9*math.Max(1, tc.want) && math.Abs(got/tc.want-1) > 1e-8 {
			t.Errorf("p(t=%v, df=%v) = %.12g, want %.12g", tc.t, tc.df, got, tc.want)
		}
	}
}

func TestWelchP(t *testing.T) {
	seg := func(x ...float64) segment { return describe(x) }
	for _, tc := range []struct {
		name string
		a, b segment
		want float64
	}{
		// Equal variances 2.5, n = 5: t = 2, df = 8.
		{"textbook", seg(1, 2, 3, 4, 5), seg(3, 4, 5, 6, 7), 0.08051623795728802},
		{"same", seg(1, 2, 3), seg(1, 2, 3), 1},
		{"flat and equal", seg(4, 4, 4), seg(4, 4), 1},
		{"flat and different", seg(4, 4, 4), seg(5, 5), 0},
		{"one point", seg(1), seg(5, 6, 7), 1},
	} {
		if got := welchP(tc.a, tc.b); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: p = %v, want %v", tc.name, got, tc.want)
		}
	}
	// A flat side is given the pooled variance, (0 + 2·1)/5 = 0.4: se² =
	// 0.4/4 + 1/3, t = 2/se, df = se⁴/((0.4/4)²/3 + (1/3)²/2).
	a, b := seg(10, 10, 10, 10), seg(11, 12, 13)
	se2 := 0.1 + 1.0/3
	want := studentTwoSidedP(2/math.Sqrt(se2), se2*se2/(0.01/3+1.0/18))
	if got := welchP(a, b); math.Abs(got-want) > 1e-12 || math.Abs(got-0.0517) > 0.001 {
		t.Errorf("flat beside spread: p = %v, want %v", got, want)
	}
}

// A short segment that is quiet by chance, beside a long noisy one, is
// judged with the pooled spread: never surer than Student's pooled test.
// A spike keeps its own spread: never surer than Welch's.
func TestWelchPFloor(t *testing.T) {
	noisy := make([]float64, 40)
	for i := range noisy {
		noisy[i] = 100 + float64(i%2*2-1) // ±1
	}
	quiet := []float64{101.5, 101.6, 101.5, 101.6, 101.55, 101.5}
	spike := []float64{100, 100, 100, 100, 100, 130}
	student := func(a, b segment) float64 {
		df := float64(a.n + b.n - 2)
		pooled := (float64(a.n-1)*a.sd*a.sd + float64(b.n-1)*b.sd*b.sd) / df
		return studentTwoSidedP((b.mean-a.mean)/math.Sqrt(pooled*(1/float64(a.n)+1/float64(b.n))), df)
	}
	welch := func(a, b segment) float64 {
		va, vb := a.sd*a.sd/float64(a.n), b.sd*b.sd/float64(b.n)
		return studentTwoSidedP((b.mean-a.mean)/math.Sqrt(va+vb), (va+vb)*(va+vb)/(va*va/float64(a.n-1)+vb*vb/float64(b.n-1)))
	}
	for _, tc := range []struct {
		name  string
		other []float64
	}{{"quiet", quiet}, {"spike", spike}} {
		a, b := describe(noisy), describe(tc.other)
		got := welchP(a, b)
		if got < student(a, b)*(1-1e-9) || got < welch(a, b)*(1-1e-9) {
			t.Errorf("%s: p = %.3g, surer than Student's %.3g or Welch's %.3g", tc.name, got, student(a, b), welch(a, b))
		}
	}
	// Plain Welch would call the quiet segment different; the floor does not.
	if a, b := describe(noisy), describe(quiet); welch(a, b) > 0.001 || welchP(a, b) < 0.001 {
		t.Errorf("quiet segment: Welch's p %.3g, floored p %.3g; want < 0.001 and above", welch(a, b), welchP(a, b))
	}
}

// describe keeps the spread of figures that differ in their sixth digit.
func TestDescribePrecision(t *testing.T) {
	s := describe([]float64{1.094161, 1.094162, 1.094163})
	if math.Abs(s.sd-1e-6) > 1e-12 || math.Abs(s.mean-1.094162) > 1e-12 {
		t.Errorf("describe = %+v, want mean 1.094162, sd 1e-6", s)
	}
}
