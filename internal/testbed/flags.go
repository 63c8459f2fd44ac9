package testbed

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"lab/internal/flagval"
)

// Flags are the options of every command that builds and boots (run,
// build, bisect, track): the accelerator, the cache, the results folder,
// make's -j, the sandbox and the boots at once. A command registers them
// with its own.
type Flags struct {
	Accel    flagval.String
	Cache    flagval.String
	Results  flagval.String
	Jobs     flagval.Int
	Parallel flagval.Int
	Sandbox  flagval.String
}

// RegisterFlags adds them to fs.
func (f *Flags) RegisterFlags(fs *flag.FlagSet) {
	f.Cache.V = DefaultCache()
	fs.Var(&f.Accel, "accel", "force an accelerator: kvm or tcg (default: KVM when it really works)")
	fs.Var(&f.Cache, "cache", "cache of sources, kernels and images ($LAB_CACHE, or ~/.cache/lab)")
	fs.Var(&f.Results, "results", "results folder (default: results/ in lab's checkout)")
	fs.Var(&f.Jobs, "j", "make -j for kernel builds (default: host CPUs)")
	fs.Var(&f.Sandbox, "sandbox", "build in a bubblewrap namespace (no network, read-only host): auto (when the lab or its series comes from outside lab's checkout, or from standard input), on or off")
	fs.Var(&f.Parallel, "parallel", "boots at once (default: the host's CPUs under icount; 1 under the wall clock, where lab run takes more with a caveat and lab bisect refuses it)")
}

// Settings are what the flags set.
type Settings struct {
	Accel, CacheDir, ResultsDir string
	Jobs, Parallel              int
	Sandbox                     bool
}

// Apply checks the flags' values and gives the settings. root is lab's
// checkout, where results/ goes by default; from are where the lab and its
// series came from ("" for standard input): --sandbox auto sandboxes a
// build when any is outside root, someone else's code.
func (f *Flags) Apply(root string, from []string) (Settings, error) {
	s := Settings{Accel: f.Accel.V, CacheDir: f.Cache.V, ResultsDir: f.Results.V, Jobs: f.Jobs.V, Parallel: f.Parallel.V}
	if f.Jobs.IsSet() && f.Jobs.V < 1 {
		return s, fmt.Errorf("-j %d: want 1 or more build jobs", f.Jobs.V)
	}
	if f.Parallel.IsSet() && f.Parallel.V < 1 {
		return s, fmt.Errorf("--parallel %d: want 1 or more boots at once", f.Parallel.V)
	}
	switch f.Sandbox.V {
	case "", "auto":
		for _, p := range from {
			s.Sandbox = s.Sandbox || !within(p, root)
		}
	case "on":
		s.Sandbox = true
	case "off":
	default:
		return s, fmt.Errorf("--sandbox %q: want auto, on or off", f.Sandbox.V)
	}
	switch f.Accel.V {
	case "", "kvm", "tcg":
	default:
		return s, fmt.Errorf("--accel %q: want kvm or tcg", f.Accel.V)
	}
	if s.ResultsDir == "" {
		s.ResultsDir = filepath.Join(root, "results")
	}
	return s, nil
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
