package bisect

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"lab/initramfs/protocol"
	"lab/internal/benchmark"
	"lab/internal/results"
	"lab/internal/runfolder"
	"lab/internal/testbed"
	"lab/internal/vm"
)

// Measure boots step k once and reads the figure. Boots of steps whose
// kernels are built may run side by side.
func (b *bisector) Measure(ctx context.Context, k int) (Obs, error) {
	end := k == 0 || k == len(b.steps)-1
	if err := b.takeMeasured(ctx, k); err != nil {
		return Obs{}, err
	}
	b.mu.Lock()
	if b.opt.Run && end && b.plan.Clock == results.ClockICount && b.ends == nil {
		b.loadEnds()
	}
	if q := b.pending[k]; len(q) > 0 {
		b.pending[k] = q[1:]
		if q[0].from != choosingBoot {
			b.earlier++
		}
		b.mu.Unlock()
		b.logf("step %d (%s): figure from %s", k, b.steps[k].Name, q[0].from)
		return q[0].Obs, nil
	}
	b.mu.Unlock()
	boot, err := b.bootStep(ctx, k)
	if err != nil {
		return Obs{}, err
	}
	o, err := b.obs(boot)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err == nil && b.ends != nil && end {
		b.saveEnd(k, o)
	}
	return o, err
}

// takeMeasured queues, once per step, the figures of opt.Measured's boots
// of step k's kernel image (building it first, as a boot would), so that
// no image the run measured is booted again.
func (b *bisector) takeMeasured(ctx context.Context, k int) error {
	b.mu.Lock()
	done := b.taken[k] || b.opt.Measured == nil
	b.mu.Unlock()
	if done {
		return nil
	}
	image, err := b.Image(ctx, k)
	if err != nil {
		return err
	}
	boots := testbed.Measured(b.opt.Measured, image, b.plan)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.taken[k] {
		return nil
	}
	b.taken[k] = true
	for _, boot := range boots {
		if o, err := b.obs(boot); err == nil {
			b.give(k, []Obs{o}, fmt.Sprintf("boot %d of run %s (the same kernel image, shape and job)", boot.Index, b.opt.Measured.RunID))
		}
	}
	return nil
}

// given is a figure of an end the search takes instead of a boot, and
// where it came from: a boot this bisect made to choose its figure, or one
// before it (not a boot it spent).
type given struct {
	Obs
	from string
}

const (
	choosingBoot = "a boot of the ends that chose the figure"
	historyBoot  = "an earlier boot of this commit (the history's)"
)

// give queues figures of step k the search takes before booting it.
func (b *bisector) give(k int, obs []Obs, from string) {
	for _, o := range obs {
		b.pending[k] = append(b.pending[k], given{Obs: o, from: from})
	}
}

// earlierOf counts the figures of step k queued from before this bisect.
func (b *bisector) earlierOf(k int) int {
	n := 0
	for _, g := range b.pending[k] {
		if g.from != choosingBoot {
			n++
		}
	}
	return n
}

// bootStep boots step k, building its kernel first if need be (callers
// that boot side by side build first: there is one source tree).
func (b *bisector) bootStep(ctx context.Context, k int) (results.Boot, error) {
	st := &b.steps[k]
	if st.Kernel == nil {
		if _, err := b.Image(ctx, k); err != nil {
			return results.Boot{}, err
		}
	}
	plugin := b.plugin(ctx)
	b.mu.Lock()
	b.booted++
	idx := b.booted
	b.seeds[k]++ // the step's k-th boot draws stream k
	seed := b.seeds[k] + b.earlierOf(k)
	if b.seeds[k] > 1 || b.plan.Clock != results.ClockICount {
		plugin = "" // a step's first boot here profiles it
	}
	b.mu.Unlock()
	booter := testbed.Booter{Dir: b.dir, Boot: vm.Boot, ConsoleExpect: b.lab.ConsoleExpect, Logf: b.logf, Seed: seed, Plugin: plugin}
	label := fmt.Sprintf("boot %d: step %d/%d (%s)", idx, k, len(b.steps)-1, st.Name)
	boot, err := booter.Run(ctx, b.plan, *st.Kernel, b.bench.Initrd(b.plan.Arch.Name), "", idx, fmt.Sprintf("step%02d", k), label)
	boot.Variant = b.variantOf(k)
	var prof *results.Profile
	if plugin != "" && err == nil {
		if p, perr := booter.ReadProfile(b.plan, *st.Kernel, boot); perr == nil {
			p.Variant, p.Same = results.StepVariant(k), true
			prof = &p
		} else {
			b.logf("no instruction profile of step %d: %v", k, perr)
		}
	}
	b.mu.Lock()
	if prof != nil {
		b.run.Profiles = append(b.run.Profiles, *prof)
	}
	boot = testbed.AddBoot(b.run, boot, err)
	st.Boots = append(st.Boots, idx)
	sort.Ints(st.Boots)
	werr := runfolder.Folder{Dir: b.dir}.Save(b.run)
	b.mu.Unlock()
	if werr != nil {
		return boot, werr
	}
	return boot, BootSkip(err)
}

// BootSkip is a boot's error as a step's: a boot the kernel failed (a
// panic, a hang, a wrong shape) makes its step a skip, which a search
// steps around; anything else (QEMU, the host) stays an error.
func BootSkip(err error) error {
	if err != nil && results.KernelFault(results.FailureKind(err)) {
		return Skip("does not boot ("+results.FailureKind(err)+")", err)
	}
	return err
}

// Skip is a step skipped for why, with the first line of err: a build's
// or a boot's error runs on, and a report's row holds one line.
func Skip(why string, err error) *SkipError {
	return &SkipError{Why: why, Err: errors.New(firstLine(err.Error()))}
}

// obs reads the followed figure and the controls' rates from a boot.
func (b *bisector) obs(boot results.Boot) (Obs, error) {
	v, ok := b.fig.Of(boot)
	if !ok {
		return Obs{}, &SkipError{Why: "no figure", Err: fmt.Errorf("boot %d did not measure %s", boot.Index, b.fig)}
	}
	o := Obs{Value: v, Controls: map[string]float64{}}
	for _, r := range boot.Results {
		if benchmark.IsControl(r.Benchmark) && r.Tool == "" && r.OK() && r.Producers == 1 {
			o.Controls[r.Benchmark] = protocol.Rate(r.Samples)
		}
	}
	b.logf("boot %d (step %s): %s = %s", boot.Index, stepOf(b.steps, boot.Index), b.fig, FormatFigure(*b.fig, v))
	return o, nil
}

func stepOf(steps []results.BisectStep, boot int) string {
	for _, s := range steps {
		if contains(s.Boots, boot) {
			return fmt.Sprint(s.Index)
		}
	}
	return "?"
}
