package run

import (
	"context"

	"lab/internal/results"
	"lab/internal/testbed"
)

// When a run takes instruction profiles (Options.Profile).
const (
	ProfileAuto = "auto" // each icount kernel's first boot, when lab's plugin loads in this QEMU
	ProfileOn   = "on"   // the same (kept for the command lines that say it)
	ProfileOff  = "off"
)

// StackHz is the rate, a CPU, at which the first boot of each wall-clock
// kernel samples kernel stacks: a prime, so that the samples do not beat
// with the tick (HZ 1000 or 250).
const StackHz = 997

// profiler is how the first boot of each kernel of a plan is profiled:
// lab's QEMU plugin under icount (plugin, "" when it cannot load), the
// agent's stack sampler on the wall clock (stackHz), or not at all.
type profiler struct {
	plugin  string
	stackHz int
}

// profiling says whether the run takes profiles at all. A shard (its
// merge judges the boots) and --only (nothing to compare) take none.
func (r *Runner) profiling() bool {
	return r.opt.Profile != ProfileOff && r.opt.Only == "" && r.opt.Shard.N < 1 && !r.opt.BuildOnly
}

// profilerOf is plan p's profiler, given the plugins resolved for the
// run's QEMUs. On the wall clock the sampler's sample comes after the
// measured ones, so the figures are as unprofiled.
func (r *Runner) profilerOf(p testbed.ShapePlan, plugins map[string]string) profiler {
	switch {
	case !r.profiling():
		return profiler{}
	case p.Clock == results.ClockICount:
		return profiler{plugin: plugins[p.Arch.QEMU]}
	default:
		return profiler{stackHz: StackHz}
	}
}

// plugins resolves, for each icount plan, lab's instruction profile plugin
// (Env.Plugin): the first boot of each kernel there loads it, so that a row
// that moved can say where in the kernel (report.WhereMoved). The plugin
// counts the guest without moving it: the boot's figures are the figures,
// and no boot is spent on the profile. A QEMU it cannot load in is said
// once, and the run measures without profiles.
func (r *Runner) plugins(ctx context.Context, plans []testbed.ShapePlan) map[string]string {
	out := map[string]string{}
	if !r.profiling() {
		return out
	}
	for _, p := range plans {
		if _, done := out[p.Arch.QEMU]; done || p.Clock != results.ClockICount {
			continue
		}
		plugin, err := r.env.Plugin(ctx, r.opt.CacheDir, p.Arch.QEMU)
		if err != nil {
			r.logf("no instruction profile: %v", err)
		}
		out[p.Arch.QEMU] = plugin
	}
	return out
}

// profileOf reads the profile of boot b, the first of its kernel, which
// loaded the plugin or sampled stacks; nil (and said) when it cannot be read:
// the figures stand without it.
func (r *Runner) profileOf(b testbed.Booter, p testbed.ShapePlan, kernel results.Kernel, boot results.Boot) *results.Profile {
	read, what := b.ReadProfile, "instruction profile"
	if b.StackHz > 0 {
		read, what = b.ReadStacks, "sampled profile"
	}
	prof, err := read(p, kernel, boot)
	if err != nil {
		r.logf("no %s of boot %d: %v", what, boot.Index, err)
		return nil
	}
	prof.Same = true // the measured boot itself
	return &prof
}
