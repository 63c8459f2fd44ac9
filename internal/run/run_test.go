package run

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"lab/initramfs/protocol"
	"lab/internal/arch"
	"lab/internal/results"
	"lab/internal/shard"
	"lab/internal/spec"
	"lab/internal/testbed"
	"lab/internal/topology"
	"lab/internal/variant"
	"lab/internal/vm"
)

// fakeEnv builds nothing and boots nothing: each boot answers at once with
// what boot(n, config) says, so the orchestration runs in milliseconds.
type fakeEnv struct {
	boot   func(ctx context.Context, n int, c vm.Config) (*vm.Outcome, error)
	images map[variant.Variant]string // each kernel's image sha256, "" by default
	mu     sync.Mutex
	booted []vm.Config
}

func (f *fakeEnv) Check(*spec.Lab, Options) error { return nil }

// Plugin: a fake QEMU loads no plugin, so a fake run takes no profile.
func (f *fakeEnv) Plugin(context.Context, string, string) (string, error) { return "", nil }

func (f *fakeEnv) Prepare(ctx context.Context, r *Runner) (*Artifacts, error) {
	art := &Artifacts{Source: results.Source{Desc: "fake", Version: "6.12.117"}}
	for _, a := range r.lab.Matrix.Arch {
		for _, v := range r.opt.kernels() {
			art.Kernels = append(art.Kernels, results.Kernel{Arch: a, Variant: v,
				Info: results.Build{Image: fmt.Sprintf("/fake/%s-%s", a, v), ImageSHA256: f.images[v]}})
		}
		art.Initramfs = append(art.Initramfs, results.Initramfs{Arch: a, Path: "/fake/initrd-" + a})
	}
	for _, n := range r.opt.Series {
		art.Series = append(art.Series, results.Series{Name: n.Series.Name, Variant: n.Variant, Mode: "apply"})
	}
	return art, nil
}

func (f *fakeEnv) Boot(ctx context.Context, c vm.Config, deadline time.Duration, progress func(string)) (*vm.Outcome, error) {
	f.mu.Lock()
	f.booted = append(f.booted, c)
	n := len(f.booted)
	f.mu.Unlock()
	if f.boot != nil {
		return f.boot(ctx, n, c)
	}
	return goodOutcome(c, 1e6), nil
}

// goodOutcome is a boot that delivered: the machine QEMU and the guest saw
// matches the shape, and the benchmark ran at rate hits/s.
func goodOutcome(c vm.Config, rate float64) *vm.Outcome {
	out := &vm.Outcome{QEMU: c.Arch.QEMU, QEMUVersion: "fake", Wall: time.Second, ToAgent: time.Second / 2}
	for i := 0; i < c.Shape.CPUs; i++ {
		var v vm.VCPU
		v.Index, v.Props.Core = i, i
		out.VCPUs = append(out.VCPUs, v)
	}
	online := fmt.Sprintf("0-%d", c.Shape.CPUs-1)
	if c.Shape.CPUs == 1 {
		online = "0"
	}
	hello := &protocol.Hello{Release: "6.12.117", Online: online, OnlineCPUs: c.Shape.CPUs,
		Nodes: []protocol.Node{{ID: 0, CPUs: online, MemTotalKiB: c.Shape.MemoryMiB * 1024 * 95 / 100}}}
	out.Records = append(out.Records, protocol.Record{Type: protocol.TypeHello, Hello: hello})
	for _, b := range c.Job.Benchmarks {
		for _, p := range c.Job.Producers {
			res := protocol.Result{Benchmark: b, Producers: p,
				Samples: []protocol.Sample{{IntervalNS: 1e9, Hits: uint64(rate * float64(p)), Rate: rate * float64(p)}}}
			out.Records = append(out.Records, protocol.Record{Type: protocol.TypeResult, Result: &res})
		}
	}
	out.Records = append(out.Records, protocol.Record{Type: protocol.TypeDone})
	return out
}

func fakeLab(boots int, cpus ...int) *spec.Lab {
	return &spec.Lab{Name: "fake", Matrix: spec.Matrix{
		Arch: []string{"x86_64"}, CPUs: cpus, Memory: "1G", Benchmarks: []string{"uprobe-nop"},
		Producers: []int{1}, Boots: boots, Seeds: boots, Measure: spec.MeasureAuto,
		Duration: spec.Duration{Duration: time.Second},
	}}
}

// tcgHost is this project's kind of machine: 2 CPUs, a /dev/kvm that
// cannot run stock kernels.
func tcgHost() testbed.Host {
	return testbed.Host{VM: vm.Host{GOARCH: "amd64", DevKVM: os.ErrNotExist}, CPUs: 2,
		Topology: topology.Host{CPUs: 2, Nodes: [][]int{{0, 1}}}, TSCkHz: 2_000_000}
}

func kvmHost() testbed.Host {
	h := tcgHost()
	h.VM = vm.Host{GOARCH: "amd64", CPUInfo: "flags\t\t: fpu vmx sse\n"}
	h.CPUs, h.Topology = 16, topology.Host{CPUs: 16, Nodes: [][]int{{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}}}
	return h
}

// runFake runs lab in the fake environment, one boot at a time.
func runFake(t *testing.T, ctx context.Context, lab *spec.Lab, env *fakeEnv, only variant.Variant) (*results.Run, string, error) {
	t.Helper()
	var out bytes.Buffer
	res, dir, err := runImpl(ctx, Options{Lab: lab, ResultsDir: t.TempDir(), Out: &out, Only: only, Command: []string{"lab", "run"}, Parallel: 1}, tcgHost(), env)
	t.Logf("%s", out.String())
	return res, dir, err
}

func variantsOf(boots []results.Boot) string {
	var s []string
	for _, b := range boots {
		s = append(s, fmt.Sprintf("%s/%dcpu", b.Variant, b.CPUs))
	}
	return strings.Join(s, " ")
}

// Boots alternate baseline and patched within a shape, shape after shape;
// results.json is saved after every boot.
func TestRunInterleavesAndSavesEveryBoot(t *testing.T) {
	env := &fakeEnv{}
	var dir string
	env.boot = func(ctx context.Context, n int, c vm.Config) (*vm.Outcome, error) {
		// The boot directory is <run>/boots/NN-...: the run's folder is two up.
		var saved results.Run
		data, err := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(c.Dir)), "results.json"))
		if err == nil {
			err = json.Unmarshal(data, &saved)
		}
		if err != nil {
			t.Errorf("boot %d: no results.json before it: %v", n, err)
		} else if len(saved.Boots) != n-1 {
			t.Errorf("boot %d: results.json holds %d boots, want %d", n, len(saved.Boots), n-1)
		}
		dir = c.Dir
		return goodOutcome(c, 1e6), nil
	}
	res, runDir, err := runFake(t, context.Background(), fakeLab(2, 1, 2), env, "")
	if err != nil {
		t.Fatal(err)
	}
	want := "baseline/1cpu patched/1cpu baseline/1cpu patched/1cpu baseline/2cpu patched/2cpu baseline/2cpu patched/2cpu"
	if got := variantsOf(res.Boots); got != want {
		t.Errorf("order %s\nwant  %s", got, want)
	}
	if !res.Complete || res.Schema != results.Schema {
		t.Errorf("complete %v, schema %d", res.Complete, res.Schema)
	}
	if !strings.HasPrefix(dir, runDir) || !strings.HasSuffix(dir, "08-x86_64-2cpu-patched") {
		t.Errorf("last boot directory %s (run %s)", dir, runDir)
	}
	if env.booted[0].Clock != results.ClockICount || env.booted[2].Kernel != "/fake/x86_64-baseline" || env.booted[3].Kernel != "/fake/x86_64-patched" {
		t.Errorf("boot configs: %+v", env.booted[:4])
	}
	if env.booted[4].Clock != results.ClockWall {
		t.Errorf("2 vCPUs under TCG: clock %s", env.booted[4].Clock)
	}
	// The table and the reports are publish's (cmd/lab), rendered once.
	if _, err := os.Stat(filepath.Join(runDir, "table.txt")); err == nil {
		t.Error("lab run's measuring wrote table.txt: the reports are rendered once, when the run is published")
	}
}

func TestRunOnly(t *testing.T) {
	res, _, err := runFake(t, context.Background(), fakeLab(3, 1), &fakeEnv{}, variant.Patched)
	if err != nil {
		t.Fatal(err)
	}
	if got := variantsOf(res.Boots); got != "patched/1cpu patched/1cpu patched/1cpu" {
		t.Errorf("order %s", got)
	}
	if _, _, err := runFake(t, context.Background(), fakeLab(1, 1), &fakeEnv{}, "both"); err == nil {
		t.Error("--only both: want an error")
	}
}

// A series that changes no code builds its baseline's image: the run says
// so, boots nothing and ends with SameImageError, unless told to boot
// them; a run of several boots when one series of them changes code.
func TestRunSameImage(t *testing.T) {
	one := map[variant.Variant]string{variant.Baseline: "aa11", variant.Patched: "aa11", "v1": "aa11", "v2": "bb22"}
	for _, tc := range []struct {
		name  string
		opt   func(*Options)
		boots int
		err   bool
	}{
		{"one series", func(*Options) {}, 0, true},
		{"--boot-same-image", func(o *Options) { o.BootSameImage = true }, 2, false},
		{"--only", func(o *Options) { o.Only = variant.Patched }, 1, false},
		{"several, one with code", func(o *Options) { *o = severalOptions(t, "v1", "v2") }, 9, false},
		{"several, none with code", func(o *Options) { *o = severalOptions(t, "v1", "v1b") }, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			opt := Options{Lab: fakeLab(1, 1), ResultsDir: t.TempDir(), Command: []string{"lab", "run"}, Parallel: 1}
			tc.opt(&opt)
			opt.Out = &out
			env := &fakeEnv{images: one}
			if len(opt.Series) > 0 {
				env.images = map[variant.Variant]string{variant.Baseline: "aa11", "v1": "aa11", "v1b": "aa11", "v2": "bb22"}
			}
			res, _, err := runImpl(context.Background(), opt, tcgHost(), env)
			var same *SameImageError
			if errors.As(err, &same) != tc.err || res == nil || len(res.Boots) != tc.boots {
				t.Fatalf("err %v, boots %d; want SameImageError %v, %d boots\n%s", err, len(res.Boots), tc.err, tc.boots, out.String())
			}
			if tc.err && (!res.Complete || !strings.Contains(out.String(), "no code change: the x86_64 baseline and ") || !strings.Contains(out.String(), "one image (sha256 aa11)")) {
				t.Errorf("complete %v; output:\n%s", res.Complete, out.String())
			}
			if tc.name == "several, one with code" && !slices.ContainsFunc(res.Notes, func(n string) bool { return strings.Contains(n, "baseline and v1 kernels are one image") }) {
				t.Errorf("notes %q", res.Notes)
			}
		})
	}
}

// A failed boot does not stop the run; each failure keeps its kind, and a
// kernel's failure is told from the infrastructure's.
func TestRunCountsFailuresByKind(t *testing.T) {
	env := &fakeEnv{boot: func(ctx context.Context, n int, c vm.Config) (*vm.Outcome, error) {
		switch n {
		case 2:
			return &vm.Outcome{}, &vm.BootError{Kind: results.FailPanic, Reason: "kernel panic"}
		case 3:
			return nil, &vm.InfraError{Reason: "start qemu-system-x86_64", Err: os.ErrNotExist}
		case 5:
			// The guest saw one CPU of two: the kernel's failure.
			out := goodOutcome(c, 1e6)
			out.Records[0].Hello.Online, out.Records[0].Hello.OnlineCPUs = "0", 1
			return out, nil
		}
		return goodOutcome(c, 1e6), nil
	}}
	res, dir, err := runFake(t, context.Background(), fakeLab(3, 2), env, "")
	if err == nil || !strings.Contains(err.Error(), "3 boot(s) failed") {
		t.Fatalf("err = %v", err)
	}
	saved, lerr := results.Load(filepath.Join(dir, "results.json"))
	if lerr != nil {
		t.Fatal(lerr)
	}
	if len(saved.Boots) != 6 || saved.Complete {
		t.Fatalf("%d boots saved, complete %v", len(saved.Boots), saved.Complete)
	}
	kinds := map[int]string{2: results.FailPanic, 3: results.FailInfra, 5: results.FailShape}
	for _, b := range res.Boots {
		want := kinds[b.Index]
		got := ""
		if b.Failure != nil {
			got = b.Failure.Kind
		}
		if got != want {
			t.Errorf("boot %d: failure %q, want %q", b.Index, got, want)
		}
	}
	if !res.Boots[1].Failure.KernelFault() || res.Boots[2].Failure.KernelFault() {
		t.Error("a panic is the kernel's fault, a QEMU that does not start is not")
	}
}

// Ctrl-C stops the run at the boot in progress; every boot before it and
// the interrupted one stay in results.json.
func TestRunInterrupt(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env := &fakeEnv{boot: func(ctx context.Context, n int, c vm.Config) (*vm.Outcome, error) {
		if n == 3 {
			cancel()
			out := goodOutcome(c, 1e6)
			out.Records = out.Records[:1] // only the hello came through
			return out, fmt.Errorf("boot interrupted: %w", ctx.Err())
		}
		return goodOutcome(c, 1e6), nil
	}}
	res, dir, err := runFake(t, ctx, fakeLab(5, 1), env, "")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if len(env.booted) != 3 {
		t.Errorf("%d boots started after Ctrl-C at the third", len(env.booted))
	}
	saved, lerr := results.Load(filepath.Join(dir, "results.json"))
	if lerr != nil {
		t.Fatal(lerr)
	}
	if len(saved.Boots) != 3 || saved.Complete || !saved.Boots[0].OK() || saved.Boots[2].Failure == nil || saved.Boots[2].Failure.Kind != results.FailInterrupt {
		t.Fatalf("saved: complete %v, boots %+v", saved.Complete, saved.Boots)
	}
	if saved.Boots[2].Hello == nil {
		t.Error("the interrupted boot lost what it had sent")
	}
	_ = res
}

// icount boots run side by side (the host's CPUs by default), and results
// keep the interleaved order of the slots whatever order boots finish in.
func TestRunParallelICount(t *testing.T) {
	var mu sync.Mutex
	running, most := 0, 0
	env := &fakeEnv{boot: func(ctx context.Context, n int, c vm.Config) (*vm.Outcome, error) {
		mu.Lock()
		running++
		most = max(most, running)
		mu.Unlock()
		// Later boots finish first.
		time.Sleep(time.Duration(10-n) * 3 * time.Millisecond)
		mu.Lock()
		running--
		mu.Unlock()
		return goodOutcome(c, 1e6), nil
	}}
	var out bytes.Buffer
	res, _, err := runImpl(context.Background(), Options{Lab: fakeLab(4, 1), ResultsDir: t.TempDir(), Out: &out}, tcgHost(), env)
	if err != nil {
		t.Fatal(err)
	}
	if most != 2 {
		t.Errorf("%d boots at once on a 2-CPU host under icount, want 2", most)
	}
	for i, b := range res.Boots {
		if b.Index != i+1 || (i%2 == 0) != (b.Variant == variant.Baseline) {
			t.Errorf("boot %d at position %d: %s", b.Index, i, b.Variant)
		}
	}
	// Wall clock: one at a time unless asked, and then with a caveat.
	plans, _ := testbed.Plan(fakeLab(1, 2), tcgHost())
	testbed.Parallelize(plans, 0, 2)
	if plans[0].Parallel != 1 {
		t.Errorf("wall clock: %d at once by default", plans[0].Parallel)
	}
	testbed.Parallelize(plans, 2, 2)
	if plans[0].Parallel != 2 || !strings.Contains(strings.Join(plans[0].Caveats, " "), "parallel wall-clock boots") {
		t.Errorf("wall clock, --parallel 2: %d, caveats %v", plans[0].Parallel, plans[0].Caveats)
	}
}

// A run the host cannot carry out fails before it has a folder.
func TestRunRejectedLeavesNoFolder(t *testing.T) {
	resultsDir := t.TempDir()
	var out bytes.Buffer
	opt := Options{Lab: fakeLab(1, 1), ResultsDir: resultsDir, Out: &out}
	host := tcgHost()
	host.VM.ForcedAccel = results.KVM
	if _, _, err := runImpl(context.Background(), opt, host, &fakeEnv{}); err == nil || !strings.Contains(err.Error(), "--accel kvm") {
		t.Fatalf("err = %v", err)
	}
	if ents, _ := os.ReadDir(resultsDir); len(ents) != 0 {
		t.Errorf("a rejected run left %d entries in the results folder", len(ents))
	}
}

func TestPlan(t *testing.T) {
	for _, tc := range []struct {
		name    string
		host    testbed.Host
		cpus    int
		measure string
		clock   string
		accel   string
		pinned  bool
		wantErr string
	}{
		{"tcg 1 vCPU: icount", tcgHost(), 1, spec.MeasureAuto, results.ClockICount, results.TCG, false, ""},
		{"tcg 2 vCPUs: wall", tcgHost(), 2, spec.MeasureAuto, results.ClockWall, results.TCG, false, ""},
		{"kvm 1 vCPU: wall, pinned", kvmHost(), 1, spec.MeasureAuto, results.ClockWall, results.KVM, true, ""},
		{"kvm cannot icount", kvmHost(), 1, spec.MeasureICount, "", "", false, "icount needs TCG"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lab := fakeLab(1, tc.cpus)
			lab.Matrix.Measure = tc.measure
			plans, err := testbed.Plan(lab, tc.host)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			p := plans[0]
			if p.Clock != tc.clock || p.Accel.Name != tc.accel || (p.Pin != nil) != tc.pinned {
				t.Errorf("plan: clock %s accel %s pin %v (%s)", p.Clock, p.Accel.Name, p.Pin, p.PinNote)
			}
			if p.BootDeadline < time.Minute || p.Quiet <= 0 || len(p.Job.Benchmarks) != 3 {
				t.Errorf("plan: deadlines %v/%v, job %+v", p.BootDeadline, p.Quiet, p.Job)
			}
		})
	}
}

// lpj= comes from the host's TSC, only where the arch's delay loop counts
// TSC cycles, under multi-vCPU wall-clock TCG.
func TestPlanLPJ(t *testing.T) {
	x86, _ := arch.Lookup("x86_64")
	arm, _ := arch.Lookup("arm64")
	for _, tc := range []struct {
		a     arch.Arch
		cpus  int
		clock string
		accel string
		want  int64
	}{
		{x86, 2, results.ClockWall, results.TCG, 2_000_000_000 / 1000},
		{x86, 1, results.ClockICount, results.TCG, 0},
		{x86, 2, results.ClockWall, results.KVM, 0},
		{arm, 2, results.ClockWall, results.TCG, 0},
	} {
		p := testbed.ShapePlan{Arch: tc.a, Shape: topology.Shape{CPUs: tc.cpus}, Clock: tc.clock, Accel: vm.Accel{Name: tc.accel}, TSCkHz: 2_000_000}
		if got := p.LPJ(1000); got != tc.want {
			t.Errorf("%s %d vCPUs %s %s: lpj %d, want %d", tc.a.Name, tc.cpus, tc.clock, tc.accel, got, tc.want)
		}
	}
}

// Deadlines grow with vCPUs (x86 TCG bring-up is serial), benchmark time and
// icount's slower clock.
func TestDeadline(t *testing.T) {
	x86, _ := arch.Lookup("x86_64")
	arm, _ := arch.Lookup("arm64")
	tcg := vm.Accel{Name: results.TCG}
	job := protocol.Job{Benchmarks: []string{"uprobe-nop"}, Producers: []int{1}, Samples: 5, WarmupSamples: 1}
	boot, quiet := testbed.Deadline(x86, 2, tcg, results.ClockWall, job, 2)
	if boot < 60*time.Second || boot > 5*time.Minute || quiet < 12*time.Second {
		t.Errorf("2 vCPUs: boot %v, quiet %v", boot, quiet)
	}
	// Measured here: x86_64 96 vCPUs 335 s to the agent, arm64 70 s.
	if big, _ := testbed.Deadline(x86, 96, tcg, results.ClockWall, job, 2); big < 335*time.Second {
		t.Errorf("x86 96 vCPUs took 335 s to boot when measured; deadline %v", big)
	}
	armBoot, armQuiet := testbed.Deadline(arm, 96, tcg, results.ClockWall, job, 2)
	x86Boot, _ := testbed.Deadline(x86, 96, tcg, results.ClockWall, job, 2)
	if armBoot >= x86Boot || armBoot < 70*time.Second {
		t.Errorf("arm64 96 vCPUs: %v (x86_64 %v); measured 70 s", armBoot, x86Boot)
	}
	// Oversubscribed: a guest second takes many host seconds.
	if armQuiet < 4*quiet {
		t.Errorf("96 vCPUs on a small host: quiet %v, 2 vCPUs %v", armQuiet, quiet)
	}
	long := job
	long.Samples = 600
	if _, d := testbed.Deadline(x86, 2, tcg, results.ClockWall, long, 2); d < 600*time.Second {
		t.Errorf("a 600 s benchmark gets a %v deadline", d)
	}
}

// A shard's run keeps the whole run's boot numbers; lab build boots nothing.
func TestShardAndBuildOnlyRuns(t *testing.T) {
	var out bytes.Buffer
	opt := Options{Lab: fakeLab(3, 1), ResultsDir: t.TempDir(), Out: &out, Parallel: 1, Shard: shard.Shard{K: 1, N: 2}}
	res, dir, err := runImpl(context.Background(), opt, tcgHost(), &fakeEnv{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Shard == nil || res.Shard.K != 1 || len(res.Boots) != 2 || res.Boots[0].Index != 3 || res.Boots[1].Index != 4 || !strings.Contains(dir, "shard1-of-2") {
		t.Errorf("shard 1/2 of 3 pairs: %+v, boots %v, dir %s", res.Shard, variantsOf(res.Boots), dir)
	}
	opt.Shard, opt.BuildOnly = shard.Shard{}, true
	env := &fakeEnv{}
	res, dir, err = runImpl(context.Background(), opt, tcgHost(), env)
	if err != nil || len(env.booted) != 0 || len(res.Kernels) != 2 || !strings.Contains(filepath.Base(dir), "build-") {
		t.Errorf("build only: err %v, %d boots, %d kernels, %s", err, len(env.booted), len(res.Kernels), dir)
	}
}

// --sandbox auto builds in a sandbox exactly when the lab comes from
// outside lab's checkout.
func TestSandboxAuto(t *testing.T) {
	root := t.TempDir()
	for _, tc := range []struct {
		labRoot, flag string
		want          bool
	}{
		{root, "", false},
		{filepath.Join(root, "sub"), "auto", false},
		{t.TempDir(), "", true},
		{t.TempDir(), "off", false},
		{root, "on", true},
	} {
		var f Flags
		f.Sandbox.V = tc.flag
		opt := Options{Lab: &spec.Lab{Root: tc.labRoot}}
		if err := f.Apply(&opt, root); err != nil {
			t.Fatal(err)
		}
		if opt.Sandbox != tc.want {
			t.Errorf("lab in %s, --sandbox %q: sandbox %v, want %v", tc.labRoot, tc.flag, opt.Sandbox, tc.want)
		}
	}
}

// Oversubscribed TCG guests run in one host thread, with a caveat; guests
// that fit keep a thread per vCPU.
func TestPlanSingleThread(t *testing.T) {
	for _, tc := range []struct {
		arch   string
		cpus   int
		single bool
	}{{"arm64", 96, true}, {"arm64", 2, false}, {"x86_64", 96, true}, {"x86_64", 2, false}} {
		lab := fakeLab(1, tc.cpus)
		lab.Matrix.Arch = []string{tc.arch}
		plans, err := testbed.Plan(lab, tcgHost())
		if err != nil {
			t.Fatal(err)
		}
		p := plans[0]
		caveat := strings.Contains(strings.Join(p.Caveats, " "), "single-threaded TCG")
		if p.SingleThread != tc.single || caveat != tc.single || (tc.single && p.Pin != nil) {
			t.Errorf("%s %d vCPUs: single %v, caveats %v, pin %v", tc.arch, tc.cpus, p.SingleThread, p.Caveats, p.Pin)
		}
	}
}

// A guest tool adds a result for each benchmark it knows: progress and ETAs
// count them.
func TestExpectedResults(t *testing.T) {
	job := protocol.Job{Benchmarks: []string{"uprobe-nop", "kretprobe-flock", "usermode-count"}, Producers: []int{1, 2}}
	if n := testbed.ExpectedResults(job); n != 6 {
		t.Errorf("agent alone: %d results, want 6", n)
	}
	job.Tools = []string{"bpf-bench"}
	// kretprobe-flock has no upstream benchmark: bench does not run it.
	if n := testbed.ExpectedResults(job); n != 10 {
		t.Errorf("with bpf-bench: %d results, want 10", n)
	}
}
