package bisect

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"lab/initramfs/protocol"
	"lab/internal/benchmark"
	"lab/internal/gitcmd"
	"lab/internal/initramfs"
	"lab/internal/kbuild"
	"lab/internal/kconfig"
	"lab/internal/progress"
	"lab/internal/results"
	"lab/internal/run"
	"lab/internal/series"
	"lab/internal/source"
	"lab/internal/spec"
	"lab/internal/stats"
	"lab/internal/variant"
	"lab/internal/verdict"
	"lab/internal/version"
	"lab/internal/vm"
	"lab/internal/workpool"
)

// Options are the inputs of a bisect besides the lab.
type Options struct {
	Lab        *spec.Lab
	CacheDir   string
	ResultsDir string
	ModuleRoot string
	Accel      string
	Jobs       int
	Command    []string
	Out        io.Writer
	// The figure to follow: Figure, or the Claim-th claim of the lab
	// (1-based), or (neither) the row that changed most between the ends.
	Figure *results.Figure
	Claim  int
	// Good and Bad bound a git range of the lab's git source; empty: the
	// lab's series.
	Good, Bad string
	Each      bool
	// Run judges one commit for git bisect run: the lab's git source's
	// HEAD against Good and Bad (their figures cached under icount, where
	// they repeat, so that every step of git's bisect reuses them).
	Run      bool
	MaxBoots int  // wall clock: the most boots of a step
	Sandbox  bool // build in a bubblewrap namespace
	// Parallel is how many boots run at once (--parallel; 0: the host's
	// CPUs under icount). A wall-clock bisect boots one at a time.
	Parallel int
	Host     *run.Host
}

// Run carries out a bisect and returns its record (also when it fails
// part-way) and folder.
func Run(ctx context.Context, opt Options) (*results.Run, string, error) {
	host := run.ReadHost(opt.Accel)
	if opt.Host != nil {
		host = *opt.Host
	}
	lab := opt.Lab
	if (opt.Good == "") != (opt.Bad == "") {
		return nil, "", fmt.Errorf("--good and --bad go together")
	}
	if opt.Good != "" && lab.Source.Git == "" {
		return nil, "", fmt.Errorf("--good/--bad bisect a git range: the lab's source must be a git tree (source: git:)")
	}
	if opt.Run && (opt.Good == "" || opt.Each || (opt.Figure == nil && opt.Claim == 0)) {
		return nil, "", fmt.Errorf("--run judges the git tree's HEAD for git bisect run: it needs --good and --bad, and a figure (--benchmark or --claim) that every step follows; not --each")
	}
	plans, err := run.Plan(lab, host)
	if err != nil {
		return nil, "", err
	}
	run.Parallelize(plans, opt.Parallel, host.CPUs)
	p := plans[0]
	if p.Clock != vm.ClockICount && opt.Parallel > 1 {
		return nil, "", fmt.Errorf("--parallel %d: this bisect runs under the wall clock (%s %s), where guests side by side slow each other and a step is judged against boots of the ends: it boots one guest at a time", opt.Parallel, p.Arch.Name, p.Shape)
	}
	fig, chosen, err := figureOf(opt, lab, p)
	if err != nil {
		return nil, "", err
	}
	// A bisect follows the agent's figure; guest tools (bpf-bench) are
	// for a run's side-by-side check, not built into its images.
	p.Job.Tools = nil
	b := &bisector{opt: opt, lab: lab, plan: p, fullJob: p.Job, start: time.Now(), pending: map[int][]Obs{}}
	b.rep = progress.New(opt.Out, b.start)
	defer b.rep.Stop()
	if fig != nil {
		b.follow(*fig, chosen)
	}
	if len(plans) > 1 {
		b.logf("the lab's matrix has %d shapes: bisecting on the first, %s %s (choose another with --arch and --cpus)", len(plans), p.Arch.Name, p.Shape)
	}
	id := "bisect-" + time.Now().UTC().Format("20060102-150405")
	b.dir = filepath.Join(opt.ResultsDir, lab.Name, id)
	if err := os.MkdirAll(b.dir, 0o755); err != nil {
		return nil, "", err
	}
	b.run = &results.Run{Lab: lab.Name, LabFile: lab.Path, RunID: id, LabVersion: version.Lab(opt.ModuleRoot),
		Command: opt.Command, Started: time.Now().UTC(), Matrix: lab.Matrix, Claims: lab.Claims,
		Host: results.Host{CPUs: host.CPUs, CPUModel: vm.HostCPUModel(host.VM.CPUInfo)}, Bisect: &results.Bisect{Clock: p.Clock, Parallel: b.workers()}}
	err = b.do(ctx)
	b.run.Finished = time.Now().UTC()
	b.run.Elapsed = time.Since(b.start)
	b.run.Complete = err == nil
	if werr := b.run.Write(b.dir); werr != nil && err == nil {
		err = werr
	}
	if b.log != nil {
		b.log.Close()
	}
	return b.run, b.dir, err
}

// figureOf is the figure the options or the lab's claims name, nil when the
// bisect is to choose it from the ends.
func figureOf(opt Options, lab *spec.Lab, p run.ShapePlan) (*results.Figure, string, error) {
	producers := p.Job.Producers
	switch {
	case opt.Figure != nil:
		f := *opt.Figure
		if err := benchmark.Check(f.Benchmark); err != nil {
			return nil, "", err
		}
		if f.Producers < 1 || f.Producers > p.Shape.CPUs {
			return nil, "", fmt.Errorf("--producers %d: the guest has %d vCPUs", f.Producers, p.Shape.CPUs)
		}
		if f.Scaling && f.Producers < 2 {
			return nil, "", fmt.Errorf("--scaling follows rate(P)/rate(1): give --producers 2 or more")
		}
		return &f, "asked for on the command line", nil
	case opt.Claim > 0:
		if opt.Claim > len(lab.Claims) {
			return nil, "", fmt.Errorf("--claim %d: the lab has %d claims", opt.Claim, len(lab.Claims))
		}
		c := lab.Claims[opt.Claim-1]
		for _, n := range c.Producers {
			for _, q := range producers {
				if n == q && (!c.Scaling || n > 1) {
					return &results.Figure{Benchmark: c.Benchmark, Producers: n, Scaling: c.Scaling},
						fmt.Sprintf("claim %d: %s", opt.Claim, verdict.ClaimText(c)), nil
				}
			}
		}
		if len(c.Producers) == 0 && !c.Scaling {
			return &results.Figure{Benchmark: c.Benchmark, Producers: producers[0]}, fmt.Sprintf("claim %d: %s", opt.Claim, verdict.ClaimText(c)), nil
		}
		return nil, "", fmt.Errorf("--claim %d (%s): this shape (%s) runs none of its producer counts %v", opt.Claim, verdict.ClaimText(c), p.Shape, c.Producers)
	}
	return nil, "", nil
}

// bisector is one bisect's state; it is the search's Env.
type bisector struct {
	opt     Options
	lab     *spec.Lab
	plan    run.ShapePlan
	fullJob protocol.Job
	rep     progress.Reporter
	fig     *results.Figure
	dir     string
	run     *results.Run
	start   time.Time
	log     *os.File
	tree    *source.Tree
	kernels *run.Kernels
	steps   []results.BisectStep
	initrd  string
	// pending are boots of the ends made before the figure was chosen, to
	// be handed to the search first.
	pending map[int][]Obs
	// ends is the --run cache of the ends' figures (icount), nil until
	// read.
	ends *endsCache
	// mu guards what boots running side by side share: the run's record
	// and boot count, the steps' boots, pending and ends.
	mu     sync.Mutex
	booted int
}

// workers is how many boots run at once: the plan's (see run.Parallelize)
// under icount, one under the wall clock.
func (b *bisector) workers() int {
	if b.plan.Clock != vm.ClockICount {
		return 1
	}
	return max(b.plan.Parallel, 1)
}

func (b *bisector) logf(format string, args ...any) { b.rep.Logf(format, args...) }

// follow sets the figure and cuts each boot's job down to it and the
// controls: under icount a boot costs its benchmarks' guest time.
func (b *bisector) follow(f results.Figure, why string) {
	b.fig = &f
	if b.run != nil {
		b.run.Bisect.Figure, b.run.Bisect.Chosen = f, why
	}
	job := b.fullJob
	job.Benchmarks = []string{f.Benchmark}
	for _, c := range benchmark.Controls() {
		if c != f.Benchmark && contains(b.fullJob.Benchmarks, c) {
			job.Benchmarks = append(job.Benchmarks, c)
		}
	}
	job.Producers = []int{f.Producers}
	if f.Scaling || f.Producers != 1 {
		// Controls and scaling ratios need the 1-producer rate too.
		job.Producers = []int{1, f.Producers}
		if f.Producers == 1 {
			job.Producers = []int{1}
		}
	}
	b.plan.Job = job
}

func (b *bisector) do(ctx context.Context) error {
	if b.fig != nil {
		b.run.Bisect.Figure, b.run.Bisect.Chosen = *b.fig, b.chosenText()
	}
	if err := b.prepare(ctx); err != nil {
		return err
	}
	defer b.tree.Close()
	if b.fig == nil {
		if err := b.chooseFigure(ctx); err != nil {
			return err
		}
	}
	mode := Mode{ICount: b.plan.Clock == vm.ClockICount, MaxBoots: b.opt.MaxBoots, Parallel: b.workers()}
	if w := b.workers(); w > 1 {
		b.logf("bisect: up to %d boots at a time (icount: a guest beside another does not change its figures)", w)
	}
	var res *Result
	var err error
	switch {
	case b.opt.Run:
		res, err = Probe(ctx, b, mode, 1)
	case b.opt.Each:
		res, err = Each(ctx, b, mode)
	default:
		res, err = Search(ctx, b, mode)
	}
	b.record(res)
	if err != nil {
		return err
	}
	return b.tree.Checkout(ctx, b.tree.BaseHash)
}

func (b *bisector) chosenText() string {
	if b.opt.Figure != nil {
		return "asked for on the command line"
	}
	return fmt.Sprintf("claim %d", b.opt.Claim)
}

// prepare makes the source tree, the steps and the initramfs.
func (b *bisector) prepare(ctx context.Context) error {
	log, err := os.OpenFile(filepath.Join(b.dir, "build.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	b.log = log
	tree, err := source.Prepare(ctx, b.lab.Source, b.opt.CacheDir, b.logf)
	if err != nil {
		return err
	}
	b.tree = tree
	b.run.Source = results.Source{Desc: tree.Desc, ID: tree.ID, Version: tree.Version, Commit: tree.BaseHash}
	if err := kconfig.CheckSymbols(tree.Dir, b.lab.Fragments(b.plan.Arch.Name)); err != nil {
		return err
	}
	switch {
	case b.opt.Run:
		err = b.probeSteps(ctx)
	case b.opt.Good != "":
		err = b.rangeSteps(ctx)
	default:
		err = b.seriesSteps(ctx)
	}
	if err != nil {
		return err
	}
	b.kernels = &run.Kernels{Tree: tree, CacheDir: b.opt.CacheDir, Jobs: b.opt.Jobs, Fragments: b.lab.Fragments(b.plan.Arch.Name), Logf: b.logf, Log: log, Progress: b.rep.Build, Sandboxed: b.opt.Sandbox}
	b.logf("bisect: %s, %d steps; %s, %s, %s clock", b.run.Bisect.Range, len(b.steps)-1, b.plan.Arch.Name, b.plan.Shape, b.plan.Clock)
	img, err := initramfs.Build(ctx, b.opt.ModuleRoot, b.plan.Arch.GOARCH, b.opt.CacheDir, log)
	if err != nil {
		return err
	}
	b.initrd = img.Path
	b.run.Initramfs = []results.Initramfs{{Arch: b.plan.Arch.Name, Path: img.Path, Key: img.Key, Cached: img.Cached}}
	b.run.Bisect.Steps = b.steps
	return b.run.Write(b.dir)
}

// seriesSteps: step k is the source with the first k patches of the series.
func (b *bisector) seriesSteps(ctx context.Context) error {
	ser, err := series.Load(b.lab.SeriesDir())
	if err != nil {
		return err
	}
	commits, err := b.tree.Variants(ctx, ser, b.lab.Mode)
	if err != nil {
		return err
	}
	b.run.Series = results.Series{Name: ser.Name, Mode: b.lab.Mode, Hash: ser.Hash(), Variants: commits}
	for _, p := range ser.Patches {
		b.run.Series.Patches = append(b.run.Series.Patches, results.Patch{Name: p.Name, Subject: p.Subject, SHA256: p.SHA256})
	}
	n := len(ser.Patches)
	var at []string // the commit of each step
	if b.lab.Mode == spec.ModeRevert {
		// The source has the series; lab reverted it last patch first:
		// base, -pN, -pN-1, ..., -p1 (the baseline).
		chain, err := b.tree.Chain(ctx, b.tree.BaseHash, commits.Baseline)
		if err != nil {
			return err
		}
		if len(chain) != n {
			return fmt.Errorf("revert of %s: %d commits for %d patches", ser.Name, len(chain), n)
		}
		at = make([]string, n+1)
		at[n] = b.tree.BaseHash
		for k := 0; k < n; k++ {
			at[k] = chain[n-1-k]
		}
	} else {
		chain, err := b.tree.Chain(ctx, b.tree.BaseHash, commits.Patched)
		if err != nil {
			return err
		}
		if len(chain) != n {
			return fmt.Errorf("git am of %s: %d commits for %d patches", ser.Name, len(chain), n)
		}
		at = append([]string{b.tree.BaseHash}, chain...)
	}
	b.run.Bisect.Range = fmt.Sprintf("series %s (%s mode, %d patches)", ser.Name, b.lab.Mode, n)
	b.steps = []results.BisectStep{{Index: 0, Name: "baseline", Subject: "the source without the series", Commit: at[0], SameAs: -1}}
	for k, p := range ser.Patches {
		b.steps = append(b.steps, results.BisectStep{Index: k + 1, Name: p.Name, Subject: p.Subject, Commit: at[k+1], SameAs: -1})
	}
	return nil
}

// resolveEnds resolves --good and --bad to commits of the lab's git source.
func (b *bisector) resolveEnds(ctx context.Context) (good, bad string, err error) {
	if good, err = b.tree.Resolve(ctx, b.opt.Good); err != nil {
		return "", "", err
	}
	if bad, err = b.tree.Resolve(ctx, b.opt.Bad); err != nil {
		return "", "", err
	}
	return good, bad, nil
}

// rangeSteps: step 0 is --good, step k the k-th first-parent commit after
// it, up to --bad.
func (b *bisector) rangeSteps(ctx context.Context) error {
	good, bad, err := b.resolveEnds(ctx)
	if err != nil {
		return err
	}
	chain, err := b.tree.Chain(ctx, good, bad)
	if err != nil {
		return err
	}
	b.run.Bisect.Range = fmt.Sprintf("git %s..%s (%d first-parent commits)", b.opt.Good, b.opt.Bad, len(chain))
	b.run.Series = results.Series{Name: "git " + b.opt.Good + ".." + b.opt.Bad, Variants: variant.Pair[string]{Baseline: good, Patched: bad}}
	b.steps = []results.BisectStep{{Index: 0, Name: short(good), Subject: subjectOf(ctx, b.tree, good), Commit: good, SameAs: -1}}
	for k, c := range chain {
		b.steps = append(b.steps, results.BisectStep{Index: k + 1, Name: short(c), Subject: subjectOf(ctx, b.tree, c), Commit: c, SameAs: -1})
	}
	return nil
}

// probeSteps: --good, the git source's HEAD (where git bisect stands),
// --bad.
func (b *bisector) probeSteps(ctx context.Context) error {
	good, bad, err := b.resolveEnds(ctx)
	if err != nil {
		return err
	}
	// git bisect --no-checkout (lab builds in its own work tree, so the
	// user's need not be rewritten) moves BISECT_HEAD, not HEAD.
	user := &gitcmd.Git{Dir: b.lab.Source.Git}
	head, err := user.Output(ctx, "rev-parse", "--verify", "-q", "BISECT_HEAD^{commit}")
	if err != nil {
		if head, err = user.Output(ctx, "rev-parse", "--verify", "HEAD^{commit}"); err != nil {
			return fmt.Errorf("--run: the HEAD of %s: %w", b.lab.Source.Git, err)
		}
	}
	if head == good || head == bad {
		return fmt.Errorf("--run: HEAD of %s is the %s end itself (%s)", b.lab.Source.Git, map[bool]string{true: "good", false: "bad"}[head == good], short(head))
	}
	b.run.Bisect.Range = fmt.Sprintf("git bisect run: HEAD %s between %s and %s", short(head), b.opt.Good, b.opt.Bad)
	b.run.Series = results.Series{Name: "git " + b.opt.Good + ".." + b.opt.Bad, Variants: variant.Pair[string]{Baseline: good, Patched: bad}}
	for k, c := range []string{good, head, bad} {
		b.steps = append(b.steps, results.BisectStep{Index: k, Name: short(c), Subject: subjectOf(ctx, b.tree, c), Commit: c, SameAs: -1})
	}
	return nil
}

func subjectOf(ctx context.Context, t *source.Tree, c string) string {
	s, _ := t.Subject(ctx, c)
	return s
}

// Steps is the number of patches (or commits): the search's N.
func (b *bisector) Steps() int { return len(b.steps) - 1 }

// Image builds step k's kernel, from the cache when it can.
func (b *bisector) Image(ctx context.Context, k int) (string, error) {
	st := &b.steps[k]
	if st.Kernel != nil {
		return st.Kernel.Info.ImageSHA256, nil
	}
	start := time.Now()
	label := fmt.Sprintf("step %d (%s)", k, st.Name)
	kern, err := b.kernels.Get(ctx, b.plan.Arch, st.Commit, label)
	b.rep.BuildDone(label)
	var be *kbuild.BuildError
	if errors.As(err, &be) {
		return "", &SkipError{Why: "does not build", Err: errors.New(b.blame(ctx, k, be))}
	}
	if err != nil {
		return "", err
	}
	if !kern.Cached {
		st.BuildSeconds = time.Since(start).Seconds()
	}
	kern.Variant = b.variantOf(k)
	b.mu.Lock()
	defer b.mu.Unlock()
	st.Kernel = &kern
	b.run.Kernels = append(b.run.Kernels, kern)
	return kern.Info.ImageSHA256, b.run.Write(b.dir)
}

// blame says why a step does not compile, first line first: the
// compiler's error (file and line, relative to the tree) and the step that
// last touched that file; make's output follows.
func (b *bisector) blame(ctx context.Context, k int, be *kbuild.BuildError) string {
	msg := be.Err.Error()
	line, ok := kbuild.Blame(be, func(file string) (string, []string) {
		for j := k; j >= 1; j-- {
			changed, err := b.tree.Changed(ctx, b.steps[j-1].Commit, b.steps[j].Commit)
			if err != nil {
				break
			}
			for _, c := range changed {
				if kbuild.SameFile(file, c) {
					return c, []string{b.steps[j].Name}
				}
			}
		}
		return "", nil
	})
	if !ok {
		return msg
	}
	return line + "\n" + msg
}

func (b *bisector) variantOf(k int) variant.Variant {
	switch k {
	case 0:
		return variant.Baseline
	case len(b.steps) - 1:
		return variant.Patched
	}
	return ""
}

// Measure boots step k once and reads the figure. Boots of steps whose
// kernels are built may run side by side.
func (b *bisector) Measure(ctx context.Context, k int) (Obs, error) {
	end := k == 0 || k == len(b.steps)-1
	b.mu.Lock()
	if b.opt.Run && end && b.plan.Clock == vm.ClockICount && b.ends == nil {
		b.loadEnds()
	}
	if q := b.pending[k]; len(q) > 0 {
		b.pending[k] = q[1:]
		b.mu.Unlock()
		from := "a boot of the ends that chose the figure"
		if b.opt.Run {
			from = "an earlier lab bisect --run of the same ends (" + b.endsPath() + ")"
		}
		b.logf("step %d (%s): figure from %s", k, b.steps[k].Name, from)
		return q[0], nil
	}
	b.mu.Unlock()
	boot, err := b.bootStep(ctx, k)
	if err != nil {
		return Obs{}, err
	}
	o, err := b.obs(boot)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err == nil && b.ends != nil && end {
		b.saveEnd(k, o)
	}
	return o, err
}

// endsCache is what lab bisect --run keeps of the ends between the steps
// of one git bisect: under icount their figures repeat, so the ends are
// booted once for the whole bisect, not once per step.
type endsCache struct {
	Good []Obs `json:"good"`
	Bad  []Obs `json:"bad"`
}

// endsPath is the ends' cache file: keyed by both ends' kernel images, the
// shape and the job (the figure and its controls).
func (b *bisector) endsPath() string {
	h := sha256.New()
	job, _ := b.plan.Job.Encode()
	fmt.Fprintf(h, "good=%s\nbad=%s\narch=%s\nshape=%s\naccel=%s\nclock=%s\njob=%s\nfigure=%s\n",
		b.steps[0].Kernel.Info.ImageSHA256, b.steps[len(b.steps)-1].Kernel.Info.ImageSHA256,
		b.plan.Arch.Name, b.plan.Shape, b.plan.Accel.Name, b.plan.Clock, job, b.fig)
	return filepath.Join(b.opt.CacheDir, "bisect-ends", hex.EncodeToString(h.Sum(nil))[:24]+".json")
}

func (b *bisector) loadEnds() {
	b.ends = &endsCache{}
	data, err := os.ReadFile(b.endsPath())
	if err != nil || json.Unmarshal(data, b.ends) != nil {
		b.ends = &endsCache{}
		return
	}
	b.pending[0] = append(b.pending[0], b.ends.Good...)
	b.pending[len(b.steps)-1] = append(b.pending[len(b.steps)-1], b.ends.Bad...)
}

func (b *bisector) saveEnd(k int, o Obs) {
	if k == 0 {
		b.ends.Good = append(b.ends.Good, o)
	} else {
		b.ends.Bad = append(b.ends.Bad, o)
	}
	path := b.endsPath()
	data, _ := json.MarshalIndent(b.ends, "", "  ")
	if os.MkdirAll(filepath.Dir(path), 0o755) == nil && os.WriteFile(path+".tmp", data, 0o644) == nil {
		os.Rename(path+".tmp", path)
	}
}

// bootStep boots step k, building its kernel first if need be (callers
// that boot side by side build first: there is one source tree).
func (b *bisector) bootStep(ctx context.Context, k int) (results.Boot, error) {
	st := &b.steps[k]
	if st.Kernel == nil {
		if _, err := b.Image(ctx, k); err != nil {
			return results.Boot{}, err
		}
	}
	b.mu.Lock()
	b.booted++
	idx := b.booted
	b.mu.Unlock()
	qmpDir, err := os.MkdirTemp("", "lab-qmp-")
	if err != nil {
		return results.Boot{}, err
	}
	defer os.RemoveAll(qmpDir)
	booter := run.Booter{Dir: b.dir, QMP: filepath.Join(qmpDir, "qmp.sock"), Boot: vm.Boot, ConsoleExpect: b.lab.ConsoleExpect, Logf: b.logf}
	label := fmt.Sprintf("boot %d: step %d/%d (%s)", idx, k, len(b.steps)-1, st.Name)
	boot, err := booter.Run(ctx, b.plan, *st.Kernel, b.initrd, "", idx, fmt.Sprintf("step%02d", k), label)
	boot.Variant = b.variantOf(k)
	if err != nil {
		boot.Fail(err)
	}
	b.mu.Lock()
	b.run.Boots = append(b.run.Boots, boot)
	sort.SliceStable(b.run.Boots, func(i, j int) bool { return b.run.Boots[i].Index < b.run.Boots[j].Index })
	st.Boots = append(st.Boots, idx)
	sort.Ints(st.Boots)
	werr := b.run.Write(b.dir)
	b.mu.Unlock()
	if werr != nil {
		return boot, werr
	}
	switch {
	case err == nil:
		return boot, nil
	case vm.KernelFault(vm.Kind(err)):
		return boot, &SkipError{Why: "does not boot (" + vm.Kind(err) + ")", Err: errors.New(firstLine(err.Error()))}
	}
	return boot, err
}

// obs reads the followed figure and the controls' rates from a boot.
func (b *bisector) obs(boot results.Boot) (Obs, error) {
	v, ok := b.fig.Of(boot)
	if !ok {
		return Obs{}, &SkipError{Why: "no figure", Err: fmt.Errorf("boot %d did not measure %s", boot.Index, b.fig)}
	}
	o := Obs{Value: v, Controls: map[string]float64{}}
	for _, r := range boot.Results {
		if benchmark.IsControl(r.Benchmark) && r.Tool == "" && r.OK() && r.Producers == 1 {
			o.Controls[r.Benchmark] = protocol.Rate(r.Samples)
		}
	}
	b.logf("boot %d (step %s): %s = %s", boot.Index, stepOf(b.steps, boot.Index), b.fig, formatFigure(*b.fig, v))
	return o, nil
}

func stepOf(steps []results.BisectStep, boot int) string {
	for _, s := range steps {
		if contains(s.Boots, boot) {
			return fmt.Sprint(s.Index)
		}
	}
	return "?"
}

// chooseFigure boots both ends with the lab's whole job and follows the
// non-control row that changed most between them.
func (b *bisector) chooseFigure(ctx context.Context) error {
	n := len(b.steps) - 1
	boots := 4
	if b.plan.Clock == vm.ClockICount {
		boots = 2
	}
	for _, k := range []int{0, n} {
		if _, err := b.Image(ctx, k); err != nil {
			return fmt.Errorf("measure the ends to choose a figure: %w", err)
		}
	}
	var ks []int
	for i := 0; i < boots; i++ {
		ks = append(ks, 0, n)
	}
	ends := make([]results.Boot, len(ks))
	errs, stop := workpool.Run(ctx, len(ks), b.workers(), func(ctx context.Context, i int) (err error) {
		ends[i], err = b.bootStep(ctx, ks[i])
		return err
	}, stopAlways)
	if stop >= 0 {
		return fmt.Errorf("measure the ends to choose a figure: %w", errs[stop])
	}
	tables := verdict.Tables(&results.Run{Boots: ends})
	if len(tables) == 0 {
		return fmt.Errorf("the ends delivered no figures")
	}
	var best *verdict.Row
	for _, rows := range [][]verdict.Row{tables[0].Rows, tables[0].Scaling} {
		for i := range rows {
			r := &rows[i]
			if r.Control || r.Change.NoData || r.Metric == verdict.MetricVsFree {
				continue
			}
			if best == nil || (r.Change.Verdict != stats.Same && best.Change.Verdict == stats.Same) ||
				(sameness(r) == sameness(best) && math.Abs(r.Change.Pct) > math.Abs(best.Change.Pct)) {
				best = r
			}
		}
	}
	if best == nil {
		return fmt.Errorf("the ends share no benchmark to follow")
	}
	f := results.Figure{Benchmark: best.Benchmark, Producers: best.Producers, Scaling: best.Metric == verdict.MetricScaling}
	why := fmt.Sprintf("the row that changed most between the ends: %+.3f %% [%+.3f, %+.3f], p = %.3f", best.Change.Pct, best.Change.Lo, best.Change.Hi, best.Change.P)
	b.logf("following %s: %s", f, why)
	b.follow(f, why)
	b.pending = map[int][]Obs{}
	for _, boot := range ends {
		o, err := b.obs(boot)
		if err != nil {
			return err
		}
		k := 0
		if boot.Variant == variant.Patched {
			k = n
		}
		b.pending[k] = append(b.pending[k], o)
	}
	return nil
}

func sameness(r *verdict.Row) bool { return r.Change.Verdict == stats.Same }

// record copies the search's answer into the run's record.
func (b *bisector) record(res *Result) {
	if res == nil {
		return
	}
	Record(b.run.Bisect, res, b.steps, b.opt.Each)
	b.steps = b.run.Bisect.Steps
}

// Record writes a search's answer into a bisect's record, step by step.
func Record(bi *results.Bisect, res *Result, steps []results.BisectStep, each bool) {
	bi.Each, bi.Outcome, bi.Culprit, bi.First = each, res.Outcome, res.Culprit, res.First
	bi.Change, bi.Own, bi.Explains, bi.Notes, bi.Boots = res.Change, res.Own, res.Explains, res.Notes, res.Measured
	bi.FloorPct, bi.LikePct = res.FloorPct, res.LikePct
	for k := range steps {
		st := &steps[k]
		if k < len(res.Steps) {
			st.Verdict, st.Skip, st.SameAs = res.Steps[k].Verdict, res.Steps[k].Skip, res.Steps[k].SameAs
			st.Values = res.Steps[k].Values()
		}
	}
	bi.Steps = steps
}

func formatFigure(f results.Figure, v float64) string {
	if f.Scaling {
		return fmt.Sprintf("%.4f", v)
	}
	return fmt.Sprintf("%.5f M/s", v/1e6)
}

func short(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

func contains[T comparable](s []T, v T) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
