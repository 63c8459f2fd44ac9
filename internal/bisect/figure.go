package bisect

import (
	"context"
	"fmt"
	"math"
	"slices"

	"lab/internal/benchmark"
	"lab/internal/results"
	"lab/internal/spec"
	"lab/internal/stats"
	"lab/internal/testbed"
	"lab/internal/variant"
	"lab/internal/verdict"
	"lab/internal/workpool"
)

// figureOf is the figure the options or the lab's claims name, nil when the
// bisect is to choose it from the ends.
func figureOf(opt Options, lab *spec.Lab, p testbed.ShapePlan) (*results.Figure, string, error) {
	producers := p.Job.Producers
	switch {
	case opt.Figure != nil:
		f := *opt.Figure
		if err := benchmark.Check(f.Benchmark); err != nil {
			return nil, "", err
		}
		if f.Producers < 1 || f.Producers > p.Shape.CPUs {
			return nil, "", fmt.Errorf("--producers %d: the guest has %d vCPUs", f.Producers, p.Shape.CPUs)
		}
		if f.Scaling && f.Producers < 2 {
			return nil, "", fmt.Errorf("--scaling follows rate(P)/rate(1): give --producers 2 or more")
		}
		return &f, "asked for on the command line", nil
	case opt.Claim > 0:
		if opt.Claim > len(lab.Claims) {
			return nil, "", fmt.Errorf("--claim %d: the lab has %d claims", opt.Claim, len(lab.Claims))
		}
		c := testbed.RecordClaims(lab.Claims)[opt.Claim-1]
		for _, n := range c.Producers {
			for _, q := range producers {
				if n == q && (!c.Scaling || n > 1) {
					return &results.Figure{Benchmark: c.Benchmark, Producers: n, Scaling: c.Scaling},
						fmt.Sprintf("claim %d: %s", opt.Claim, verdict.ClaimText(c)), nil
				}
			}
		}
		if len(c.Producers) == 0 && !c.Scaling {
			return &results.Figure{Benchmark: c.Benchmark, Producers: producers[0]}, fmt.Sprintf("claim %d: %s", opt.Claim, verdict.ClaimText(c)), nil
		}
		return nil, "", fmt.Errorf("--claim %d (%s): this shape (%s) runs none of its producer counts %v", opt.Claim, verdict.ClaimText(c), p.Shape, c.Producers)
	}
	return nil, "", nil
}

// follow sets the figure and cuts each boot's job down to it and the
// controls: under icount a boot costs its benchmarks' guest time.
func (b *bisector) follow(f results.Figure, why string) {
	b.fig = &f
	if b.run != nil {
		b.run.Bisect.Figure, b.run.Bisect.Chosen = f, why
	}
	if b.opt.Measured != nil {
		// Figures come from the run's boots too: every boot runs its job.
		return
	}
	// In the lab's order: under icount the order of a boot's benchmarks
	// moves each figure by hundredths of a percent, and the ends' boots a
	// track hands over ran the lab's job.
	job := b.fullJob
	job.Benchmarks = nil
	for _, name := range b.fullJob.Benchmarks {
		if name == f.Benchmark || slices.Contains(benchmark.Controls(), name) {
			job.Benchmarks = append(job.Benchmarks, name)
		}
	}
	if !slices.Contains(job.Benchmarks, f.Benchmark) {
		job.Benchmarks = append([]string{f.Benchmark}, job.Benchmarks...)
	}
	job.Producers = []int{f.Producers}
	if f.Scaling || f.Producers != 1 {
		// Controls and scaling ratios need the 1-producer rate too.
		job.Producers = []int{1, f.Producers}
		if f.Producers == 1 {
			job.Producers = []int{1}
		}
	}
	b.plan.Job = job
}

func (b *bisector) chosenText() string {
	if b.opt.Figure != nil {
		return "asked for on the command line"
	}
	return fmt.Sprintf("claim %d", b.opt.Claim)
}

// chooseFigure boots both ends with the lab's whole job and follows the
// non-control row that changed most between them.
func (b *bisector) chooseFigure(ctx context.Context) error {
	n := len(b.steps) - 1
	boots := 4
	if b.plan.Clock == results.ClockICount {
		boots = spec.DefaultSeeds // exact figures: a run's boots of a kernel
	}
	for _, k := range []int{0, n} {
		if _, err := b.Image(ctx, k); err != nil {
			return fmt.Errorf("measure the ends to choose a figure: %w", err)
		}
	}
	ends, err := b.measuredEnds()
	if err != nil {
		return err
	}
	if len(ends) == 0 {
		var ks []int
		for i := 0; i < boots; i++ {
			ks = append(ks, 0, n)
		}
		ends = make([]results.Boot, len(ks))
		errs, stop := workpool.Run(ctx, len(ks), b.workers(), func(ctx context.Context, i int) (err error) {
			ends[i], err = b.bootStep(ctx, ks[i])
			return err
		}, stopAlways)
		if stop >= 0 {
			return fmt.Errorf("measure the ends to choose a figure: %w", errs[stop])
		}
	}
	tables := verdict.Tables(&results.Run{Boots: ends})
	if len(tables) == 0 {
		return fmt.Errorf("the ends delivered no figures")
	}
	var best *verdict.Row
	for _, rows := range [][]verdict.Row{tables[0].Rows, tables[0].Scaling} {
		for i := range rows {
			r := &rows[i]
			if r.Control || r.Change.NoData || r.Metric == verdict.MetricVsFree {
				continue
			}
			if best == nil || (r.Change.Verdict != stats.Same && best.Change.Verdict == stats.Same) ||
				(sameness(r) == sameness(best) && math.Abs(r.Change.Pct) > math.Abs(best.Change.Pct)) {
				best = r
			}
		}
	}
	if best == nil {
		return fmt.Errorf("the ends share no benchmark to follow")
	}
	f := results.Figure{Benchmark: best.Benchmark, Producers: best.Producers, Scaling: best.Metric == verdict.MetricScaling}
	why := fmt.Sprintf("the row that changed most between the ends: %+.3f %% [%+.3f, %+.3f], p = %.3f", best.Change.Pct, best.Change.Lo, best.Change.Hi, best.Change.P)
	b.logf("following %s: %s", f, why)
	b.follow(f, why)
	b.pending = map[int][]given{}
	for _, boot := range ends {
		o, err := b.obs(boot)
		if err != nil {
			return err
		}
		k, from := 0, choosingBoot
		if boot.Variant != variant.Baseline {
			k = n
		}
		if b.opt.Measured != nil {
			b.taken[k] = true
			from = fmt.Sprintf("boot %d of run %s (the same kernel image, shape and job)", boot.Index, b.opt.Measured.RunID)
		}
		b.pending[k] = append(b.pending[k], given{Obs: o, from: from})
	}
	return nil
}

// measuredEnds are opt.Measured's boots of both ends' kernel images, with
// each boot's variant saying its end (baseline the good, patched the bad);
// none unless both ends have some.
func (b *bisector) measuredEnds() ([]results.Boot, error) {
	if b.opt.Measured == nil {
		return nil, nil
	}
	n := len(b.steps) - 1
	good := testbed.Measured(b.opt.Measured, b.steps[0].Kernel.Info.ImageSHA256, b.plan)
	bad := testbed.Measured(b.opt.Measured, b.steps[n].Kernel.Info.ImageSHA256, b.plan)
	if len(good) == 0 || len(bad) == 0 {
		return nil, nil
	}
	var out []results.Boot
	for _, g := range good {
		g.Variant = variant.Baseline
		out = append(out, g)
	}
	for _, x := range bad {
		x.Variant = variant.Patched
		out = append(out, x)
	}
	b.logf("choosing the figure from run %s's boots of both ends (%d and %d): none booted again", b.opt.Measured.RunID, len(good), len(bad))
	return out, nil
}

func sameness(r *verdict.Row) bool { return r.Change.Verdict == stats.Same }

func FormatFigure(f results.Figure, v float64) string {
	if f.Scaling {
		return fmt.Sprintf("%.4f", v)
	}
	return fmt.Sprintf("%.5f M/s", v/1e6)
}
