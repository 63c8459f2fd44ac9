package testbed

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"lab/initramfs/protocol"
	"lab/internal/insnprof"
	"lab/internal/results"
	"lab/internal/variant"
)

// Profile boots kernel with plan p and lab's instruction profile plugin
// (bt.Plugin), as boot idx of the record's folder, and reads where each
// benchmark result's instructions went, by the kernel's System.map. The
// plugin counts the guest without moving it: a profile boot of the plan,
// job and seed of a measured boot gives that boot's figures (SameFigures).
func (bt Booter) Profile(ctx context.Context, p ShapePlan, kernel results.Kernel, initrd string, v variant.Variant, idx int, name, label string) (results.Profile, results.Boot, error) {
	syms, err := insnprof.LoadSystemMap(filepath.Join(filepath.Dir(kernel.Info.Image), "System.map"))
	if err != nil {
		return results.Profile{}, results.Boot{}, fmt.Errorf("the kernel's symbols: %w", err)
	}
	boot, err := bt.Run(ctx, p, kernel, initrd, v, idx, name, label)
	if err != nil {
		return results.Profile{}, boot, err
	}
	dir := filepath.Dir(boot.Console)
	out := filepath.Join(dir, "insncount.txt")
	f, err := os.Open(filepath.Join(bt.Dir, out))
	if err != nil {
		return results.Profile{}, boot, err
	}
	defer f.Close()
	sections, err := insnprof.ReadSections(f)
	if err != nil {
		return results.Profile{}, boot, fmt.Errorf("the plugin's output %s: %w", out, err)
	}
	res, err := insnprof.Summarize(boot, sections, syms)
	if err != nil {
		return results.Profile{}, boot, err
	}
	prof := results.Profile{Arch: p.Arch.Name, Variant: v, Topology: p.Shape.String(), Seed: boot.Seed, Dir: dir,
		Plugin: filepath.Base(bt.Plugin), Results: res}
	if boot.Outcome != nil {
		prof.QEMU = boot.Outcome.QEMUVersion
	}
	return prof, boot, nil
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
