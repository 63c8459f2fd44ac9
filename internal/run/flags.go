package run

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"lab/internal/flagval"
	"lab/internal/shard"
	"lab/internal/variant"
)

// Flags are the options of a run that are not part of the lab: where the
// cache and results go, the accelerator, make's -j, one variant only.
type Flags struct {
	Accel    flagval.String
	Cache    flagval.String
	Results  flagval.String
	Jobs     flagval.Int
	Only     flagval.String
	Parallel flagval.Int
	Shard    flagval.String
	NoBuild  flagval.Bool
	Sandbox  flagval.String
	// SameImage boots kernels that have one image: by default a run whose
	// comparisons are all between identical images boots nothing.
	SameImage flagval.Bool
}

// RegisterFlags adds the run options to fs.
func (f *Flags) RegisterFlags(fs *flag.FlagSet) {
	f.Cache.V = DefaultCache()
	fs.Var(&f.Accel, "accel", "force an accelerator: kvm or tcg (default: KVM when it really works)")
	fs.Var(&f.Cache, "cache", "cache of sources, kernels and images ($LAB_CACHE, or ~/.cache/lab)")
	fs.Var(&f.Results, "results", "results folder (default: results/ in lab's checkout)")
	fs.Var(&f.Jobs, "j", "make -j for kernel builds (default: host CPUs)")
	fs.Var(&f.Only, "only", "boot only this variant (baseline or patched): for soak and debugging runs")
	fs.Var(&f.Shard, "shard", "K/N: boot only this shard's pairs of boots (0 <= K < N); lab merge makes one run of the shards")
	fs.Var(&f.NoBuild, "no-build", "boot only what the cache holds (lab build filled it): no source, no compiler needed")
	fs.Var(&f.Sandbox, "sandbox", "build in a bubblewrap namespace (no network, read-only host): auto (when the lab or its series comes from outside lab's checkout, or from standard input), on or off")
	fs.Var(&f.SameImage, "boot-same-image", "boot the kernels even when the series changes no code (both images one sha256): by default lab says so and boots nothing")
	fs.Var(&f.Parallel, "parallel", "boots at once (default: the host's CPUs under icount; 1 under the wall clock, where lab run takes more with a caveat and lab bisect refuses it)")
}

// Apply fills in opt from the flags that were given; root is lab's
// checkout, where results/ goes by default.
func (f *Flags) Apply(opt *Options, root string) error {
	if f.Jobs.IsSet() && f.Jobs.V < 1 {
		return fmt.Errorf("-j %d: want 1 or more build jobs", f.Jobs.V)
	}
	if f.Parallel.IsSet() && f.Parallel.V < 1 {
		return fmt.Errorf("--parallel %d: want 1 or more boots at once", f.Parallel.V)
	}
	opt.Parallel = f.Parallel.V
	if f.Shard.IsSet() {
		sh, err := shard.Parse(f.Shard.V)
		if err != nil {
			return fmt.Errorf("--shard: %w", err)
		}
		opt.Shard = sh
	}
	opt.NoBuild, opt.BootSameImage = f.NoBuild.V, f.SameImage.V
	switch f.Sandbox.V {
	case "", "auto":
		// A lab or a series from outside lab's own checkout is someone
		// else's code (a series from standard input too).
		opt.Sandbox = false
		if opt.Lab != nil {
			opt.Sandbox = !within(opt.Lab.Root, root)
			for _, from := range seriesFrom(opt) {
				opt.Sandbox = opt.Sandbox || !within(from, root)
			}
		}
	case "on":
		opt.Sandbox = true
	case "off":
		opt.Sandbox = false
	default:
		return fmt.Errorf("--sandbox %q: want auto, on or off", f.Sandbox.V)
	}
	switch f.Accel.V {
	case "", "kvm", "tcg":
	default:
		return fmt.Errorf("--accel %q: want kvm or tcg", f.Accel.V)
	}
	if f.Only.IsSet() {
		v, err := variant.Parse(f.Only.V)
		if err != nil {
			return fmt.Errorf("--only: %w", err)
		}
		opt.Only = v
	}
	opt.Accel, opt.CacheDir, opt.Jobs = f.Accel.V, f.Cache.V, f.Jobs.V
	opt.ResultsDir = f.Results.V
	if opt.ResultsDir == "" {
		opt.ResultsDir = filepath.Join(root, "results")
	}
	return nil
}

// seriesFrom is where the run's series came from: the path given on the
// command line ("" for standard input), or the lab's; every series' of a
// run of several.
func seriesFrom(opt *Options) []string {
	if len(opt.Several) > 0 {
		var out []string
		for _, n := range opt.Several {
			abs, _ := filepath.Abs(n.Series.Input)
			out = append(out, abs)
		}
		return out
	}
	switch {
	case opt.Series == nil:
		return []string{opt.Lab.SeriesPath()}
	case opt.Series.Input == "-":
		return []string{""}
	}
	abs, _ := filepath.Abs(opt.Series.Input)
	return []string{abs}
}

// within reports whether dir is root or below it ("" is not).
func within(dir, root string) bool {
	if dir == "" {
		return false
	}
	rel, err := filepath.Rel(root, dir)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// DefaultCache is $LAB_CACHE, or ~/.cache/lab.
func DefaultCache() string {
	if d := os.Getenv("LAB_CACHE"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "lab-cache")
	}
	return filepath.Join(home, ".cache", "lab")
}
