// Package run carries out `lab run`: source and series, kernel builds,
// initramfs, then interleaved boots of baseline and patched, saving results
// as each boot finishes.
package run

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"lab/initramfs/protocol"
	"lab/internal/arch"
	"lab/internal/initramfs"
	"lab/internal/kbuild"
	"lab/internal/report"
	"lab/internal/results"
	"lab/internal/series"
	"lab/internal/source"
	"lab/internal/spec"
	"lab/internal/topology"
	"lab/internal/vm"
)

// Options are the inputs of a run besides the lab.
type Options struct {
	Lab        *spec.Lab
	CacheDir   string    // kernels, sources, ccache, initramfs images
	ResultsDir string    // results/<lab>/<run-id>/ goes here
	ModuleRoot string    // lab's checkout (the agent's sources)
	Accel      string    // forced accelerator, "" for auto
	Command    []string  // the command line, recorded as the reproducer
	Out        io.Writer // progress
	Jobs       int       // make -j, 0 for host CPUs
	Only       string    // boot only this variant (a soak or debugging run), "" for both
}

// Runner holds one run's state.
type Runner struct {
	logs  []*os.File // build and initramfs logs, closed when the run ends
	opt   Options
	lab   *spec.Lab
	run   *results.Run
	dir   string
	start time.Time
}

func (r *Runner) logf(format string, args ...any) {
	fmt.Fprintf(r.opt.Out, "[%6.1fs] %s\n", time.Since(r.start).Seconds(), fmt.Sprintf(format, args...))
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
	lab := opt.Lab
	r := &Runner{opt: opt, lab: lab, start: time.Now()}
	if opt.Only != "" && opt.Only != source.Baseline && opt.Only != source.Patched {
		return nil, "", fmt.Errorf("--only %q: want baseline or patched", opt.Only)
	}
	if err := checkTools(lab); err != nil {
		return nil, "", err
	}
	id := time.Now().UTC().Format("20060102-150405")
	r.dir = filepath.Join(opt.ResultsDir, lab.Name, id)
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		return nil, "", err
	}
	r.run = &results.Run{
		Lab: lab.Name, LabFile: lab.Path, RunID: id, LabVersion: labVersion(opt.ModuleRoot),
		Command: opt.Command, Started: time.Now().UTC(), Matrix: lab.Matrix, Host: host(),
		Claims: lab.Claims,
	}
	err := r.do(ctx)
	for _, f := range r.logs {
		f.Close()
	}
	r.run.Finished = time.Now().UTC()
	r.run.Elapsed = time.Since(r.start)
	r.run.Complete = err == nil
	if werr := r.save(); werr != nil && err == nil {
		err = werr
	}
	return r.run, r.dir, err
}

func (r *Runner) save() error {
	if err := r.run.Write(r.dir); err != nil {
		return fmt.Errorf("save results: %w", err)
	}
	return nil
}

func (r *Runner) do(ctx context.Context) error {
	lab := r.lab
	var tree *source.Tree
	err := r.step("source", func() (err error) {
		tree, err = source.Prepare(ctx, lab.Source, r.opt.CacheDir, r.logf)
		return err
	})
	if err != nil {
		return err
	}
	defer tree.Close()
	r.run.Source = results.Source{Desc: tree.Desc, ID: tree.ID, Version: tree.Version, Commit: tree.BaseHash}
	r.logf("source: Linux %s, %s", tree.Version, tree.Desc)

	ser, err := series.Load(lab.SeriesDir())
	if err != nil {
		return err
	}
	var variants map[string]string
	err = r.step(fmt.Sprintf("patch: %s series %s (%d patches)", lab.Mode, ser.Name, len(ser.Patches)), func() (err error) {
		variants, err = tree.Variants(ctx, ser, lab.Mode)
		return err
	})
	if err != nil {
		return err
	}
	r.run.Series = results.Series{Name: ser.Name, Mode: lab.Mode, Hash: ser.Hash(), Variants: variants}
	for _, p := range ser.Patches {
		r.run.Series.Patches = append(r.run.Series.Patches, results.Patch{Name: p.Name, Subject: p.Subject, SHA256: p.SHA256})
	}

	kernels := map[string]map[string]*kbuild.Info{} // arch -> variant
	images := map[string]string{}                   // arch -> initramfs
	for _, name := range lab.Matrix.Arch {
		a, err := arch.Lookup(name)
		if err != nil {
			return err
		}
		kernels[name] = map[string]*kbuild.Info{}
		for _, v := range []string{source.Baseline, source.Patched} {
			info, err := r.buildKernel(ctx, tree, ser, a, v, variants[v])
			if err != nil {
				return err
			}
			kernels[name][v] = info
		}
		err = r.step("initramfs "+a.GOARCH, func() error {
			img, err := initramfs.Build(ctx, r.opt.ModuleRoot, a.GOARCH, r.opt.CacheDir, r.logWriter("initramfs-"+a.GOARCH+".log"))
			if err != nil {
				return err
			}
			images[name] = img.Path
			r.run.Initramfs = append(r.run.Initramfs, results.Initramfs{Arch: name, Path: img.Path, Key: img.Key, Cached: img.Cached})
			if img.Cached {
				r.logf("initramfs %s: cached %s", a.GOARCH, img.Path)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	// Tree back to the source as shipped, for the next run and the user, and
	// unlocked: the boots need only the built images, so another lab run
	// may build while this one measures.
	tree.Checkout(ctx, tree.BaseHash)
	tree.Close()
	if err := r.save(); err != nil {
		return err
	}

	var failed int
	for _, name := range lab.Matrix.Arch {
		a, _ := arch.Lookup(name)
		shapes, err := lab.Matrix.Shapes(name)
		if err != nil {
			return err
		}
		for _, shape := range shapes {
			n, err := r.bootAll(ctx, a, shape, kernels[name], images[name])
			failed += n
			if err != nil {
				return err
			}
		}
	}
	text := report.Render(lab.Name, report.Tables(r.run))
	fmt.Fprintf(r.opt.Out, "\n%s\n", text)
	if err := os.WriteFile(filepath.Join(r.dir, "table.txt"), []byte(text), 0o644); err != nil {
		return err
	}
	r.logf("results: %s", r.dir)
	if failed > 0 {
		return fmt.Errorf("%d boot(s) failed; see the notes in %s", failed, filepath.Join(r.dir, "results.json"))
	}
	return nil
}

func (r *Runner) buildKernel(ctx context.Context, tree *source.Tree, ser *series.Series, a arch.Arch, variant, commit string) (*kbuild.Info, error) {
	cc, err := kbuild.CompilerVersion(ctx, a.CC())
	if err != nil {
		return nil, err
	}
	in := kbuild.Inputs{
		SourceID: tree.ID, Commit: commit, SeriesHash: ser.Hash(), Mode: r.lab.Mode,
		Variant: variant, Arch: a.Name, Fragments: r.lab.Fragments(a.Name), Compiler: cc,
	}
	b := &kbuild.Builder{
		CacheDir: r.opt.CacheDir, SrcDir: tree.Dir, SourceID: tree.ID, Jobs: r.opt.Jobs,
		Log: r.logWriter(fmt.Sprintf("build-%s-%s.log", a.Name, variant)),
		Progress: func(done, expected int, el time.Duration) {
			pct := ""
			// The last build of this directory is the best guess of this
			// one's size, until this one outgrows it.
			if expected > 0 && done < expected {
				pct = fmt.Sprintf(" (~%d%% of the last build's %d)", 100*done/expected, expected)
			}
			r.logf("build %s/%s: %d compiled%s, %s", a.Name, variant, done, pct, el.Round(time.Second))
		},
	}
	var info *kbuild.Info
	err = r.step(fmt.Sprintf("kernel %s/%s", a.Name, variant), func() error {
		if info, err = b.Lookup(in); err != nil || info != nil {
			return err
		}
		if err := tree.Checkout(ctx, commit); err != nil {
			return err
		}
		if b.KconfigID, err = tree.KconfigID(ctx); err != nil {
			return err
		}
		info, err = b.Build(ctx, a, in)
		return err
	})
	if err != nil {
		return nil, err
	}
	if info.Cached {
		r.logf("kernel %s/%s: cached, 0 compiled (key %s, %s)", a.Name, variant, info.Key, info.Image)
	} else {
		r.logf("kernel %s/%s: %d compiled in %.1fs (key %s)", a.Name, variant, info.Compiled, info.Duration.Seconds(), info.Key)
	}
	r.run.Kernels = append(r.run.Kernels, results.Kernel{Arch: a.Name, Variant: variant, Info: *info, Cached: info.Cached})
	return info, nil
}

// bootAll boots the variants alternately (A B A B ...), so that drift of the
// host hits both alike. It returns the number of failed boots; a failed boot
// does not stop the run, an interruption does.
func (r *Runner) bootAll(ctx context.Context, a arch.Arch, shape topology.Shape, kernels map[string]*kbuild.Info, initrd string) (int, error) {
	m := r.lab.Matrix
	cpus := shape.CPUs
	accel, err := vm.ChooseAccel(vm.ReadHost(r.opt.Accel), a)
	if err != nil {
		return 0, err
	}
	hostTopo := topology.ReadHost(runtime.NumCPU())
	caveats := topology.Caveats(shape, hostTopo, accel.Name == vm.KVM)
	plan, pinNote := topology.PinPlan(shape, hostTopo, m.Pin)
	if accel.Name == vm.TCG && chooseClock(m.Measure, accel, cpus) == vm.ClockICount {
		// One TCG thread runs every vCPU: nothing per vCPU to pin.
		plan, pinNote = nil, "not pinned: single-threaded TCG (icount)"
	}
	clock := chooseClock(m.Measure, accel, cpus)
	affinity := true
	if m.Affinity != nil {
		affinity = *m.Affinity
	}
	job := protocol.Job{
		Benchmarks: m.JobBenchmarks(), Producers: m.ProducersFor(cpus), Affinity: affinity,
		DurationS: int(m.Duration.Seconds()), WarmupS: int(m.Warmup.Seconds()), MaxActive: m.MaxActive,
	}
	r.logf("%s, %s: %s (%s), %s clock; %s", a.Name, shape, strings.ToUpper(accel.Name), accel.Reason, clock, pinNote)
	for _, c := range caveats {
		r.logf("caveat: %s", c)
	}
	deadline, quiet := Deadline(a, cpus, accel, clock, job)
	qmpDir, err := os.MkdirTemp("", "lab-qmp-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(qmpDir)
	failed := 0
	variants := []string{source.Baseline, source.Patched}
	if r.opt.Only != "" {
		variants = []string{r.opt.Only}
	}
	total := m.Boots * len(variants)
	// Measured once per shape: the host's TSC rate takes ~90 ms to read.
	lpjs := map[string]int64{}
	for _, v := range variants {
		lpjs[v] = lpj(a, accel, clock, cpus, kernels[v].Config)
	}
	for i := 0; i < m.Boots; i++ {
		for vi, v := range variants {
			idx := len(r.run.Boots) + 1
			rel := filepath.Join("boots", fmt.Sprintf("%02d-%s-%dcpu%s-%s", idx, a.Name, cpus, numaTag(shape), v))
			cfg := vm.Config{
				LPJ: lpjs[v], Oversubscribed: cpus > runtime.NumCPU(),
				Arch: a, Kernel: kernels[v].Image, Initrd: initrd, Shape: shape,
				Accel: accel, Clock: clock, Job: job, Dir: filepath.Join(r.dir, rel),
				QMPPath: filepath.Join(qmpDir, "qmp.sock"), Pin: plan, Quiet: quiet,
			}
			n := len(variants)*i + vi + 1
			label := fmt.Sprintf("boot %d/%d %s %dcpu%s %s", n, total, a.Name, cpus, numaTag(shape), v)
			r.logf("%s (deadline %s to boot, then %s per record)", label, deadline.Round(time.Second), quiet.Round(time.Second))
			out, err := vm.Boot(ctx, cfg, deadline, func(s string) { r.logf("%s: %s", label, s) })
			b := results.Boot{
				Index: idx, Arch: a.Name, CPUs: cpus, Variant: v, Accel: accel, Clock: clock,
				Outcome: out, Console: filepath.Join(rel, "console.log"), Job: job,
				Shape: &shape, HostTopology: &hostTopo, Caveats: caveats, Pinning: pinNote,
			}
			if out != nil {
				for _, rec := range out.Records {
					switch rec.Type {
					case protocol.TypeHello:
						b.Hello = rec.Hello
					case protocol.TypeResult:
						b.Results = append(b.Results, *rec.Result)
					}
				}
			}
			if err == nil {
				err = checkGuest(b, shape)
			}
			if err == nil {
				err = expectConsole(filepath.Join(r.dir, b.Console), r.lab.ConsoleExpect)
			}
			if err != nil {
				b.Error = err.Error()
				failed++
			}
			b.Ratios = ratios(b.Results)
			r.run.Boots = append(r.run.Boots, b)
			if serr := r.save(); serr != nil {
				return failed, serr
			}
			if ctx.Err() != nil {
				return failed, fmt.Errorf("interrupted during %s: %w", label, ctx.Err())
			}
			if err != nil {
				r.logf("%s FAILED: %v", label, err)
				continue
			}
			r.logf("%s: %s in %.1fs (agent up after %.1fs)", label, summary(b), out.Wall.Seconds(), out.ToAgent.Seconds())
		}
	}
	return failed, nil
}

// checkGuest compares the machine QEMU built (QMP) and the one the guest
// kernel found (the agent's hello) with the shape asked for.
func checkGuest(b results.Boot, shape topology.Shape) error {
	if b.Hello == nil {
		return fmt.Errorf("the agent never said hello")
	}
	var cpus []topology.QMPCPU
	var memdevs []topology.Memdev
	if b.Outcome != nil {
		cpus, memdevs = b.Outcome.QMPCPUs(), b.Outcome.Memdevs
	}
	return topology.Verify(shape, cpus, memdevs, b.Hello)
}

// lpj is the loops-per-jiffy value an x86_64 TCG guest with several vCPUs
// gets on its command line (see vm.Config.Cmdline): the host's TSC rate
// over the kernel's CONFIG_HZ. 0 when it does not apply or is unknown.
func lpj(a arch.Arch, accel vm.Accel, clock string, cpus int, config string) int64 {
	if a.Name != "x86_64" || accel.Name != vm.TCG || clock != vm.ClockWall || cpus < 2 {
		return 0
	}
	khz, ok := vm.HostTSCkHz()
	if !ok {
		return 0
	}
	data, err := os.ReadFile(config)
	if err != nil {
		return 0
	}
	m := regexp.MustCompile(`(?m)^CONFIG_HZ=(\d+)$`).FindSubmatch(data)
	if m == nil {
		return 0
	}
	var hz int64
	fmt.Sscan(string(m[1]), &hz)
	if hz == 0 {
		return 0
	}
	return khz * 1000 / hz
}

// numaTag marks NUMA boots in directory names and labels.
func numaTag(s topology.Shape) string {
	if len(s.Nodes) > 1 {
		return fmt.Sprintf("-%dnode", len(s.Nodes))
	}
	return ""
}

// expectConsole fails a boot whose console lacks a line the lab expects
// (e.g. a KUnit suite's "ok" line).
func expectConsole(log string, expect []string) error {
	if len(expect) == 0 {
		return nil
	}
	data, err := os.ReadFile(log)
	if err != nil {
		return err
	}
	for _, e := range expect {
		re, err := regexp.Compile(e)
		if err != nil {
			return err
		}
		if !re.Match(data) {
			return fmt.Errorf("the console never showed %q (console_expect): see %s", e, log)
		}
	}
	return nil
}

// ratios computes each benchmark's within-boot scaling ratios against its
// own 1-producer rate.
func ratios(res []protocol.Result) map[string]float64 {
	one := map[string]float64{}
	for _, r := range res {
		if r.Producers == 1 && r.Error == "" && r.Unsupported == "" {
			one[r.Benchmark] = protocol.Rate(r.Samples)
		}
	}
	out := map[string]float64{}
	for _, r := range res {
		base, ok := one[r.Benchmark]
		if r.Producers > 1 && ok && base > 0 && r.Error == "" && r.Unsupported == "" {
			out[fmt.Sprintf("%s p%d/p1", r.Benchmark, r.Producers)] = protocol.Rate(r.Samples) / base
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func summary(b results.Boot) string {
	var parts []string
	for _, res := range b.Results {
		switch {
		case res.Error != "":
			parts = append(parts, fmt.Sprintf("%s p=%d error: %s", res.Benchmark, res.Producers, res.Error))
		case res.Unsupported != "":
			parts = append(parts, fmt.Sprintf("%s p=%d unsupported: %s", res.Benchmark, res.Producers, res.Unsupported))
		default:
			parts = append(parts, fmt.Sprintf("%s p=%d %.4f M/s", res.Benchmark, res.Producers, protocol.Rate(res.Samples)/1e6))
		}
	}
	return strings.Join(parts, ", ")
}

// chooseClock applies the lab's measure setting: icount where it is sound
// (TCG with one vCPU), the wall clock otherwise.
func chooseClock(measure string, accel vm.Accel, cpus int) string {
	switch measure {
	case spec.MeasureWall:
		return vm.ClockWall
	case spec.MeasureICount:
		return vm.ClockICount
	}
	if accel.Name == vm.TCG && cpus == 1 {
		return vm.ClockICount
	}
	return vm.ClockWall
}

// Deadline is how long a guest may take to boot (QEMU start to the agent's
// first record), and then how long it may go without sending a record (one
// benchmark at one producer count, measured probe-free first). Boot time was
// measured on a 2-core TCG host: x86_64 about 3.5 s per vCPU at 96 vCPUs,
// arm64 about 0.7 s; the margins are wide. icount and oversubscribed TCG
// stretch the benchmarks' host time: a guest second can take many host
// seconds when vCPUs outnumber host CPUs.
func Deadline(a arch.Arch, cpus int, accel vm.Accel, clock string, job protocol.Job) (boot, quiet time.Duration) {
	boot = 60 * time.Second
	if accel.Name == vm.TCG {
		per := 2 * time.Second
		if a.Name == "x86_64" {
			per = 8 * time.Second
		}
		boot += time.Duration(cpus) * per
	}
	record := time.Duration(2*(job.DurationS+job.WarmupS)+8) * time.Second
	stretch := 3
	switch {
	case clock == vm.ClockICount:
		stretch = 10
	case accel.Name == vm.TCG && cpus > runtime.NumCPU():
		stretch = max(4, cpus/runtime.NumCPU())
	}
	return boot, time.Duration(stretch) * record
}

// logWriter opens a log file in the run directory; Run closes it.
func (r *Runner) logWriter(name string) io.Writer {
	f, err := os.OpenFile(filepath.Join(r.dir, name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return io.Discard
	}
	r.logs = append(r.logs, f)
	return f
}

// checkTools fails early, naming the Debian package, when a tool is missing.
func checkTools(lab *spec.Lab) error {
	need := map[string]string{"make": "make", "git": "git", "tar": "tar", "gcc": "gcc", "flex": "flex", "bison": "bison", "bc": "bc"}
	for _, name := range lab.Matrix.Arch {
		a, err := arch.Lookup(name)
		if err != nil {
			return err
		}
		pkg := "qemu-system-x86"
		if a.Name == "arm64" {
			pkg = "qemu-system-arm"
		}
		need[a.QEMU] = pkg
		if !a.Native() {
			need[a.CC()] = "gcc-" + strings.TrimSuffix(a.CrossCompile, "-")
		}
	}
	var missing []string
	for bin, pkg := range need {
		if _, err := exec.LookPath(bin); err != nil {
			missing = append(missing, fmt.Sprintf("%s (Debian package %s)", bin, pkg))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing tools: %s; run ./scripts/install-deps", strings.Join(missing, ", "))
	}
	return nil
}

func host() results.Host {
	h := results.Host{CPUs: runtime.NumCPU(), GOARCH: runtime.GOARCH}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		h.CPUModel = vm.HostCPUModel(string(b))
	}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		h.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	return h
}

func labVersion(root string) string {
	out, err := exec.Command("git", "-C", root, "describe", "--always", "--dirty", "--tags").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}
