// Package run carries out `lab run` in three steps: plan every shape of the
// lab's matrix (pure, before anything heavy), prepare what the guests boot
// (source, variants, kernels, initramfs), then measure: interleaved boots
// of baseline and patched, saving results as each boot finishes.
package run

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"lab/internal/progress"
	"lab/internal/results"
	"lab/internal/runfolder"
	"lab/internal/series"
	"lab/internal/shard"
	"lab/internal/spec"
	"lab/internal/testbed"
	"lab/internal/variant"
	"lab/internal/version"
	"lab/internal/vm"
)

// Options are the inputs of a run besides the lab.
type Options struct {
	Lab        *spec.Lab
	CacheDir   string          // kernels, sources, ccache, initramfs images
	ResultsDir string          // results/<lab>/<run-id>/ goes here
	ModuleRoot string          // lab's checkout (the agent's sources)
	Accel      string          // forced accelerator, "" for auto
	Command    []string        // the command line, recorded as the reproducer
	Out        io.Writer       // progress
	Jobs       int             // make -j, 0 for host CPUs
	Only       variant.Variant // boot only this variant (a soak or debugging run), "" for both
	// Parallel is how many boots may run at once: 0 is the default, the
	// host's CPUs for icount shapes (whose figures are instruction counts)
	// and 1 under the wall clock (guests side by side measure each other).
	Parallel int
	// Shard is this run's share of the boots (lab run --shard K/N).
	Shard shard.Shard
	// BuildOnly builds every kernel and initramfs and boots nothing (lab
	// build); NoBuild boots only what the cache holds (lab run --no-build).
	BuildOnly, NoBuild bool
	// Profile says whether the first measured boot of each icount kernel
	// takes an instruction profile (ProfileAuto when ""): see
	// Runner.plugins.
	Profile string
	// BootSameImage boots kernels that share an image; without it a run
	// whose every comparison is of one image says so and boots nothing.
	BootSameImage bool
	// Sandbox builds in a bubblewrap namespace: no network, the host
	// read-only but for the build and ccache directories.
	Sandbox bool
	// Series are the run's series when the caller opened them (lab run
	// --series reads them, from standard input too, before the run has a
	// folder), each named by its kernel's variant: one (patched), or
	// several against one baseline (lab run --series v1.mbx --series
	// v2.mbx). None: the run opens the lab's. The caller closes them.
	Series []NamedSeries
	// SaveLab writes the lab into the run folder (lab.yaml, with
	// LabHeader as its comment) and the series' patch files beside it
	// (series/), for a lab that has no file of its own or a series that
	// was given on the command line: results.json's repeat is then lab
	// run RUN/lab.yaml with RepeatFlags.
	SaveLab     bool
	LabHeader   string
	RepeatFlags []string
}

// NamedSeries is one series of a run and the variant it is measured as:
// its kernel's name ("patched" for the one series of a run, "v2", "srcu"
// for each of several).
type NamedSeries struct {
	Variant variant.Variant
	Series  *series.Series
}

// kernels are the run's variants in boot order: the baseline and each
// series' kernel (patched, when the run opens the lab's one series).
func (o Options) kernels() []variant.Variant {
	var names []variant.Variant
	for _, n := range o.Series {
		names = append(names, n.Variant)
	}
	return variant.Kernels(names)
}

// Runner holds one run's state.
type Runner struct {
	rep   progress.Reporter
	mu    sync.Mutex  // guards got: boots run in parallel
	got   map[int]int // benchmark results received, by boot
	total int         // benchmark results the run expects
	logs  []*os.File  // build and initramfs logs, closed when the run ends
	opt   Options
	lab   *spec.Lab
	env   Env
	run   *results.Run
	dir   string
	start time.Time
}

func (r *Runner) logf(format string, args ...any) { r.rep.Logf(format, args...) }

// received counts a boot's benchmark results, for the progress display.
func (r *Runner) received(boot, results int) {
	r.mu.Lock()
	r.got[boot] = results
	done := 0
	for _, n := range r.got {
		done += n
	}
	r.mu.Unlock()
	r.rep.Measure(done, r.total)
}

// step logs a step and how long it took.
func (r *Runner) step(name string, f func() error) error {
	r.logf("%s ...", name)
	t := time.Now()
	if err := f(); err != nil {
		return err
	}
	r.logf("%s: done in %.1fs", name, time.Since(t).Seconds())
	return nil
}

// Run runs the lab and returns the results (also when it fails part-way,
// with what was measured) and the run directory.
func Run(ctx context.Context, opt Options) (*results.Run, string, error) {
	return runImpl(ctx, opt, testbed.ReadHost(opt.Accel), realEnv{})
}

func runImpl(ctx context.Context, opt Options, host testbed.Host, env Env) (*results.Run, string, error) {
	lab := opt.Lab
	r := &Runner{opt: opt, lab: lab, env: env, start: time.Now(), got: map[int]int{}}
	r.rep = progress.New(opt.Out, r.start)
	defer r.rep.Stop()
	variants := opt.kernels()
	if err := checkSeries(opt); err != nil {
		return nil, "", err
	}
	if opt.Only != "" {
		variants = []variant.Variant{opt.Only}
	}
	// Everything that can fail without building or booting fails here,
	// before the run has a folder.
	plans, err := testbed.Plan(lab, host)
	if err != nil {
		return nil, "", err
	}
	testbed.Parallelize(plans, opt.Parallel, host.CPUs)
	boots, err := shapeBoots(plans, lab, opt.Shard)
	if err != nil {
		return nil, "", err
	}
	if err := env.Check(lab, opt); err != nil {
		return nil, "", err
	}
	folder, id, err := runfolder.New(filepath.Join(opt.ResultsDir, lab.Name), runID(opt))
	if err != nil {
		return nil, "", err
	}
	r.dir = folder.Dir
	r.run = newRecord(opt, id, host)
	if opt.SaveLab {
		if err := r.saveLab(); err != nil {
			return r.run, r.dir, err
		}
	}
	r.run.ShapeBoots = boots
	slots := opt.Shard.Pick(shard.Order(boots, variants))
	if opt.BuildOnly {
		slots = nil
	}
	if opt.Shard.N >= 1 {
		r.run.Shard = &results.Shard{K: opt.Shard.K, N: opt.Shard.N, Boots: len(slots)}
	}
	for _, s := range slots {
		r.total += testbed.ExpectedResults(plans[s.Shape].Job)
	}
	err = r.do(ctx, plans, slots)
	for _, f := range r.logs {
		f.Close()
	}
	r.run.Finished = time.Now().UTC()
	r.run.Elapsed = time.Since(r.start)
	var same *SameImageError
	r.run.Complete = err == nil || errors.As(err, &same)
	if werr := r.save(); werr != nil && err == nil {
		err = werr
	}
	return r.run, r.dir, err
}

// runID names a run's folder: when it started, marked as a build or as a
// shard of a planned run.
func runID(opt Options) string {
	id := time.Now().UTC().Format("20060102-150405")
	switch {
	case opt.BuildOnly:
		id = "build-" + id
	case opt.Shard.N >= 1:
		// --shard K/N given: a shard of a planned run, even of one
		// (lab submit slurm --shards 1), which lab merge takes.
		id += fmt.Sprintf("-shard%d-of-%d", opt.Shard.K, opt.Shard.N)
	}
	return id
}

// newRecord is a run's record as it starts: the lab and its file's digest,
// the command, the matrix, the host and the claims.
func newRecord(opt Options, id string, host testbed.Host) *results.Run {
	lab := opt.Lab
	kind := results.KindRun
	if opt.BuildOnly {
		kind = results.KindBuild
	}
	run := &results.Run{Kind: kind,
		Lab: lab.Name, LabFile: lab.Path, RunID: id, LabVersion: version.Lab(opt.ModuleRoot),
		Command: opt.Command, Started: time.Now().UTC(), Matrix: testbed.RecordMatrix(lab.Matrix), Host: hostInfo(host),
		Claims: testbed.RecordClaims(lab.Claims),
	}
	if data, err := os.ReadFile(lab.Path); err == nil {
		run.LabSHA256 = fmt.Sprintf("%x", sha256.Sum256(data))
	}
	return run
}

// shapeBoots are each shape's boots per kernel: as planned on this host, or
// for a shard by the lab's clock, as the plan that made it dealt them.
func shapeBoots(plans []testbed.ShapePlan, lab *spec.Lab, sh shard.Shard) ([]int, error) {
	if sh.N >= 1 {
		return shard.ShardBoots(lab.Matrix)
	}
	return testbed.ShapeBoots(plans, lab.Matrix), nil
}

func (r *Runner) do(ctx context.Context, plans []testbed.ShapePlan, slots []shard.Slot) error {
	art, err := r.env.Prepare(ctx, r)
	if err != nil {
		return err
	}
	r.run.Source, r.run.Series, r.run.Kernels, r.run.Initramfs = art.Source, art.Series, art.Kernels, art.Initramfs
	if err := r.save(); err != nil {
		return err
	}
	if err := r.checkImages(); err != nil || r.opt.BuildOnly {
		if err == nil {
			r.logf("built: %s", r.dir)
		}
		return err
	}
	failed, err := r.measure(ctx, plans, slots, art)
	if err != nil {
		return err
	}
	r.logf("results: %s", r.dir)
	if failed > 0 {
		e := &FailedBootsError{Failed: failed, Results: r.folder().Results()}
		for _, b := range r.run.Boots {
			if b.Failure.KernelFault() {
				e.Kernel++
			}
		}
		return e
	}
	return nil
}

// saveLab writes the series' patch files (series/) and the lab (lab.yaml,
// its series: ./series) into the run folder, and records lab.yaml as the
// run's lab file and lab run lab.yaml as the command that repeats it.
func (r *Runner) saveLab() error {
	f := r.folder()
	saved := *r.lab
	if len(r.opt.Series) > 1 {
		// A run of several: each series beside lab.yaml (series-v2),
		// named in its versions:.
		saved.Series, saved.Versions = "", nil
		for _, n := range r.opt.Series {
			if _, err := series.Open(n.Series.Dir, nil, f.SeriesOf(string(n.Variant))); err != nil {
				return fmt.Errorf("keep series %s in the run folder: %w", n.Variant, err)
			}
			saved.Versions = append(saved.Versions, spec.Version{Name: string(n.Variant), Series: runfolder.SeriesRefOf(string(n.Variant))})
		}
		return r.writeLab(saved, fmt.Sprintf("%d series: %s", len(r.opt.Series), f.SeriesOf("*")))
	}
	named, done, err := r.series()
	if err != nil {
		return err
	}
	defer done()
	if _, err := series.Open(named[0].Series.Dir, nil, f.Series()); err != nil {
		return fmt.Errorf("keep the series in the run folder: %w", err)
	}
	saved.Series = runfolder.SeriesRef
	return r.writeLab(saved, "series: "+f.Series())
}

// writeLab writes lab.yaml into the run folder, and records it as the
// run's lab file and lab run lab.yaml as the command that repeats it.
func (r *Runner) writeLab(saved spec.Lab, series string) error {
	f := r.folder()
	header := r.opt.LabHeader
	if header != "" {
		header += "\n"
	}
	header += "repeat the run: lab run " + f.Lab()
	data, err := saved.YAML(header)
	if err != nil {
		return err
	}
	if err := os.WriteFile(f.Lab(), data, 0o644); err != nil {
		return fmt.Errorf("keep the lab in the run folder: %w", err)
	}
	r.run.LabFile, r.run.LabSHA256 = f.Lab(), fmt.Sprintf("%x", sha256.Sum256(data))
	r.run.Repeat = append([]string{"lab", "run", f.Lab()}, r.opt.RepeatFlags...)
	r.logf("lab: %s (%s)", f.Lab(), series)
	return nil
}

// checkSeries refuses series names that are not distinct variant names,
// and an --only that names no kernel of the run.
func checkSeries(opt Options) error {
	seen := map[variant.Variant]bool{}
	for _, n := range opt.Series {
		if _, err := variant.Name(string(n.Variant)); err != nil {
			return fmt.Errorf("series %s: %w", n.Series.Name, err)
		}
		if seen[n.Variant] {
			return fmt.Errorf("two series are named %s: give each a distinct name", n.Variant)
		}
		seen[n.Variant] = true
	}
	if len(opt.Series) == 1 && opt.Series[0].Variant != variant.Patched {
		// (The report names the kernel of a run of one series patched.)
		return fmt.Errorf("series %s: the one series of a run is its patched kernel, not %s", opt.Series[0].Series.Name, opt.Series[0].Variant)
	}
	if kernels := opt.kernels(); opt.Only != "" && !slices.Contains(kernels, opt.Only) {
		return fmt.Errorf("--only %s: this run's kernels are %s", opt.Only, variantWords(kernels))
	}
	return nil
}

// checkImages says which compared kernels share an image: builds are
// reproducible, so a series that changes no code (comments, docs) gives
// its baseline's image, and boots of the two could only measure noise. A
// run whose every comparison is of one image boots nothing, unless asked
// to (--boot-same-image); lab build only says so.
func (r *Runner) checkImages() error {
	if r.opt.Only != "" {
		return nil
	}
	same, all := r.run.SameImages(variant.Comparisons(r.opt.kernels()[1:]))
	for _, s := range same {
		r.logf("no code change: %s", s)
		r.run.Notes = append(r.run.Notes, "no code change: "+s)
	}
	if !all || r.opt.BuildOnly || r.opt.BootSameImage {
		return r.save()
	}
	r.logf("nothing to measure: no boots (--boot-same-image boots them anyway)")
	return &SameImageError{Same: same}
}

// SameImageError is a run whose kernels to compare are one image each:
// nothing was booted.
type SameImageError struct{ Same []string }

func (e *SameImageError) Error() string {
	return "no code change, nothing booted: " + strings.Join(e.Same, "; ") + " (--boot-same-image boots them anyway)"
}

// FailedBootsError is a run that went to its end with boots that failed.
// A boot the kernel failed (a panic, a hang, a wrong shape) says something
// about the kernel and fails again; one that failed outside it (QEMU, the
// host, the disk: results.FailInfra) says nothing about it and may pass
// when run again. lab run's exit code tells the two apart.
type FailedBootsError struct {
	Failed  int    // boots that failed
	Kernel  int    // of those, the kernel's fault
	Results string // results.json, which says why each failed
}

func (e *FailedBootsError) Error() string {
	whose := fmt.Sprintf("%d the kernel's fault", e.Kernel)
	switch e.Kernel {
	case e.Failed:
		whose = "the kernel's fault"
	case 0:
		whose = "none the kernel's fault (QEMU, the host or its disk)"
	}
	return fmt.Sprintf("%d boot(s) failed, %s; see the failures in %s", e.Failed, whose, e.Results)
}

// Infrastructure reports whether no boot failed because of the kernel.
func (e *FailedBootsError) Infrastructure() bool { return e.Kernel == 0 }

// folder is the run's folder: what owns its paths.
func (r *Runner) folder() runfolder.Folder { return runfolder.Folder{Dir: r.dir} }

func (r *Runner) save() error { return r.folder().Save(r.run) }

// logWriter opens a log file in the run directory; Run closes it.
func (r *Runner) logWriter(name string) (io.Writer, error) {
	f, err := os.OpenFile(r.folder().Log(name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	r.logs = append(r.logs, f)
	return f, nil
}

func hostInfo(h testbed.Host) results.Host {
	out := results.Host{CPUs: h.CPUs, GOARCH: runtime.GOARCH, CPUModel: vm.HostCPUModel(h.VM.CPUInfo)}
	out.Name, _ = os.Hostname()
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		out.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	return out
}
