package bisect

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"lab/initramfs/protocol"
	"lab/internal/progress"
	"lab/internal/results"
	"lab/internal/runfolder"
	"lab/internal/source"
	"lab/internal/spec"
	"lab/internal/testbed"
	"lab/internal/version"
	"lab/internal/vm"
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
	Host     *testbed.Host
	// Ends are boots of the good and bad ends measured before, under
	// icount (lab track --bisect hands over the history's): the search
	// takes them before it boots an end.
	Ends *Ends
	// NoProfile leaves out the culprit's instruction profile, which an
	// icount bisect takes by default: one boot of the culprit and of the
	// step before it with lab's QEMU plugin, to say where it moved.
	NoProfile bool
	// Measured is a run that measured kernels the steps may build (lab
	// watch's run of the series it attributes): under icount a step of
	// the same kernel image, shape and job takes its boots' figures
	// (testbed.Measured) instead of a boot, and the bisect measures with
	// the run's whole job, so that every figure it compares is one job's.
	Measured *results.Run
}

// Ends are earlier boots of a bisect's good and bad ends.
type Ends struct{ Good, Bad []Obs }

// Run carries out a bisect and returns its record (also when it fails
// part-way) and folder.
func Run(ctx context.Context, opt Options) (*results.Run, string, error) {
	host := testbed.ReadHost(opt.Accel)
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
	plans, err := testbed.Plan(lab, host)
	if err != nil {
		return nil, "", err
	}
	testbed.Parallelize(plans, opt.Parallel, host.CPUs)
	p := plans[0]
	if p.Clock != results.ClockICount && opt.Parallel > 1 {
		return nil, "", fmt.Errorf("--parallel %d: this bisect runs under the wall clock (%s %s), where guests side by side slow each other and a step is judged against boots of the ends: it boots one guest at a time", opt.Parallel, p.Arch.Name, p.Shape)
	}
	fig, chosen, err := figureOf(opt, lab, p)
	if err != nil {
		return nil, "", err
	}
	if err := source.Check(ctx, source.Origin(lab.Source), opt.Good, opt.Bad); err != nil {
		return nil, "", lab.Place(err)
	}
	if err := source.CheckConfig(ctx, source.Origin(lab.Source), opt.CacheDir, lab.AllFragments()); err != nil {
		return nil, "", err
	}
	// A bisect follows the agent's figure; guest tools (bpf-bench) are
	// for a run's side-by-side check, not built into its images.
	p.Job.Tools = nil
	b := &bisector{opt: opt, lab: lab, plan: p, fullJob: p.Job, start: time.Now(), pending: map[int][]given{}, seeds: map[int]int{}, taken: map[int]bool{}}
	b.rep = progress.New(opt.Out, b.start)
	defer b.rep.Stop()
	if fig != nil {
		b.follow(*fig, chosen)
	}
	if len(plans) > 1 {
		b.logf("the lab's matrix has %d shapes: bisecting on the first, %s %s (choose another with --arch and --cpus)", len(plans), p.Arch.Name, p.Shape)
	}
	folder, id, err := runfolder.New(filepath.Join(opt.ResultsDir, lab.Name), "bisect-"+time.Now().UTC().Format("20060102-150405"))
	if err != nil {
		return nil, "", err
	}
	b.dir = folder.Dir
	b.run = &results.Run{Kind: results.KindBisect, Lab: lab.Name, LabFile: lab.Path, RunID: id, LabVersion: version.Lab(opt.ModuleRoot),
		Command: opt.Command, Started: time.Now().UTC(), Matrix: testbed.RecordMatrix(lab.Matrix), Claims: testbed.RecordClaims(lab.Claims),
		Host: results.Host{CPUs: host.CPUs, CPUModel: vm.HostCPUModel(host.VM.CPUInfo)}, Bisect: &results.Bisect{Clock: p.Clock, Parallel: b.workers()}}
	err = b.do(ctx)
	b.run.Finished = time.Now().UTC()
	b.run.Elapsed = time.Since(b.start)
	b.run.Complete = err == nil
	if werr := folder.Save(b.run); werr != nil && err == nil {
		err = werr
	}
	return b.run, b.dir, err
}

// bisector is one bisect's state; it is the search's Env.
type bisector struct {
	opt     Options
	lab     *spec.Lab
	plan    testbed.ShapePlan
	fullJob protocol.Job
	rep     progress.Reporter
	fig     *results.Figure
	dir     string
	run     *results.Run
	start   time.Time
	// bench is the source tree, the kernel builder and the initramfs.
	bench *testbed.Bench
	tree  *source.Tree // bench's
	steps []results.BisectStep
	// pending are figures of the ends the search takes before it boots
	// them: boots made to choose the figure, or earlier ones.
	pending map[int][]given
	// ends is the --run cache of the ends' figures (icount), nil until
	// read.
	ends *endsCache
	// mu guards what boots running side by side share: the run's record
	// and boot count, the steps' boots, pending and ends.
	mu     sync.Mutex
	booted int
	// earlier counts the figures taken from boots before this bisect.
	earlier int
	// seeds counts each step's boots: an icount step's k-th boot here is
	// given the seed after those of its earlier figures.
	seeds map[int]int
	// taken are the steps whose boots in opt.Measured were looked for.
	taken map[int]bool
	// pluginPath is the instruction profile's plugin, resolved once.
	pluginOnce sync.Once
	pluginPath string
}

// workers is how many boots run at once: the plan's (see testbed.Parallelize)
// under icount, one under the wall clock.
func (b *bisector) workers() int {
	if b.plan.Clock != results.ClockICount {
		return 1
	}
	return max(b.plan.Parallel, 1)
}

func (b *bisector) logf(format string, args ...any) { b.rep.Logf(format, args...) }

func (b *bisector) do(ctx context.Context) error {
	if b.fig != nil {
		b.run.Bisect.Figure, b.run.Bisect.Chosen = *b.fig, b.chosenText()
	}
	err := b.prepare(ctx)
	if b.bench != nil {
		defer b.bench.Close()
	}
	if err != nil {
		return err
	}
	if b.fig == nil {
		if err := b.chooseFigure(ctx); err != nil {
			return err
		}
	}
	mode := b.searchMode()
	if w := b.workers(); w > 1 {
		b.logf("bisect: up to %d boots at a time (icount: a guest beside another does not change its figures)", w)
	}
	var res *Result
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
	if err := b.profileCulprit(ctx, res); err != nil {
		return err
	}
	return b.tree.Checkout(ctx, b.tree.BaseHash)
}

// searchMode is how the search judges this bisect's boots.
func (b *bisector) searchMode() Mode {
	mode := Mode{ICount: b.plan.Clock == results.ClockICount, Sample: b.plan.Job.Sample(), MaxBoots: b.opt.MaxBoots, Parallel: b.workers()}
	if b.fig != nil {
		mode.Benchmark = b.fig.Benchmark
	}
	// Under icount one image gives one figure (docs/validation.md): the
	// figures of the ends queued from before this bisect (the history's)
	// stand for them, and another boot of an end would only repeat one.
	if g, bad := b.earlierOf(0), b.earlierOf(len(b.steps)-1); mode.ICount && g > 0 && bad > 0 {
		mode.EndBoots = min(g, bad)
	}
	if mode.ICount && mode.EndBoots == 0 {
		// An end's one boot gives its exact figure, as a run's does.
		mode.EndBoots = spec.DefaultSeeds
	}
	return mode
}

// prepare makes the source tree, the kernel builder, the initramfs and
// the steps.
func (b *bisector) prepare(ctx context.Context) error {
	bench, err := testbed.OpenBench(ctx, testbed.BenchOptions{Lab: b.lab, Archs: []string{b.plan.Arch.Name}, CacheDir: b.opt.CacheDir,
		ModuleRoot: b.opt.ModuleRoot, Jobs: b.opt.Jobs, Sandbox: b.opt.Sandbox, Folder: runfolder.Folder{Dir: b.dir}, Logf: b.logf,
		Progress: b.rep.Build}, b.run)
	if err != nil {
		return err
	}
	b.bench, b.tree = bench, bench.Tree
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
	if e := b.opt.Ends; e != nil && b.plan.Clock == results.ClockICount && len(b.steps) > 1 {
		b.give(0, e.Good, historyBoot)
		b.give(len(b.steps)-1, e.Bad, historyBoot)
	}
	b.logf("bisect: %s, %d steps; %s, %s, %s clock", b.run.Bisect.Range, len(b.steps)-1, b.plan.Arch.Name, b.plan.Shape, b.plan.Clock)
	b.run.Bisect.Steps = b.steps
	return runfolder.Folder{Dir: b.dir}.Save(b.run)
}

// record copies the search's answer into the run's record.
func (b *bisector) record(res *Result) {
	if res == nil {
		return
	}
	Record(b.run.Bisect, res, b.steps, b.opt.Each)
	b.mu.Lock()
	b.run.Bisect.Boots, b.run.Bisect.Earlier = max(b.run.Bisect.Boots-b.earlier, 0), b.earlier
	b.mu.Unlock()
	b.steps = b.run.Bisect.Steps
}

// Record writes a search's answer into a bisect's record, step by step.
func Record(bi *results.Bisect, res *Result, steps []results.BisectStep, each bool) {
	bi.Each, bi.Outcome, bi.Culprit, bi.First = each, res.Outcome, res.Culprit, res.First
	bi.Change, bi.Own, bi.Explains, bi.Notes, bi.Boots = res.Change, res.Own, res.Explains, res.Notes, res.Measured
	bi.FloorPct, bi.MinFloorPct, bi.LikePct = res.FloorPct, res.MinFloor, res.LikePct
	for k := range steps {
		st := &steps[k]
		if k < len(res.Steps) {
			st.Verdict, st.Skip, st.SameAs = res.Steps[k].Verdict, res.Steps[k].Skip, res.Steps[k].SameAs
			st.Values = res.Steps[k].Values()
		}
	}
	bi.Steps = steps
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
