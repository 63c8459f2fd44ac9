package main

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// The noise is what the table says it is: icount's sd and its two layout
// levels, the wall clock's 3 % with or without drift.
func TestNoise(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	x, shifts := icountNoise(0.003, 0.06, 100)(rng, 100000)
	if len(shifts) < 800 || len(shifts) > 1200 {
		t.Errorf("%d layout changes in 100,000 points, want about 1,000", len(shifts))
	}
	var lo, hi []float64
	for _, v := range x {
		if v > 1.0003 {
			hi = append(hi, (v/1.0006-1)*100)
		} else {
			lo = append(lo, (v-1)*100)
		}
	}
	for _, side := range [][]float64{lo, hi} {
		if sd := stddev(side); math.Abs(sd-0.003) > 0.0002 {
			t.Errorf("icount sd %.5f %%, want 0.003 %%", sd)
		}
	}
	for name, gen := range map[string]noise{"wall": wallNoise, "wall-drift": wallDriftNoise} {
		w, _ := gen(rng, 200000)
		if sd := stddev(w) * 100; math.Abs(sd-3) > 0.15 {
			t.Errorf("%s sd %.2f %%, want 3 %%", name, sd)
		}
	}
}

// A short run prints a row for every setting and step, and the false
// alarms of each setting.
func TestRun(t *testing.T) {
	var out strings.Builder
	p := params{trials: 4, n: 60, noisePoints: 10000, tol: 2, layoutEvery: 100, layoutPct: 0.06, icountSD: 0.003, seed: 1}
	if err := run(p, &out); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, s := range settings(p) {
		if n := strings.Count(text, s.name+"  "); n != 5 {
			t.Errorf("%q: %d rows, want 4 steps and 1 false-alarm row\n%s", s.name, n, text)
		}
	}
	// Under icount a 5 % step is found every time, even in 4 trials.
	if !strings.Contains(text, "icount, ICount()    5 %  100.0 %") {
		t.Errorf("icount 5 %% step not found every time:\n%s", text)
	}
}

func stddev(x []float64) float64 {
	var m, ss float64
	for _, v := range x {
		m += v
	}
	m /= float64(len(x))
	for _, v := range x {
		ss += (v - m) * (v - m)
	}
	return math.Sqrt(ss / float64(len(x)-1))
}
