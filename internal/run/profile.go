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

// plugins resolves, for each icount plan, lab's instruction profile plugin
// (Env.Plugin): the first boot of each kernel there loads it, so that a row
// that moved can say where in the kernel (report.WhereMoved). The plugin
// counts the guest without moving it: the boot's figures are the figures,
// and no boot is spent on the profile. A QEMU it cannot load in is said
// once, and the run measures without profiles. A shard (its merge judges
// the boots) and --only (nothing to compare) take none.
func (r *Runner) plugins(ctx context.Context, plans []testbed.ShapePlan) map[string]string {
	out := map[string]string{}
	if r.opt.Profile == ProfileOff || r.opt.Only != "" || r.opt.Shard.N >= 1 || r.opt.BuildOnly {
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

// profileOf reads the instruction profile of boot b, the first of its
// kernel, which loaded the plugin; nil (and said) when it cannot be read:
// the figures stand without it.
func (r *Runner) profileOf(b testbed.Booter, p testbed.ShapePlan, kernel results.Kernel, boot results.Boot) *results.Profile {
	prof, err := b.ReadProfile(p, kernel, boot)
	if err != nil {
		r.logf("no instruction profile of boot %d: %v", boot.Index, err)
		return nil
	}
	prof.Same = true // the measured boot itself
	return &prof
}
