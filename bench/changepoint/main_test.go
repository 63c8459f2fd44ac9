package main

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// The noise is what the table says it is: icount's two random-stream
// levels with their jitter, the jitter alone, the wall clock's 3 % with or
// without drift.
func TestNoise(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	x := icountNoise(0.006, 0.06)(rng, 100000)
	var lo, hi []float64
	for _, v := range x {
		if v > 1.0003 {
			hi = append(hi, (v/1.0006-1)*100)
		} else {
			lo = append(lo, (v-1)*100)
		}
	}
	if len(hi) < 48000 || len(hi) > 52000 {
		t.Errorf("%d of 100,000 points on the upper level, want about half", len(hi))
	}
	for _, side := range [][]float64{lo, hi} {
		if sd := stddev(side); math.Abs(sd-0.006) > 0.0004 {
			t.Errorf("icount sd %.5f %%, want 0.006 %%", sd)
		}
	}
	for name, gen := range map[string]noise{"wall": wallNoise, "wall-drift": wallDriftNoise} {
		w := gen(rng, 200000)
		if sd := stddev(w) * 100; math.Abs(sd-3) > 0.15 {
			t.Errorf("%s sd %.2f %%, want 3 %%", name, sd)
		}
	}
}

// A short run prints a row for every setting and step, and the false
// alarms of each setting.
func TestRun(t *testing.T) {
	var out strings.Builder
	p := params{trials: 4, n: 60, noisePoints: 10000, tol: 2, streamPct: 0.06, streamSD: 0.003, icountSD: 0.000065, goSD: 0.006, seed: 1}
	if err := run(p, &out); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, s := range settings(p) {
		if n := strings.Count(text, s.name+"  "); n != 8 {
			t.Errorf("%q: %d rows, want 7 steps and 1 false-alarm row\n%s", s.name, n, text)
		}
	}
	// Under icount a 5 % step is found every time, even in 4 trials.
	if !strings.Contains(text, "icount, producer program, ICount()     5 %  100.0 %") {
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
