package testbed

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"time"

	"lab/internal/arch"
	"lab/internal/initramfs"
	"lab/internal/results"
	"lab/internal/runfolder"
	"lab/internal/source"
	"lab/internal/spec"
)

// Bench is what a command builds and boots from: the lab's source tree,
// and per arch a kernel builder and the initramfs. Commands that build
// and boot (bisect, track) open one; Close unlocks the tree and closes
// the build log.
type Bench struct {
	Tree      *source.Tree
	kernels   map[string]*Kernels
	initramfs map[string]results.Initramfs
	log       *os.File
}

// BenchOptions are what a Bench is made from.
type BenchOptions struct {
	Lab        *spec.Lab
	Archs      []string // the archs it builds for, each once
	CacheDir   string
	ModuleRoot string // lab's checkout: the guest agent's sources
	Jobs       int
	Sandbox    bool
	Folder     runfolder.Folder // the build log goes there
	Logf       func(format string, args ...any)
	Progress   func(label string, compiled, expected int, elapsed time.Duration)
}

// OpenBench makes the source tree (recording it in rec.Source), checks
// each arch's config fragments against the tree's Kconfig symbols before
// anything is built, and makes each arch's kernel builder and initramfs
// (recorded in rec.Initramfs).
func OpenBench(ctx context.Context, o BenchOptions, rec *results.Run) (*Bench, error) {
	log, err := os.OpenFile(o.Folder.Log("build.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	b := &Bench{kernels: map[string]*Kernels{}, initramfs: map[string]results.Initramfs{}, log: log}
	if b.Tree, err = source.Prepare(ctx, source.Origin(o.Lab.Source), o.CacheDir, o.Logf); err != nil {
		b.Close()
		return nil, err
	}
	rec.Source = results.Source{Desc: b.Tree.Desc, ID: b.Tree.ID, Version: b.Tree.Version, Commit: b.Tree.BaseHash}
	for _, name := range o.Archs {
		if b.kernels[name] != nil {
			continue
		}
		if err := b.openArch(ctx, o, name, rec); err != nil {
			b.Close()
			return nil, err
		}
	}
	return b, nil
}

func (b *Bench) openArch(ctx context.Context, o BenchOptions, name string, rec *results.Run) error {
	a, err := arch.Lookup(name)
	if err != nil {
		return err
	}
	frags := o.Lab.Fragments(name)
	if err := b.Tree.CheckSymbols(ctx, frags); err != nil {
		return err
	}
	b.kernels[name] = &Kernels{Tree: b.Tree, CacheDir: o.CacheDir, Jobs: o.Jobs, Fragments: frags, Logf: o.Logf, Log: b.log,
		Progress: o.Progress, Sandboxed: o.Sandbox}
	img, err := initramfs.Build(ctx, o.ModuleRoot, a.GOARCH, o.CacheDir, b.log)
	if err != nil {
		return err
	}
	b.initramfs[name] = results.Initramfs{Arch: name, Path: img.Path, Key: img.Key, Cached: img.Cached}
	rec.Initramfs = append(rec.Initramfs, b.initramfs[name])
	return nil
}

// Kernel gives the kernel of commit for a (see Kernels.Get).
func (b *Bench) Kernel(ctx context.Context, a arch.Arch, commit, label string) (results.Kernel, error) {
	k := b.kernels[a.Name]
	if k == nil {
		return results.Kernel{}, fmt.Errorf("kernel %s: the bench has no %s builder (archs %v)", label, a.Name, slices.Sorted(maps.Keys(b.kernels)))
	}
	return k.Get(ctx, a, commit, label)
}

// Initrd is the initramfs image of arch.
func (b *Bench) Initrd(archName string) string { return b.initramfs[archName].Path }

// Close unlocks the tree and closes the build log.
func (b *Bench) Close() error {
	var err error
	if b.Tree != nil {
		err = b.Tree.Close()
	}
	if b.log != nil {
		b.log.Close()
	}
	return err
}
