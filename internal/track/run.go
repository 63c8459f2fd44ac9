package track

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"lab/internal/bisect"
	"lab/internal/gitcmd"
	"lab/internal/history"
	"lab/internal/kbuild"
	"lab/internal/progress"
	"lab/internal/results"
	"lab/internal/runfolder"
	"lab/internal/shard"
	"lab/internal/source"
	"lab/internal/spec"
	"lab/internal/testbed"
	"lab/internal/variant"
	"lab/internal/version"
	"lab/internal/vm"
)

// Tracked is the outcome of a track's run record (results.Bisect.Outcome).
const Tracked = results.Tracked

// Options are the inputs of lab track besides the lab.
type Options struct {
	Lab      *spec.Lab
	From, To string // refs of the lab's git source: the commits (From, To] are measured
	Every    int    // every K-th commit by place along the branch (To always); 0 or 1: each
	Shard    shard.Shard
	// History is where the boots go and what is measured already is
	// asked: an SQLite file or a postgres:// URL; "": nowhere, and every
	// commit is measured.
	History    string
	CacheDir   string
	ResultsDir string
	ModuleRoot string
	Accel      string
	Jobs       int
	Parallel   int // boots at once under icount (0: the host's CPUs)
	Sandbox    bool
	Command    []string
	Out        io.Writer
	Host       *testbed.Host
}

// Result is what a track did.
type Result struct {
	Run      *results.Run
	Dir      string
	Outcomes []Disposition
	Added    int // boots added to the history
	Plans    []testbed.ShapePlan
	Seq      map[string]int // each commit of the range (and From) by its place
}

// Run measures the lab's git source from opt.From to opt.To into the
// history and a run folder. What is wrong with the lab, the refs or the
// history is said before anything is built.
func Run(ctx context.Context, opt Options) (*Result, error) {
	lab := opt.Lab
	plans, host, icount, err := planTrack(opt)
	if err != nil {
		return nil, err
	}
	if err := source.Check(ctx, source.Origin(lab.Source), opt.From, opt.To); err != nil {
		return nil, lab.Place(err)
	}
	if err := source.CheckConfig(ctx, source.Origin(lab.Source), opt.CacheDir, lab.AllFragments()); err != nil {
		return nil, err
	}
	var store *history.Store
	if opt.History != "" {
		if store, err = history.Open(ctx, opt.History); err != nil {
			return nil, err
		}
		defer store.Close()
	}
	t := &tracker{opt: opt, lab: lab, plans: plans, host: host, start: time.Now(), kernels: map[string]map[string]results.Kernel{}}
	t.rep = progress.New(opt.Out, t.start)
	defer t.rep.Stop()
	name := "track-" + time.Now().UTC().Format("20060102-150405")
	if opt.Shard.N > 1 {
		name += fmt.Sprintf("-shard%dof%d", opt.Shard.K, opt.Shard.N)
	}
	folder, id, err := runfolder.New(filepath.Join(opt.ResultsDir, lab.Name), name)
	if err != nil {
		return nil, err
	}
	t.dir = folder.Dir
	parallel := bootsAtOnce(plans, icount)
	t.run = &results.Run{Kind: results.KindTrack, Lab: lab.Name, LabFile: lab.Path, RunID: id, LabVersion: version.Lab(opt.ModuleRoot),
		Command: opt.Command, Started: time.Now().UTC(), Matrix: testbed.RecordMatrix(lab.Matrix), Claims: testbed.RecordClaims(lab.Claims),
		Host:   results.Host{CPUs: host.CPUs, CPUModel: vm.HostCPUModel(host.VM.CPUInfo)},
		Bisect: &results.Bisect{Clock: plans[0].Clock, Parallel: parallel, Outcome: Tracked}}
	res := &Result{Run: t.run, Dir: t.dir, Plans: plans}
	err = t.do(ctx, store, parallel, icount, res)
	t.run.Finished = time.Now().UTC()
	t.run.Elapsed = time.Since(t.start)
	t.run.Complete = err == nil
	if werr := folder.Save(t.run); werr != nil && err == nil {
		err = werr
	}
	if store != nil && len(t.run.Boots) > 0 {
		// What was measured goes in, also when the track stopped: a rerun
		// resumes after it.
		n, herr := t.record(context.WithoutCancel(ctx), store, res.Seq)
		res.Added = n
		if herr != nil && err == nil {
			err = herr
		}
	}
	return res, err
}

// planTrack checks the track's options and plans its shapes: each boots
// the agent alone (guest tools are a run's side-by-side check); icount
// says whether every shape runs on the instruction clock.
func planTrack(opt Options) (plans []testbed.ShapePlan, host testbed.Host, icount bool, err error) {
	lab := opt.Lab
	if lab.Source.Git == "" {
		return nil, testbed.Host{}, false, lab.Place(fmt.Errorf("lab track measures a branch: the lab's source must be a git tree (source: git: PATH), not a tarball"))
	}
	if opt.From == "" || opt.To == "" {
		return nil, testbed.Host{}, false, fmt.Errorf("lab track needs --from and --to, refs of %s", lab.Source.Git)
	}
	if opt.Every < 0 {
		return nil, testbed.Host{}, false, fmt.Errorf("--every %d: want a positive number", opt.Every)
	}
	host = testbed.ReadHost(opt.Accel)
	if opt.Host != nil {
		host = *opt.Host
	}
	plans, err = testbed.Plan(lab, host)
	if err != nil {
		return nil, testbed.Host{}, false, err
	}
	testbed.Parallelize(plans, opt.Parallel, host.CPUs)
	icount = true
	for i := range plans {
		plans[i].Job.Tools = nil // the agent's figures; guest tools are a run's side-by-side check
		icount = icount && plans[i].Clock == results.ClockICount
	}
	return plans, host, icount, nil
}

// bootsAtOnce is how many boots run side by side: the fewest any shape
// allows under icount, one under the wall clock.
func bootsAtOnce(plans []testbed.ShapePlan, icount bool) int {
	if !icount {
		return 1
	}
	parallel := 0
	for _, p := range plans {
		if parallel == 0 || p.Parallel < parallel {
			parallel = p.Parallel
		}
	}
	return parallel
}

// tracker is one track's state; it is the walk's Env.
type tracker struct {
	opt   Options
	lab   *spec.Lab
	plans []testbed.ShapePlan
	host  testbed.Host
	rep   progress.Reporter
	dir   string
	run   *results.Run
	start time.Time
	// bench is the source tree, each arch's kernel builder and initramfs.
	bench *testbed.Bench
	tree  *source.Tree // bench's
	// kernels are each commit's kernels, by commit and arch.
	kernels map[string]map[string]results.Kernel
	steps   map[string]int // the step of each commit in run.Bisect.Steps
	mu      sync.Mutex     // guards run, kernels and booted
	booted  int
}

func (t *tracker) logf(format string, args ...any) { t.rep.Logf(format, args...) }

func (t *tracker) do(ctx context.Context, store *history.Store, parallel int, icount bool, res *Result) error {
	var archs []string
	for _, p := range t.plans {
		archs = append(archs, p.Arch.Name)
	}
	bench, err := testbed.OpenBench(ctx, testbed.BenchOptions{Lab: t.lab, Archs: archs, CacheDir: t.opt.CacheDir, ModuleRoot: t.opt.ModuleRoot,
		Jobs: t.opt.Jobs, Sandbox: t.opt.Sandbox, Folder: runfolder.Folder{Dir: t.dir}, Logf: t.logf, Progress: t.rep.Build}, t.run)
	if err != nil {
		return err
	}
	t.bench, t.tree = bench, bench.Tree
	defer bench.Close()
	from, sel, err := t.commits(ctx, res)
	if err != nil {
		return err
	}
	done, err := t.done(ctx, store)
	if err != nil {
		return err
	}
	lo, hi := Deal(len(sel), t.opt.Shard)
	shards := ""
	if t.opt.Shard.N > 1 {
		shards = fmt.Sprintf(", shard %s: commits %d..%d", t.opt.Shard, lo+1, hi)
	}
	t.logf("track: %s, %d commits selected%s, %d in the history already; %s, %d boot(s) a commit, %d at a time",
		t.run.Bisect.Range, len(sel), shards, countIn(sel[lo:hi], done), t.shapes(), t.Boots(), parallel)
	if err := (runfolder.Folder{Dir: t.dir}).Save(t.run); err != nil {
		return err
	}
	out, err := Walk(ctx, t, from, sel, WalkOptions{Shard: t.opt.Shard, Done: done, Parallel: parallel, Overlap: icount, Logf: t.logf})
	res.Outcomes = out
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, o := range out {
		st := &t.run.Bisect.Steps[t.steps[o.Hash]]
		st.Verdict, st.Skip = o.State, o.Why
		if o.SameAs != "" {
			st.SameAs = t.steps[o.SameAs]
		}
	}
	if err != nil {
		return err
	}
	return t.tree.Checkout(ctx, t.tree.BaseHash)
}

// commits resolves the range, its places along the branch and the
// selected commits, and records them as the run's steps (step 0: from).
func (t *tracker) commits(ctx context.Context, res *Result) (Commit, []Commit, error) {
	from, err := t.tree.Resolve(ctx, t.opt.From)
	if err != nil {
		return Commit{}, nil, err
	}
	to, err := t.tree.Resolve(ctx, t.opt.To)
	if err != nil {
		return Commit{}, nil, err
	}
	chain, err := t.tree.Chain(ctx, from, to)
	if err != nil {
		return Commit{}, nil, err
	}
	top, err := t.tree.Place(ctx, to)
	if err != nil {
		return Commit{}, nil, err
	}
	// The chain is to's first-parent line back to from: places count down
	// from to's.
	res.Seq = map[string]int{}
	var all []Commit
	for i, c := range chain {
		subject, _ := t.tree.Subject(ctx, c)
		parent := from
		if i > 0 {
			parent = chain[i-1]
		}
		all = append(all, Commit{Hash: c, Subject: subject, Seq: top - (len(chain) - 1 - i), Parent: parent})
		res.Seq[c] = all[i].Seq
	}
	fromSubject, _ := t.tree.Subject(ctx, from)
	base := Commit{Hash: from, Subject: fromSubject, Seq: all[0].Seq - 1}
	res.Seq[from] = base.Seq
	// The range's base is its first point: measured like the commits
	// after it (or found in the history), so that a step in the first
	// commit of the range has a level to step from.
	sel := append([]Commit{base}, Select(all, t.opt.Every)...)
	every := "every commit"
	if t.opt.Every > 1 {
		every = fmt.Sprintf("the commits whose place is a multiple of %d, and the last", t.opt.Every)
	}
	t.run.Bisect.Range = fmt.Sprintf("git %s..%s (%d first-parent commits, %s)", t.opt.From, t.opt.To, len(chain), every)
	t.run.Series = []results.Series{{Name: "git " + t.opt.From + ".." + t.opt.To, Variant: variant.Patched,
		Variants: variant.Pair[string]{Baseline: from, Patched: to}}}
	t.steps = map[string]int{from: 0}
	t.run.Bisect.Steps = nil
	for _, c := range sel {
		t.steps[c.Hash] = len(t.run.Bisect.Steps)
		t.run.Bisect.Steps = append(t.run.Bisect.Steps, results.BisectStep{Index: len(t.run.Bisect.Steps), Name: gitcmd.Short(c.Hash), Subject: c.Subject, Commit: c.Hash, SameAs: -1, Seq: c.Seq})
	}
	// No commit before the base: it is measured, whatever its image.
	return Commit{}, sel, nil
}

// done asks the history which commits every shape of the lab has on this
// host, with their images (joined over arches as Image joins them).
func (t *tracker) done(ctx context.Context, store *history.Store) (map[string]string, error) {
	if store == nil {
		return nil, nil
	}
	var done map[string]string
	images := map[string]map[string]string{} // commit -> arch -> image
	for k, p := range t.plans {
		w := history.Where{Lab: t.lab.Name, Arch: p.Arch.Name, CPUs: p.Shape.CPUs, Topology: topologyOf(p), Clock: p.Clock, Accel: p.Accel.Name,
			HostCPUModel: t.run.Host.CPUModel, HostCPUs: t.run.Host.CPUs}
		m, err := store.Measured(ctx, w)
		if err != nil {
			return nil, err
		}
		next := map[string]string{}
		for c, img := range m {
			if k > 0 && !hasKey(done, c) {
				continue // another shape lacks it: measured again
			}
			next[c] = ""
			if images[c] == nil {
				images[c] = map[string]string{}
			}
			images[c][p.Arch.Name] = img
		}
		done = next
	}
	for c := range done {
		done[c] = t.joinImages(images[c])
	}
	return done, nil
}

func hasKey(m map[string]string, k string) bool { _, ok := m[k]; return ok }

func countIn(cs []Commit, done map[string]string) int {
	n := 0
	for _, c := range cs {
		if hasKey(done, c.Hash) {
			n++
		}
	}
	return n
}

// arches are the lab's arches, in plan order, once each.
func (t *tracker) arches() []string {
	var out []string
	for _, p := range t.plans {
		if !slices.Contains(out, p.Arch.Name) {
			out = append(out, p.Arch.Name)
		}
	}
	return out
}

// joinImages is a commit's image over every arch: one arch's sha256 as
// is, several as arch=sha256 joined.
func (t *tracker) joinImages(byArch map[string]string) string {
	arches := t.arches()
	if len(arches) == 1 {
		return byArch[arches[0]]
	}
	var parts []string
	for _, a := range arches {
		if byArch[a] == "" {
			return "" // unknown: the next commit is measured
		}
		parts = append(parts, a+"="+byArch[a])
	}
	return strings.Join(parts, ",")
}

func (t *tracker) shapes() string {
	var s []string
	for _, p := range t.plans {
		s = append(s, fmt.Sprintf("%s %s %s clock", p.Arch.Name, p.Shape, p.Clock))
	}
	return strings.Join(s, "; ")
}

// Image builds a commit's kernel for every arch of the lab.
func (t *tracker) Image(ctx context.Context, c Commit) (string, error) {
	byArch := map[string]string{}
	for _, a := range t.arches() {
		p := t.planOf(a)
		label := fmt.Sprintf("%s %s (%s)", gitcmd.Short(c.Hash), a, c.Subject)
		start := time.Now()
		kern, err := t.bench.Kernel(ctx, p.Arch, c.Hash, label)
		t.rep.BuildDone(label)
		var be *kbuild.BuildError
		if errors.As(err, &be) {
			return "", bisect.Skip("does not build", be.Err)
		}
		if err != nil {
			return "", err
		}
		t.mu.Lock()
		if t.kernels[c.Hash] == nil {
			t.kernels[c.Hash] = map[string]results.Kernel{}
		}
		t.kernels[c.Hash][a] = kern
		t.run.Kernels = append(t.run.Kernels, kern)
		if k, ok := t.steps[c.Hash]; ok {
			st := &t.run.Bisect.Steps[k]
			if st.Kernel == nil {
				st.Kernel = &kern
			}
			if !kern.Cached {
				st.BuildSeconds += time.Since(start).Seconds()
			}
		}
		werr := runfolder.Folder{Dir: t.dir}.Save(t.run)
		t.mu.Unlock()
		if werr != nil {
			return "", werr
		}
		byArch[a] = kern.Info.ImageSHA256
	}
	return t.joinImages(byArch), nil
}

func (t *tracker) planOf(arch string) testbed.ShapePlan {
	for _, p := range t.plans {
		if p.Arch.Name == arch {
			return p
		}
	}
	return t.plans[0]
}

// slots are a commit's boots: one per shape under icount (its figures
// repeat), the lab's boots per shape under the wall clock.
func (t *tracker) slots() []int {
	var out []int
	for i, p := range t.plans {
		n := 1
		if p.Clock != results.ClockICount {
			n = max(t.lab.Matrix.Boots, 1)
		}
		for range n {
			out = append(out, i)
		}
	}
	return out
}

// Boots is how many boots a commit gets.
func (t *tracker) Boots() int { return len(t.slots()) }

// Boot boots a commit's j-th boot.
func (t *tracker) Boot(ctx context.Context, c Commit, j int) error {
	p := t.plans[t.slots()[j]]
	t.mu.Lock()
	kern, ok := t.kernels[c.Hash][p.Arch.Name]
	t.booted++
	idx := t.booted
	t.mu.Unlock()
	if !ok {
		return fmt.Errorf("boot of %s: its %s kernel was not built", gitcmd.Short(c.Hash), p.Arch.Name)
	}
	booter := testbed.Booter{Dir: t.dir, Boot: vm.Boot, ConsoleExpect: t.lab.ConsoleExpect, Logf: t.logf}
	label := fmt.Sprintf("boot %d: %s %s (%s)", idx, gitcmd.Short(c.Hash), p.Shape, c.Subject)
	boot, err := booter.Run(ctx, p, kern, t.bench.Initrd(p.Arch.Name), "", idx, gitcmd.Short(c.Hash), label)
	t.mu.Lock()
	testbed.AddBoot(t.run, boot, err)
	st := &t.run.Bisect.Steps[t.steps[c.Hash]]
	st.Boots = append(st.Boots, idx)
	sort.Ints(st.Boots)
	t.run.Bisect.Boots++
	werr := runfolder.Folder{Dir: t.dir}.Save(t.run)
	t.mu.Unlock()
	if werr != nil {
		return werr
	}
	return bisect.BootSkip(err)
}

// record adds the track's boots to the history, each with its commit's
// kernel and place along the branch.
func (t *tracker) record(ctx context.Context, store *history.Store, seq map[string]int) (int, error) {
	t.mu.Lock()
	h, err := history.FromRun(t.run)
	if err == nil {
		err = t.place(h, seq)
	}
	t.mu.Unlock()
	if err != nil {
		return 0, err
	}
	return store.Add(ctx, h)
}

// place sets each boot's commit place and (a lab of several arches) the
// kernel of the boot's own arch.
func (t *tracker) place(h *history.Run, seq map[string]int) error {
	for i := range h.Boots {
		b := &h.Boots[i]
		b.CommitSeq = seq[b.Commit]
		k, ok := t.kernels[b.Commit][b.Arch]
		if !ok {
			return fmt.Errorf("boot %d of %s: no %s kernel", b.Index, gitcmd.Short(b.Commit), b.Arch)
		}
		b.KernelKey, b.ImageSHA256 = k.Info.Key, k.Info.ImageSHA256
	}
	return nil
}

// topologyOf is a plan's guest topology as the history writes it.
func topologyOf(p testbed.ShapePlan) string {
	s := p.Shape
	return history.Topology(results.Boot{CPUs: s.CPUs, Shape: &s})
}
