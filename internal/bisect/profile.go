package bisect

import (
	"context"
	"fmt"

	"lab/internal/insnprof"
	"lab/internal/results"
	"lab/internal/runfolder"
	"lab/internal/testbed"
	"lab/internal/vm"
)

// plugin is lab's instruction profile plugin for the plan's QEMU, resolved
// once ("" where it cannot load, said once; none on the wall clock or with
// NoProfile).
func (b *bisector) plugin(ctx context.Context) string {
	b.pluginOnce.Do(func() {
		if b.plan.Clock != results.ClockICount || b.opt.NoProfile {
			return
		}
		p, err := insnprof.Plugin(ctx, b.opt.CacheDir, b.plan.Arch.QEMU)
		if err != nil {
			b.logf("no instruction profile: %v", err)
			return
		}
		b.pluginPath = p
	})
	return b.pluginPath
}

// hasProfile reports whether the record holds a profile of step k.
func (b *bisector) hasProfile(k int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.run.Profiles {
		if p.Variant == results.StepVariant(k) {
			return true
		}
	}
	return false
}

// measuredProfile is opt.Measured's profile of kernel image, taken with
// this bisect's shape and job (it measures with the run's), so that no
// image is profiled twice.
func (b *bisector) measuredProfile(image string) (results.Profile, bool) {
	m := b.opt.Measured
	if m == nil {
		return results.Profile{}, false
	}
	for _, p := range m.Profiles {
		if !p.Same || p.Method != "" || p.Arch != b.plan.Arch.Name || p.Topology != b.plan.Shape.String() {
			continue
		}
		for _, k := range m.Kernels {
			if k.Arch == p.Arch && k.Variant == p.Variant && k.Info.ImageSHA256 == image {
				return p, true
			}
		}
	}
	return results.Profile{}, false
}

// profileCulprit boots, under icount, the culprit found and the step
// before it once more each with lab's instruction profile plugin (the
// followed figure's job, seed 1), so that the report says where in the
// kernel the culprit moved the figure. A profile that cannot be taken is
// said, not a failure: the culprit stands without it.
func (b *bisector) profileCulprit(ctx context.Context, res *Result) error {
	if res == nil || res.Outcome != Found && res.Outcome != Attributed || b.plan.Clock != results.ClockICount || b.opt.NoProfile || res.Culprit < 1 {
		return nil
	}
	for _, k := range []int{res.Culprit - 1, res.Culprit} {
		st := b.steps[k]
		if b.hasProfile(k) {
			continue // its first boot here took it
		}
		if st.Kernel == nil {
			b.logf("no instruction profile: step %d was not built", k)
			return nil
		}
		if p, ok := b.measuredProfile(st.Kernel.Info.ImageSHA256); ok {
			p.Variant = results.StepVariant(k)
			b.run.Profiles = append(b.run.Profiles, p)
			b.logf("profile: step %d (%s): run %s's profile of the same kernel image, shape and job", k, st.Name, b.opt.Measured.RunID)
			continue
		}
		plugin := b.plugin(ctx)
		if plugin == "" {
			return nil
		}
		b.mu.Lock()
		b.booted++
		idx := b.booted
		b.mu.Unlock()
		bt := testbed.Booter{Dir: b.dir, Boot: vm.Boot, ConsoleExpect: b.lab.ConsoleExpect, Logf: b.logf, Seed: 1, Plugin: plugin}
		label := fmt.Sprintf("profile: step %d (%s)", k, st.Name)
		prof, boot, err := bt.Profile(ctx, b.plan, *st.Kernel, b.bench.Initrd(b.plan.Arch.Name), results.StepVariant(k), idx, fmt.Sprintf("step%02d-profile", k), label)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			b.logf("no instruction profile of step %d: %v", k, err)
			return nil
		}
		for _, i := range st.Boots {
			for _, mb := range b.run.Boots {
				if mb.Index == i && mb.Seed == boot.Seed && mb.OK() {
					prof.Same = testbed.SameFigures(mb, boot)
				}
			}
		}
		b.run.Profiles = append(b.run.Profiles, prof)
		b.logf("%s: %d results profiled", label, len(prof.Results))
	}
	return runfolder.Folder{Dir: b.dir}.Save(b.run)
}
