package testbed

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"lab/initramfs/protocol"
	"lab/internal/insnprof"
	"lab/internal/results"
	"lab/internal/stackprof"
	"lab/internal/variant"
)

// Profile boots kernel with plan p and lab's instruction profile plugin
// (bt.Plugin), as boot idx of the record's folder, and reads where each
// benchmark result's instructions went, by the kernel's System.map. The
// plugin counts the guest without moving it: a profile boot of the plan,
// job and seed of a measured boot gives that boot's figures (SameFigures).
func (bt Booter) Profile(ctx context.Context, p ShapePlan, kernel results.Kernel, initrd string, v variant.Variant, idx int, name, label string) (results.Profile, results.Boot, error) {
	boot, err := bt.Run(ctx, p, kernel, initrd, v, idx, name, label)
	if err != nil {
		return results.Profile{}, boot, err
	}
	prof, err := bt.ReadProfile(p, kernel, boot)
	return prof, boot, err
}

// ReadProfile reads the instruction profile of boot, a boot of kernel with
// plan p that loaded bt.Plugin: its plugin's output, named by the kernel's
// System.map, for each benchmark result.
func (bt Booter) ReadProfile(p ShapePlan, kernel results.Kernel, boot results.Boot) (results.Profile, error) {
	syms, err := insnprof.LoadSystemMap(filepath.Join(filepath.Dir(kernel.Info.Image), "System.map"))
	if err != nil {
		return results.Profile{}, fmt.Errorf("the kernel's symbols: %w", err)
	}
	dir := filepath.Dir(boot.Console)
	out := filepath.Join(dir, "insncount.txt")
	f, err := os.Open(filepath.Join(bt.Dir, out))
	if err != nil {
		return results.Profile{}, err
	}
	defer f.Close()
	sections, err := insnprof.ReadSections(f)
	if err != nil {
		return results.Profile{}, fmt.Errorf("the plugin's output %s: %w", out, err)
	}
	res, err := insnprof.Summarize(boot, sections, syms)
	if err != nil {
		return results.Profile{}, err
	}
	prof := results.Profile{Arch: p.Arch.Name, Variant: boot.Variant, Topology: p.Shape.String(), Seed: boot.Seed, Dir: dir,
		Plugin: filepath.Base(bt.Plugin), Results: res}
	if boot.Outcome != nil {
		prof.QEMU = boot.Outcome.QEMUVersion
	}
	return prof, nil
}

// ReadStacks reads the sampled profile of boot, a boot of kernel with plan
// p that sampled kernel stacks (Booter.StackHz), named by the kernel's
// System.map. A result whose sampler failed is said in the error when no
// result has a profile, else left out.
func (bt Booter) ReadStacks(p ShapePlan, kernel results.Kernel, boot results.Boot) (results.Profile, error) {
	syms, err := insnprof.LoadSystemMap(filepath.Join(filepath.Dir(kernel.Info.Image), "System.map"))
	if err != nil {
		return results.Profile{}, fmt.Errorf("the kernel's symbols: %w", err)
	}
	res, failed := stackprof.Summarize(boot, syms)
	if len(res) == 0 {
		if len(failed) > 0 {
			return results.Profile{}, fmt.Errorf("the guest sampled no stacks: %s", strings.Join(failed, "; "))
		}
		return results.Profile{}, fmt.Errorf("the guest sampled no stacks (an agent without the sampler?)")
	}
	for _, f := range failed {
		bt.Logf("no sampled profile of %s", f)
	}
	return results.Profile{Method: stackprof.Method, Arch: p.Arch.Name, Variant: boot.Variant, Topology: p.Shape.String(),
		Dir: filepath.Dir(boot.Console), Same: true, Results: res}, nil
}

// SameFigures reports whether boot b gave every result a's did, sample by
// sample.
func SameFigures(a, b results.Boot) bool {
	if len(a.Results) != len(b.Results) {
		return false
	}
	for i := range a.Results {
		x, y := a.Results[i], b.Results[i]
		if x.Benchmark != y.Benchmark || x.Producers != y.Producers || protocol.Rate(x.Samples) != protocol.Rate(y.Samples) {
			return false
		}
	}
	return true
}
