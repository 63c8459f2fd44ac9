// Command changepoint measures internal/changepoint on synthetic streams at
// lab's own noise levels: how often it finds a planted step of 0.01 % to
// 10 %, and how many change points it reports in pure noise, per 1,000
// points.
//
// Noise (relative to the figure), as measured here (docs/validation.md).
// Under icount boots of one image repeat exactly (the guest is held
// deterministic), and every commit is a new image with its own random
// stream:
//   - icount, producer program: -icount-sd between images, the largest of
//     the five rows' sd over 24 streams of one kernel (0.000065 %); and ten
//     times that, for a margin.
//   - icount, Go producers (the agent before protocol.Method, judged with
//     ICountGoProducers): a uprobe row on one of two levels -stream-pct
//     apart (0.06 %), each with probability one half, with a jitter of
//     -stream-sd (0.003 %); the other rows the jitter -go-sd alone (0.006 %).
//   - wall: TCG's wall clock, an sd of 3 % between boots.
//   - wall-drift: the same 3 % in all, part of it a slow drift (an AR(1)
//     process of sd 1.5 % and correlation 0.98 from point to point).
//
// A step is found when a change point of its sign lies within -tol points
// of it; "exact" counts those at its very point. Each trial is one stream
// of -n points with the step at a random point of its middle half, going
// up or down in turn. Everything is seeded: a rerun prints the same table.
//
//	go run ./bench/changepoint [-trials 500] [-noise-points 100000]
package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"text/tabwriter"
	"time"

	"lab/internal/changepoint"
)

func main() {
	var p params
	flag.IntVar(&p.trials, "trials", 500, "streams per step size")
	flag.IntVar(&p.n, "n", 200, "points per stream with a step")
	flag.IntVar(&p.noisePoints, "noise-points", 100000, "points of pure noise per noise level, in streams of 10,000")
	flag.IntVar(&p.tol, "tol", 2, "how far, in points, a change point may lie from the step it finds")
	flag.Float64Var(&p.icountSD, "icount-sd", 0.000065, "icount, producer program: relative sd between images without a code change, in percent")
	flag.Float64Var(&p.goSD, "go-sd", 0.006, "icount, Go producers, other rows: relative sd between images without a code change, in percent")
	flag.Float64Var(&p.streamPct, "stream-pct", 0.06, "icount, Go producers, uprobe rows: how far apart the random stream's two levels are, in percent")
	flag.Float64Var(&p.streamSD, "stream-sd", 0.003, "icount, Go producers, uprobe rows: relative sd between images on one level, in percent")
	flag.Uint64Var(&p.seed, "seed", 1, "seed of every stream")
	flag.Parse()
	if err := run(p, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "changepoint:", err)
		os.Exit(1)
	}
}

type params struct {
	trials, n, noisePoints, tol int
	streamPct, streamSD         float64
	icountSD, goSD              float64
	seed                        uint64
}

// noise returns n factors around 1 that multiply a figure.
type noise func(rng *rand.Rand, n int) []float64

// icountNoise is one image per point: each on the upper of two levels
// levelPct apart with probability one half (levelPct 0: one level), with
// a jitter of sdPct.
func icountNoise(sdPct, levelPct float64) noise {
	return func(rng *rand.Rand, n int) []float64 {
		x := make([]float64, n)
		for i := range x {
			level := 1.0
			if levelPct > 0 && rng.IntN(2) == 1 {
				level = 1 + levelPct/100
			}
			x[i] = level * (1 + sdPct/100*rng.NormFloat64())
		}
		return x
	}
}

func wallNoise(rng *rand.Rand, n int) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = 1 + 0.03*rng.NormFloat64()
	}
	return x
}

// wallDriftNoise keeps the total sd at 3 %: 1.5 % of drift and
// sqrt(3² - 1.5²) = 2.6 % from boot to boot.
func wallDriftNoise(rng *rand.Rand, n int) []float64 {
	const phi, drift = 0.98, 0.015
	white := math.Sqrt(0.03*0.03 - drift*drift)
	x := make([]float64, n)
	d := drift * rng.NormFloat64()
	for i := range x {
		d = phi*d + math.Sqrt(1-phi*phi)*drift*rng.NormFloat64()
		x[i] = (1 + d) * (1 + white*rng.NormFloat64())
	}
	return x
}

// setting is one row group: a noise level and the options judging it.
type setting struct {
	name  string
	noise noise
	opt   changepoint.Options
}

func settings(p params) []setting {
	noSigma := changepoint.Wall()
	noSigma.MinSigma = 0
	return []setting{
		{"icount, producer program, ICount()", icountNoise(p.icountSD, 0), changepoint.ICount()},
		{"icount, producer program, 10× its noise, ICount()", icountNoise(10*p.icountSD, 0), changepoint.ICount()},
		{"icount, Go producers' uprobe row, ICountGoProducers()", icountNoise(p.streamSD, p.streamPct), changepoint.ICountGoProducers()},
		{"icount, Go producers' other rows, ICountGoProducers()", icountNoise(p.goSD, 0), changepoint.ICountGoProducers()},
		{"wall, Wall()", wallNoise, changepoint.Wall()},
		{"wall, Wall() without σ filter", wallNoise, noSigma},
		{"wall-drift, Wall()", wallDriftNoise, changepoint.Wall()},
		{"wall-drift, Wall() without σ filter", wallDriftNoise, noSigma},
	}
}

// detection is how often one step size was found.
type detection struct {
	trials, found, exact int
}

// detect plants a step of pct in p.trials streams and counts the finds.
func detect(p params, s setting, pct float64, stream uint64) detection {
	rng := rand.New(rand.NewPCG(p.seed, stream))
	d := detection{trials: p.trials}
	for trial := 0; trial < p.trials; trial++ {
		at := p.n/4 + rng.IntN(p.n/2)
		signed := pct
		if trial%2 == 1 {
			signed = -pct
		}
		x := s.noise(rng, p.n)
		for i := at; i < len(x); i++ {
			x[i] *= 1 + signed/100
		}
		hit, exact := false, false
		for _, c := range changepoint.Detect(x, s.opt) {
			if abs(c.Index-at) <= p.tol && (c.Pct > 0) == (signed > 0) {
				hit = true
				exact = exact || c.Index == at
			}
		}
		if hit {
			d.found++
		}
		if exact {
			d.exact++
		}
	}
	return d
}

// falseAlarms counts the change points in p.noisePoints points of pure
// noise, in streams of 10,000, and how long detection took.
func falseAlarms(p params, s setting, stream uint64) (alarms, points int, took time.Duration) {
	rng := rand.New(rand.NewPCG(p.seed, stream))
	const length = 10000
	for points < p.noisePoints {
		x := s.noise(rng, length)
		start := time.Now()
		alarms += len(changepoint.Detect(x, s.opt))
		took += time.Since(start)
		points += length
	}
	return alarms, points, took
}

func run(p params, out io.Writer) error {
	if p.n < 8 || p.trials < 1 || p.noisePoints < 1 {
		return fmt.Errorf("need -n of at least 8 and positive -trials and -noise-points")
	}
	steps := []float64{0.01, 0.02, 0.1, 0.2, 1, 5, 10}
	fmt.Fprintf(out, "detection: %d streams of %d points per step, up and down in turn; found: a change point of its sign within ±%d points; exact: at its point\n", p.trials, p.n, p.tol)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "noise, options\tstep\tfound\texact\t")
	for i, s := range settings(p) {
		for j, pct := range steps {
			d := detect(p, s, pct, uint64(100*i+j))
			fmt.Fprintf(tw, "%s\t%g %%\t%s\t%s\t\n", s.name, pct, rate(d.found, d.trials), rate(d.exact, d.trials))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nfalse alarms: change points in pure noise, streams of 10,000 points\n")
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "noise, options\tpoints\tchange points\tper 1,000\ttime per 10,000 × 50\t")
	for i, s := range settings(p) {
		alarms, points, took := falseAlarms(p, s, uint64(1000+i))
		per50 := took * time.Duration(50*10000) / time.Duration(points)
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.3f\t%.2fs\t\n", s.name, points, alarms, 1000*float64(alarms)/float64(points), per50.Seconds())
	}
	return tw.Flush()
}

func rate(k, n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f %%", 100*float64(k)/float64(n))
}

func abs(i int) int {
	if i < 0 {
		return -i
	}
	return i
}
