package run

import (
	"flag"
	"fmt"
	"path/filepath"

	"lab/internal/flagval"
	"lab/internal/shard"
	"lab/internal/testbed"
	"lab/internal/variant"
)

// Flags are lab run's options that are not part of the lab: those of every
// command that builds and boots (testbed.Flags), and what one run boots:
// one variant only, a shard, from the cache alone, kernels of one image.
type Flags struct {
	testbed.Flags
	Only    flagval.String
	Shard   flagval.String
	NoBuild flagval.Bool
	// SameImage boots kernels that have one image: by default a run whose
	// comparisons are all between identical images boots nothing.
	SameImage flagval.Bool
	// Profile is when the kernels get an instruction profile: auto (those
	// of a shape where a row moved), on, off.
	Profile flagval.String
}

// RegisterFlags adds the run options to fs.
func (f *Flags) RegisterFlags(fs *flag.FlagSet) {
	f.Flags.RegisterFlags(fs)
	fs.Var(&f.Only, "only", "boot only this variant (baseline or patched): for soak and debugging runs")
	fs.Var(&f.Shard, "shard", "K/N: boot only this shard's pairs of boots (0 <= K < N); lab merge makes one run of the shards")
	fs.Var(&f.NoBuild, "no-build", "boot only what the cache holds (lab build filled it): no source, no compiler needed")
	fs.Var(&f.SameImage, "boot-same-image", "boot the kernels even when the series changes no code (both images one sha256): by default lab says so and boots nothing")
	f.Profile.V = ProfileAuto
	fs.Var(&f.Profile, "profile", "where in the kernel a row moved, from the first boot of each kernel: under icount an instruction profile (lab's QEMU plugin, which does not move the figures), on the wall clock a sampled one (kernel stacks at 997 Hz in one more sample of each benchmark): auto or on (when it can be taken) or off")
}

// Apply fills in opt from the flags that were given; root is lab's
// checkout, where results/ goes by default.
func (f *Flags) Apply(opt *Options, root string) error {
	var from []string
	if opt.Lab != nil {
		from = append([]string{opt.Lab.Root}, seriesFrom(opt)...)
	}
	s, err := f.Flags.Apply(root, from)
	if err != nil {
		return err
	}
	opt.Accel, opt.CacheDir, opt.ResultsDir, opt.Jobs, opt.Parallel, opt.Sandbox = s.Accel, s.CacheDir, s.ResultsDir, s.Jobs, s.Parallel, s.Sandbox
	if f.Shard.IsSet() {
		sh, err := shard.Parse(f.Shard.V)
		if err != nil {
			return fmt.Errorf("--shard: %w", err)
		}
		opt.Shard = sh
	}
	opt.NoBuild, opt.BootSameImage = f.NoBuild.V, f.SameImage.V
	switch f.Profile.V {
	case "", ProfileAuto, ProfileOn, ProfileOff: // "": flags not registered, the default
		opt.Profile = f.Profile.V
	default:
		return fmt.Errorf("--profile %q: want auto, on or off", f.Profile.V)
	}
	if f.Only.IsSet() {
		v, err := variant.Parse(f.Only.V)
		if err != nil {
			return fmt.Errorf("--only: %w", err)
		}
		opt.Only = v
	}
	return nil
}

// seriesFrom is where the run's series came from: each path given on the
// command line ("" for standard input), or the lab's.
func seriesFrom(opt *Options) []string {
	if len(opt.Series) == 0 {
		return []string{opt.Lab.SeriesPath()}
	}
	var out []string
	for _, n := range opt.Series {
		abs, _ := filepath.Abs(n.Series.Input)
		if n.Series.Input == "-" {
			abs = ""
		}
		out = append(out, abs)
	}
	return out
}
