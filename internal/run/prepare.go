package run

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"lab/initramfs/protocol"
	"lab/internal/arch"
	"lab/internal/benchmark"
	"lab/internal/bpfbench"
	"lab/internal/digest"
	"lab/internal/guestroot"
	"lab/internal/initramfs"
	"lab/internal/insnprof"
	"lab/internal/kbuild"
	"lab/internal/results"
	"lab/internal/series"
	"lab/internal/source"
	"lab/internal/spec"
	"lab/internal/testbed"
	"lab/internal/variant"
	"lab/internal/vm"
)

// Env is what a run needs from the world outside its own logic: building
// what the guests boot, and booting them. Tests give a fake one, so that the
// orchestration (order, --only, failures, saves, Ctrl-C) runs in
// milliseconds.
type Env interface {
	// Check fails, before anything is written, when the lab's source is
	// not there or not one (source.Check), or the host lacks a tool.
	Check(lab *spec.Lab, opt Options) error
	// Prepare makes the source, the variants, the kernels and the
	// initramfs images, from the cache where it can.
	Prepare(ctx context.Context, r *Runner) (*Artifacts, error)
	// Boot runs one guest to completion (vm.Boot).
	Boot(ctx context.Context, c vm.Config, deadline time.Duration, progress func(string)) (*vm.Outcome, error)
	// Plugin is the instruction profile's QEMU plugin for QEMU binary
	// qemu (insnprof.Plugin), "" where there is none to load.
	Plugin(ctx context.Context, cacheDir, qemu string) (string, error)
}

// Artifacts are what the boots need, with their provenance.
type Artifacts struct {
	Source results.Source
	// Series are the run's series, each with its kernel's variant.
	Series    []results.Series
	Kernels   []results.Kernel
	Initramfs []results.Initramfs
}

// Kernel returns the kernel built for arch and v.
func (a *Artifacts) Kernel(archName string, v variant.Variant) (results.Kernel, error) {
	for _, k := range a.Kernels {
		if k.Arch == archName && k.Variant == v {
			return k, nil
		}
	}
	return results.Kernel{}, fmt.Errorf("no %s kernel for %s", v, archName)
}

// Initrd returns the initramfs built for arch.
func (a *Artifacts) Initrd(archName string) (string, error) {
	for _, i := range a.Initramfs {
		if i.Arch == archName {
			return i.Path, nil
		}
	}
	return "", fmt.Errorf("no initramfs for %s", archName)
}

// realEnv builds with kbuild and u-root and boots with QEMU.
type realEnv struct{}

// Check looks at the lab's source (a tarball that is one, a git tree with
// its base) and the host's tools. --no-build boots what the cache holds and
// needs neither.
func (realEnv) Check(lab *spec.Lab, opt Options) error {
	if !opt.NoBuild {
		if err := source.Check(context.Background(), source.Origin(lab.Source)); err != nil {
			return lab.Place(err)
		}
		if err := source.CheckConfig(context.Background(), source.Origin(lab.Source), opt.CacheDir, lab.AllFragments()); err != nil {
			return err
		}
	}
	return checkTools(lab, opt)
}

func (realEnv) Boot(ctx context.Context, c vm.Config, deadline time.Duration, progress func(string)) (*vm.Outcome, error) {
	return vm.Boot(ctx, c, deadline, progress)
}

func (realEnv) Plugin(ctx context.Context, cacheDir, qemu string) (string, error) {
	return insnprof.Plugin(ctx, cacheDir, qemu)
}

// Prepare builds what the boots need and records it in the cache (a
// manifest per arch); with --no-build it takes it from the cache alone.
func (realEnv) Prepare(ctx context.Context, r *Runner) (*Artifacts, error) {
	if r.opt.NoBuild {
		want := r.opt.kernels()
		if r.opt.Only != "" {
			want = []variant.Variant{r.opt.Only}
		}
		art, err := loadManifests(r.opt.CacheDir, r.lab, r.opt.Series, want)
		if err == nil {
			r.logf("--no-build: %d kernels and %d initramfs images from %s", len(art.Kernels), len(art.Initramfs), r.opt.CacheDir)
		}
		return art, err
	}
	art, err := build(ctx, r)
	if err != nil {
		return nil, err
	}
	return art, saveManifests(r.opt.CacheDir, r.lab, r.opt.Series, art)
}

// build makes the source, the variants, the kernels and the initramfs.
func build(ctx context.Context, r *Runner) (*Artifacts, error) {
	lab := r.lab
	art := &Artifacts{}
	var tree *source.Tree
	pre, err := r.preconfigure()
	if err != nil {
		return nil, err
	}
	err = r.step("source", func() (err error) {
		tree, err = source.Prepare(ctx, source.Origin(lab.Source), r.opt.CacheDir, r.logf, pre.Extracted)
		return err
	})
	pre.Finish(ctx, tree)
	if err != nil {
		return nil, err
	}
	defer tree.Close()
	art.Source = results.Source{Desc: tree.Desc, ID: tree.ID, Version: tree.Version, Commit: tree.BaseHash}
	r.logf("source: Linux %s, %s", tree.Version, tree.Desc)
	// An option the tree does not know fails here, naming its fragment
	// line, before any patch is applied or file compiled.
	for _, a := range lab.Matrix.Arch {
		if err := tree.CheckSymbols(ctx, lab.Fragments(a)); err != nil {
			return nil, err
		}
	}

	kernels, err := r.kernelsToBuild(ctx, tree, art)
	if err != nil {
		return nil, err
	}

	beside, stop := r.initramfsBeside(ctx)
	defer stop()

	for _, name := range lab.Matrix.Arch {
		a, err := arch.Lookup(name)
		if err != nil {
			return nil, err
		}
		for _, ko := range kernels {
			k, err := r.kernel(ctx, tree, a, ko.variant, ko.commit)
			if err != nil {
				return nil, blame(err, ko.series)
			}
			art.Kernels = append(art.Kernels, k)
		}
		if done, ok := beside[name]; ok {
			b := <-done
			if b.err != nil {
				return nil, b.err
			}
			art.Initramfs = append(art.Initramfs, b.img)
			continue
		}
		// The guest tools come from the last kernel: the patched one, or
		// the last series of several (the newest version).
		last := kernels[len(kernels)-1]
		files, tools, err := r.guestTools(ctx, tree, a, last.commit, art.Kernels[len(art.Kernels)-1])
		if err != nil {
			return nil, err
		}
		img, err := r.initramfs(ctx, a, files)
		if err != nil {
			return nil, err
		}
		img.Tools = tools
		art.Initramfs = append(art.Initramfs, img)
	}
	// Tree back to the source as shipped, for the next run and the user,
	// and unlocked (deferred Close): the boots need only the built images,
	// so another lab run may build while this one measures. A run that
	// built nothing never held it, and leaves it as it is.
	if tree.Held() {
		if err := tree.Checkout(ctx, tree.BaseHash); err != nil {
			return nil, fmt.Errorf("reset the source tree after the builds: %w", err)
		}
	}
	return art, nil
}

// preconfigure readies the configure of each arch's build folder to run
// beside the import of a tarball extracted for this run (on a fresh
// machine its configure and git's import each keep a core for half a
// minute, one after the other before).
func (r *Runner) preconfigure() (*testbed.Preconfigure, error) {
	log, err := r.logWriter("configure.log")
	if err != nil {
		return nil, err
	}
	p := &testbed.Preconfigure{CacheDir: r.opt.CacheDir, Fragments: r.lab.Fragments, Sandboxed: r.opt.Sandbox, Logf: r.logf, Log: log}
	for _, name := range r.lab.Matrix.Arch {
		if a, err := arch.Lookup(name); err == nil {
			p.Archs = append(p.Archs, a)
		}
	}
	return p, nil
}

// initramfsBeside starts each arch's initramfs when it does not depend on
// the kernels (no guest tool is built from the tree): on a fresh machine it
// is some 15 s of Go compiling, which then fills the cores make leaves idle
// while it configures and links. stop cancels what is still building and
// waits for it, so that leaving early leaves nothing running.
func (r *Runner) initramfsBeside(ctx context.Context) (beside map[string]chan builtInitramfs, stop func()) {
	beside = map[string]chan builtInitramfs{}
	if slices.Contains(r.lab.Tools, benchmark.BPFBench) {
		return beside, func() {}
	}
	bctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, name := range r.lab.Matrix.Arch {
		a, err := arch.Lookup(name)
		if err != nil {
			continue // build's own lookup reports it
		}
		done := make(chan builtInitramfs, 1)
		beside[name] = done
		wg.Add(1)
		go func() {
			defer wg.Done()
			img, err := r.initramfs(bctx, a, nil)
			done <- builtInitramfs{img, err}
		}()
	}
	return beside, func() { cancel(); wg.Wait() }
}

// builtInitramfs is an initramfs built beside the kernels.
type builtInitramfs struct {
	img results.Initramfs
	err error
}

// kernelOf is one kernel a run builds: its variant, commit, and the series
// blamed when it does not compile.
type kernelOf struct {
	variant variant.Variant
	commit  string
	series  *series.Series
}

// kernelsToBuild are the kernels the run boots: the baseline and each
// series' (or the one variant --only boots: the other's kernel would be
// built for nothing, a cold debug-info build for a bench-parity lab).
func (r *Runner) kernelsToBuild(ctx context.Context, tree *source.Tree, art *Artifacts) ([]kernelOf, error) {
	kernels, err := r.seriesKernels(ctx, tree, art)
	if err == nil && r.opt.Only != "" {
		kernels = slices.DeleteFunc(kernels, func(k kernelOf) bool { return k.variant != r.opt.Only })
	}
	return kernels, err
}

// seriesKernels are the baseline's kernel and each series' on it, as
// source.ResolveSeries chooses them in the lab's mode (for mode auto, the
// one the series goes on in); each series is recorded with its variant.
func (r *Runner) seriesKernels(ctx context.Context, tree *source.Tree, art *Artifacts) ([]kernelOf, error) {
	named, done, err := r.series()
	if err != nil {
		return nil, err
	}
	defer done()
	var list []*series.Series
	for _, n := range named {
		list = append(list, n.Series)
		for _, note := range n.Series.Notes {
			r.logf("series %s: %s", n.Variant, note)
		}
	}
	if r.lab.BaseNote != "" {
		r.logf("base: %s", r.lab.BaseNote)
	}
	var res source.Resolved
	err = r.step("patch: "+patchWords(named, r.lab.Mode), func() (err error) {
		res, err = tree.ResolveSeries(ctx, list, r.lab.Mode)
		return err
	})
	if err != nil {
		return nil, err
	}
	for _, line := range baselineWords(named, res) {
		r.logf("%s", line)
	}
	out := []kernelOf{{variant: variant.Baseline, commit: res.Baseline, series: list[0]}}
	for i, n := range named {
		rec := testbed.RecordSeries(n.Series, res.Each[i])
		rec.ModeAsked, rec.Base, rec.Variant = r.lab.Mode, r.lab.BaseNote, n.Variant
		art.Series = append(art.Series, rec)
		out = append(out, kernelOf{variant: n.Variant, commit: res.Each[i].Commits.Patched, series: n.Series})
	}
	return out, nil
}

// patchWords names the patch step: "revert series uprobe-srcu (1
// patches)", or "2 series, v1, v2 (mode auto)".
func patchWords(named []NamedSeries, mode string) string {
	if len(named) == 1 {
		s := named[0].Series
		return fmt.Sprintf("%s series %s (%d patches)", mode, s.Name, len(s.Patches))
	}
	var vs []variant.Variant
	for _, n := range named {
		vs = append(vs, n.Variant)
	}
	return fmt.Sprintf("%d series, %s (mode %s)", len(named), variantWords(vs), mode)
}

// baselineWords say how the baseline was chosen: the mode of one series,
// or the baseline of several and each series on it.
func baselineWords(named []NamedSeries, res source.Resolved) []string {
	if len(named) == 1 {
		return []string{"mode " + res.Why}
	}
	lines := []string{"baseline: " + res.Why}
	for _, n := range named {
		lines = append(lines, fmt.Sprintf("%s: %s (%d patches) on the baseline", n.Variant, n.Series.Name, len(n.Series.Patches)))
	}
	return lines
}

func variantWords(vs []variant.Variant) string {
	var out []string
	for _, v := range vs {
		out = append(out, string(v))
	}
	return strings.Join(out, ", ")
}

// series are the run's series: the ones the caller opened
// (Options.Series), or the lab's, opened here as its patched kernel; done
// closes what this opened.
func (r *Runner) series() (named []NamedSeries, done func(), err error) {
	if len(r.opt.Series) > 0 {
		return r.opt.Series, func() {}, nil
	}
	ser, err := r.lab.OpenSeries()
	if err != nil {
		return nil, nil, err
	}
	return []NamedSeries{{Variant: variant.Patched, Series: ser}}, func() { ser.Close() }, nil
}

// initramfs builds (or finds) the image for a, with the guest tools' files.
func (r *Runner) initramfs(ctx context.Context, a arch.Arch, files []initramfs.File) (results.Initramfs, error) {
	var out results.Initramfs
	err := r.step("initramfs "+a.GOARCH, func() error {
		log, err := r.logWriter("initramfs-" + a.GOARCH + ".log")
		if err != nil {
			return err
		}
		programs, made, err := r.workloadFiles(ctx, a)
		if err != nil {
			return err
		}
		img, err := initramfs.Build(ctx, r.opt.ModuleRoot, a.GOARCH, r.opt.CacheDir, log, append(files, programs...)...)
		if err != nil {
			return err
		}
		out = results.Initramfs{Arch: a.Name, Path: img.Path, Key: img.Key, Cached: img.Cached, Programs: made}
		if img.Cached {
			r.logf("initramfs %s: cached %s", a.GOARCH, img.Path)
		}
		return nil
	})
	return out, err
}

// workloadFiles are the programs of the lab's workloads that a's guests
// run, with the libraries they need: the host's, from Debian's package for
// the host's arch (the benchmark table says which arch cannot run them).
func (r *Runner) workloadFiles(ctx context.Context, a arch.Arch) ([]initramfs.File, []results.Program, error) {
	var files []initramfs.File
	var programs []results.Program
	// Workloads share programs (stress-ng) and programs share libraries:
	// each goes in once.
	seen, inImage := map[string]bool{}, map[string]bool{}
	for _, name := range r.lab.Matrix.Benchmarks {
		b, ok := benchmark.Lookup(name)
		if !ok || b.Program == nil || b.UnsupportedOn(a.Name) != "" || seen[b.Program.Path] {
			continue
		}
		seen[b.Program.Path] = true
		root, version, err := r.programRoot(ctx, a, b.Program.Package)
		if err != nil {
			return nil, nil, fmt.Errorf("workload %s on %s: %w", name, a.Name, err)
		}
		pf, err := initramfs.ProgramFiles(root, a.Multiarch, a.ELFMachine, b.Program.Path)
		if err != nil {
			return nil, nil, fmt.Errorf("workload %s: %w (Debian's %s package has it: ./scripts/install-deps --workloads)", name, err, b.Program.Package)
		}
		for _, f := range pf {
			if !inImage[f.Guest] {
				inImage[f.Guest] = true
				files = append(files, f)
			}
		}
		sum, err := digest.File(pf[0].Host)
		if err != nil {
			return nil, nil, err
		}
		programs = append(programs, results.Program{Path: b.Program.Path, Package: b.Program.Package + ":" + a.DebianArch,
			Version: version, SHA256: sum, Files: len(pf)})
	}
	return files, programs, nil
}

// programRoot is where a workload's package for a is found: the host's
// own files for the host's arch (installed from Debian), else a root of
// Debian's packages for a, fetched into the cache; and the package's
// version.
func (r *Runner) programRoot(ctx context.Context, a arch.Arch, pkg string) (root, version string, err error) {
	if a.GOARCH == runtime.GOARCH {
		out, _ := exec.CommandContext(ctx, "dpkg-query", "-W", "-f=${Version}", pkg).Output()
		return "/", strings.TrimSpace(string(out)), nil
	}
	return guestroot.Fetch(ctx, r.opt.CacheDir, a.DebianArch, pkg, r.logf)
}

// guestTools builds the lab's guest tools for a: the kernel's bench, from
// the patched commit (a series that adds a benchmark to it is measured by
// it) against the patched kernel's BTF. Both variants boot the same binary:
// a tool that changed between them would measure itself.
func (r *Runner) guestTools(ctx context.Context, tree *source.Tree, a arch.Arch, commit string, patched results.Kernel) ([]initramfs.File, []results.Tool, error) {
	if !slices.Contains(r.lab.Tools, benchmark.BPFBench) {
		return nil, nil, nil
	}
	var info *bpfbench.Info
	err := r.step("bpf-bench "+a.Name, func() error {
		if patched.Info.BTF == "" {
			return fmt.Errorf("the %s kernel has no BTF (CONFIG_DEBUG_INFO_BTF), which bench needs: is kernel-config/%s in the lab's fragments?",
				a.Name, "bpf-bench.config")
		}
		btf, err := os.ReadFile(patched.Info.BTF)
		if err != nil {
			return err
		}
		btfSum := fmt.Sprintf("%x", sha256.Sum256(btf))
		sources, err := tree.PathsID(ctx, commit, bpfbench.StagePaths())
		if err != nil {
			return err
		}
		clang, cc, err := bpfbench.Versions(ctx, a)
		if err != nil {
			return err
		}
		in := bpfbench.Inputs{Arch: a.Name, Sources: sources, BTFSHA256: btfSum, Clang: clang, CC: cc, SourceID: tree.ID, Commit: commit}
		log, err := r.logWriter("bpf-bench-" + a.Name + ".log")
		if err != nil {
			return err
		}
		b := &bpfbench.Builder{CacheDir: r.opt.CacheDir, SourceID: tree.ID, Jobs: r.opt.Jobs, Log: log, Sandboxed: r.opt.Sandbox}
		if info, err = b.Lookup(in); err != nil || info != nil {
			return err
		}
		if err := tree.Checkout(ctx, commit); err != nil {
			return err
		}
		info, err = b.Build(ctx, a, in, tree.Dir, patched.Info.BTF)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	how := fmt.Sprintf("built in %.1fs", info.Duration.Seconds())
	if info.Cached {
		how = "cached"
	}
	r.logf("bpf-bench %s: %s, %d bytes, %s set (key %s)", a.Name, how, info.Size, info.Set, info.Key)
	tool := results.Tool{Name: benchmark.BPFBench, Key: info.Key, SHA256: info.SHA256, Size: info.Size, Commit: commit,
		Set: info.Set, LeftOut: info.LeftOut, Duration: info.Duration, Cached: info.Cached}
	return []initramfs.File{{Host: info.Path, Guest: strings.TrimPrefix(protocol.ToolPath(benchmark.BPFBench), "/")}}, []results.Tool{tool}, nil
}

// blame puts first, for a kernel that does not compile, the compiler's
// error and the patches of the series that touch its file.
func blame(err error, ser *series.Series) error {
	line, ok := kbuild.Blame(err, func(file string) (string, []string) { return "", ser.Touching(file) })
	if !ok {
		return err
	}
	return fmt.Errorf("%s\n%w", line, err)
}

// kernel finds the kernel of one variant in the cache or builds it.
func (r *Runner) kernel(ctx context.Context, tree *source.Tree, a arch.Arch, v variant.Variant, commit string) (results.Kernel, error) {
	log, err := r.logWriter(fmt.Sprintf("build-%s-%s.log", a.Name, v))
	if err != nil {
		return results.Kernel{}, err
	}
	label := fmt.Sprintf("%s/%s", a.Name, v)
	k := &testbed.Kernels{Tree: tree, CacheDir: r.opt.CacheDir, Jobs: r.opt.Jobs, Fragments: r.lab.Fragments(a.Name), Logf: r.logf, Log: log,
		Progress: r.rep.Build, Sandboxed: r.opt.Sandbox}
	kern, err := k.Get(ctx, a, commit, label)
	r.rep.BuildDone(label)
	kern.Variant = v
	return kern, err
}

// checkTools fails early, naming the Debian package, when a tool is missing.
func checkTools(lab *spec.Lab, opt Options) error {
	need := map[string]string{"make": "make", "git": "git", "tar": "tar", "gcc": "gcc", "flex": "flex", "bison": "bison", "bc": "bc"}
	if opt.NoBuild {
		need = map[string]string{}
	}
	if opt.Sandbox && !opt.NoBuild {
		need["bwrap"] = "bubblewrap"
	}
	if slices.Contains(lab.Tools, benchmark.BPFBench) && !opt.NoBuild {
		// pahole makes the kernel's BTF: without it Kconfig drops
		// DEBUG_INFO_BTF and bench cannot load.
		need[bpfbench.Clang], need["llvm-strip-19"], need["pahole"] = "clang-19", "llvm-19", "dwarves"
	}
	if !opt.BuildOnly {
		// The host's arch takes a workload's program from the host; another
		// arch's comes from Debian's packages (guestroot).
		native := slices.ContainsFunc(lab.Matrix.Arch, func(name string) bool {
			a, err := arch.Lookup(name)
			return err == nil && a.GOARCH == runtime.GOARCH
		})
		for _, name := range lab.Matrix.Benchmarks {
			if b, ok := benchmark.Lookup(name); ok && b.Program != nil && native {
				need[b.Program.Path] = b.Program.Package + "; ./scripts/install-deps --workloads"
			}
		}
	}
	for _, name := range lab.Matrix.Arch {
		a, err := arch.Lookup(name)
		if err != nil {
			return err
		}
		if !opt.BuildOnly {
			need[a.QEMU] = a.QEMUPackage
		}
		if !opt.NoBuild {
			need[a.CC()] = a.CCPackage()
		}
	}
	var missing []string
	for bin, pkg := range need {
		if _, err := exec.LookPath(bin); err != nil {
			missing = append(missing, fmt.Sprintf("%s (Debian package %s)", bin, pkg))
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		return fmt.Errorf("missing tools: %s; run ./scripts/install-deps", strings.Join(missing, ", "))
	}
	return nil
}
