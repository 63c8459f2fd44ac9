package testbed

import (
	"context"
	"io"
	"sync"
	"time"

	"lab/internal/arch"
	"lab/internal/gitcmd"
	"lab/internal/kbuild"
	"lab/internal/kconfig"
	"lab/internal/progress"
	"lab/internal/results"
	"lab/internal/source"
)

// Kernels builds the kernels of one source tree: from the cache when it
// holds the same content (whatever lab, series or commit led to it), or in
// the tree's shared build directory, so that a kernel close to the last one
// built is an incremental build.
type Kernels struct {
	Tree      *source.Tree
	CacheDir  string
	Jobs      int
	Fragments []string
	Logf      func(format string, args ...any)
	Log       io.Writer // make's output
	// Progress, when set, hears how far a build is (objects compiled, and
	// the count of the last build of the same directory); otherwise Logf
	// gets a line every few seconds.
	Progress func(label string, compiled, expected int, elapsed time.Duration)
	// Sandboxed builds in a bubblewrap namespace (see kbuild.Builder).
	Sandboxed bool
}

// Get returns the kernel of commit for a. label names it in progress lines.
// A kernel that does not compile is a *kbuild.BuildError.
func (k *Kernels) Get(ctx context.Context, a arch.Arch, commit, label string) (results.Kernel, error) {
	cc, err := kbuild.CompilerVersion(ctx, a.CC())
	if err != nil {
		return results.Kernel{}, err
	}
	treeHash, err := k.Tree.TreeHash(ctx, commit)
	if err != nil {
		return results.Kernel{}, err
	}
	in := kbuild.Inputs{Tree: treeHash, SourceID: k.Tree.ID, Commit: commit, Arch: a.Name, Fragments: k.Fragments, Compiler: cc}
	b := &kbuild.Builder{
		CacheDir: k.CacheDir, SrcDir: k.Tree.Dir, SourceID: k.Tree.ID, Jobs: k.Jobs, Log: k.Log, Sandboxed: k.Sandboxed,
		Progress: func(done, expected int, el time.Duration) {
			if k.Progress != nil {
				k.Progress(label, done, expected, el)
				return
			}
			k.Logf("%s", progress.BuildLine(label, done, expected, el))
		},
	}
	start := time.Now()
	k.Logf("kernel %s ...", label)
	info, err := b.Lookup(in)
	if err == nil && info == nil {
		info = k.parentsImage(ctx, b, in)
	}
	if err == nil && info == nil {
		// Another run may be building this very kernel: it is taken from
		// the cache as soon as it is there, not after that run's builds.
		var held bool
		held, err = k.Tree.HoldUnless(ctx, func() bool {
			info, _ = b.Lookup(in)
			return info != nil
		})
		if err == nil && held {
			info, err = b.Lookup(in)
		}
		if err == nil && info == nil {
			if err = k.Tree.Checkout(ctx, commit); err == nil {
				if b.KconfigID, err = k.Tree.KconfigID(ctx); err == nil {
					info, err = b.Build(ctx, a, in)
				}
			}
		}
	}
	if err != nil {
		return results.Kernel{}, err
	}
	switch {
	case info.Cached:
		k.Logf("kernel %s: cached, 0 compiled (key %s, %s)", label, info.Key, info.Image)
	case info.SameAs != "":
		k.Logf("kernel %s: 0 compiled: the image of its parent (key %s), whose tree differs only in files no build reads (key %s)", label, info.SameAs, info.Key)
	default:
		if info.Seeded != "" {
			k.Logf("kernel %s: a first build here: its build folder is a copy of %s", label, info.Seeded)
		}
		k.Logf("kernel %s: %d compiled in %.1fs (configure %.1fs, make %.1fs; key %s)", label, info.Compiled, time.Since(start).Seconds(),
			info.Configure.Seconds(), info.Make.Seconds(), info.Key)
	}
	return results.Kernel{Arch: a.Name, Info: RecordBuild(*info), Cached: info.Cached}, nil
}

// parentsImage is the kernel of commit's first parent, stored under in's
// key, when the parent's kernel is cached and commit changes only files
// no build reads (kbuild.Unread: documentation, a licence): a track or a
// bisect then neither checks such a commit out nor makes it. nil when
// that does not hold, or when taking it failed: then commit is built.
func (k *Kernels) parentsImage(ctx context.Context, b *kbuild.Builder, in kbuild.Inputs) *kbuild.Info {
	parent, err := k.Tree.Resolve(ctx, in.Commit+"^")
	if err != nil {
		return nil // a root commit
	}
	changed, err := k.Tree.Changed(ctx, parent, in.Commit)
	if err != nil || !kbuild.Unread(changed) {
		return nil
	}
	pin := in
	pin.Commit = parent
	if pin.Tree, err = k.Tree.TreeHash(ctx, parent); err != nil {
		return nil
	}
	from, err := b.Lookup(pin)
	if err != nil || from == nil || !sameRelease(ctx, k.Tree, from, parent, in.Commit) {
		return nil
	}
	info, err := b.Alias(from, in)
	if err != nil {
		k.Logf("kernel %s: its parent's image not taken, building it: %v", gitcmd.Short(in.Commit), err)
		return nil
	}
	return info
}

// sameRelease says whether the kernel of commit would carry the release
// string of its parent's kernel from: not when either is where an
// annotated tag points (the "+" of scripts/setlocalversion comes and goes
// there), nor under CONFIG_LOCALVERSION_AUTO (each commit's own name).
func sameRelease(ctx context.Context, tree *source.Tree, from *kbuild.Info, parent, commit string) bool {
	cfg, err := kconfig.Values(from.Config)
	if err != nil || cfg["CONFIG_LOCALVERSION_AUTO"] == "y" {
		return false
	}
	return !tree.AtTag(ctx, parent) && !tree.AtTag(ctx, commit)
}

// Preconfigure is what a fresh tarball tree's builds can do before git has
// stored the tree: configure each arch's build folder beside the import
// (kbuild.Builder.Preconfigure). Extracted starts it (the hook of
// source.Prepare); Finish waits for it and stamps each folder with the
// tree's KconfigID, or leaves it to be configured again when the tree did
// not come.
type Preconfigure struct {
	CacheDir  string
	Archs     []arch.Arch
	Fragments func(arch string) []string
	Sandboxed bool
	Logf      func(format string, args ...any)
	Log       io.Writer // configure's output

	wg   sync.WaitGroup
	mu   sync.Mutex
	done []func(kconfigID string)
}

// Extracted configures every arch's folder of the tree at dir, id, each in
// its own goroutine.
func (p *Preconfigure) Extracted(dir, id string) {
	for _, a := range p.Archs {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			ctx := context.Background()
			cc, err := kbuild.CompilerVersion(ctx, a.CC())
			if err != nil {
				return // Build says why
			}
			b := &kbuild.Builder{CacheDir: p.CacheDir, SrcDir: dir, SourceID: id, Log: p.Log, Sandboxed: p.Sandboxed}
			start := time.Now()
			done, err := b.Preconfigure(ctx, a, kbuild.Inputs{Arch: a.Name, Fragments: p.Fragments(a.Name), Compiler: cc})
			switch {
			case err != nil:
				p.Logf("configure %s beside the import: %v (configured again before make)", a.Name, err)
				return
			case done == nil:
				return // a folder there already, or one to seed it from
			}
			p.Logf("configure %s beside the import: done in %.1fs", a.Name, time.Since(start).Seconds())
			p.mu.Lock()
			p.done = append(p.done, done)
			p.mu.Unlock()
		}()
	}
}

// Finish waits for the configures and stamps them with tree's KconfigID
// (tree nil: the import failed, nothing is stamped).
func (p *Preconfigure) Finish(ctx context.Context, tree *source.Tree) {
	p.wg.Wait()
	id := ""
	if tree != nil && len(p.done) > 0 {
		id, _ = tree.KconfigID(ctx)
	}
	for _, done := range p.done {
		done(id)
	}
	p.done = nil
}
