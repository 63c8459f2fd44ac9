package run

import (
	"context"
	"fmt"
	"slices"

	"lab/internal/results"
	"lab/internal/testbed"
	"lab/internal/variant"
	"lab/internal/verdict"
)

// When a run takes instruction profiles (Options.Profile).
const (
	ProfileAuto = "auto" // the kernels of an icount shape where a row moved
	ProfileOn   = "on"   // every kernel of every icount shape
	ProfileOff  = "off"
)

// profileKey is a kernel of a shape.
type profileKey struct {
	arch, topology string
	variant        variant.Variant
}

// profile boots, under icount, each kernel of a shape where a comparison
// moved a row once more, with lab's instruction profile plugin and the job
// and seed of its first measured boot, and records where each benchmark's
// instructions went (results.Profile). The plugin counts the guest without
// moving it, so the profile boot gives the measured figures again, which
// the record checks; the figures stay the measured boots'. A profile that
// cannot be taken (a QEMU of another plugin API) is said, not a failure:
// the verdict does not need it.
func (r *Runner) profile(ctx context.Context, plans []testbed.ShapePlan, art *Artifacts) error {
	want := r.kernelsToProfile()
	if len(want) == 0 {
		return nil
	}
	for _, p := range plans {
		if p.Clock != results.ClockICount {
			continue
		}
		plugin, err := r.env.Plugin(ctx, r.opt.CacheDir, p.Arch.QEMU)
		if err != nil || plugin == "" {
			if err != nil {
				r.logf("no instruction profile: %v", err)
			}
			return nil
		}
		for _, v := range r.opt.kernels() {
			first := r.firstBoot(p, v)
			if first == nil || !want[profileKey{p.Arch.Name, verdict.Topology(*first), v}] {
				continue
			}
			if err := r.profileKernel(ctx, p, v, *first, plugin, art); err != nil {
				if ctx.Err() != nil {
					return err
				}
				r.logf("no instruction profile of %s %s: %v", p.Arch.Name, v, err)
			}
		}
	}
	return r.save()
}

// kernelsToProfile are the kernels of each icount shape where a comparison
// moved a row that is not a control (every kernel there with --profile on).
func (r *Runner) kernelsToProfile() map[profileKey]bool {
	out := map[profileKey]bool{}
	// A shard holds part of the boots (its merge judges them), and --only
	// one kernel: neither has a comparison to explain.
	if r.opt.Profile == ProfileOff || r.opt.Only != "" || r.opt.Shard.N >= 1 {
		return out
	}
	kernels := r.opt.kernels()
	for _, c := range variant.Comparisons(kernels[1:]) {
		for _, t := range verdict.Tables(&results.Run{Boots: verdict.Relabel(r.run.Boots, c)}) {
			if !t.Shape.ICount() || r.opt.Profile != ProfileOn && !slices.ContainsFunc(t.Rows, func(row verdict.Row) bool {
				return !row.Control && row.Agent() && row.Change.Verdict != "~"
			}) {
				continue
			}
			out[profileKey{t.Shape.Arch, t.Shape.Topology, c.Against}] = true
			out[profileKey{t.Shape.Arch, t.Shape.Topology, c.Patched}] = true
		}
	}
	return out
}

// firstBoot is kernel v's first good boot of plan p, nil for none.
func (r *Runner) firstBoot(p testbed.ShapePlan, v variant.Variant) *results.Boot {
	for i, b := range r.run.Boots {
		if b.OK() && b.Variant == v && b.Arch == p.Arch.Name && b.Clock == p.Clock && b.Shape != nil && b.Shape.String() == p.Shape.String() {
			return &r.run.Boots[i]
		}
	}
	return nil
}

// profileKernel boots kernel v of plan p with the plugin, as boot first
// was booted (its job and seed), and records its profile.
func (r *Runner) profileKernel(ctx context.Context, p testbed.ShapePlan, v variant.Variant, first results.Boot, plugin string, art *Artifacts) error {
	kernel, err := art.Kernel(p.Arch.Name, v)
	if err != nil {
		return err
	}
	initrd, err := art.Initrd(p.Arch.Name)
	if err != nil {
		return err
	}
	idx := len(r.run.Boots) + len(r.run.Profiles) + 1
	p.Job = first.Job
	label := fmt.Sprintf("profile %s %s %s", p.Arch.Name, p.Tag(), v)
	b := testbed.Booter{Dir: r.dir, Boot: r.env.Boot, ConsoleExpect: r.lab.ConsoleExpect, Logf: r.logf, Seed: first.Seed, Plugin: plugin}
	prof, boot, err := b.Profile(ctx, p, kernel, initrd, v, idx, string(v)+"-profile", label)
	if err != nil {
		return err
	}
	prof.Topology, prof.Same = verdict.Topology(first), testbed.SameFigures(first, boot)
	r.run.Profiles = append(r.run.Profiles, prof)
	same := "the same figures as its measured boot"
	if !prof.Same {
		same = "OTHER figures than its measured boot: the profile does not stand for it"
	}
	r.logf("%s: %d results profiled, %s", label, len(prof.Results), same)
	return r.save()
}
