// Package runtest holds what the end-to-end tests of lab run share: the
// small lab they boot, the kernel cache, and the checks of a run's record.
package runtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"lab/initramfs/protocol"
	"lab/internal/arch"
	"lab/internal/benchmark"
	"lab/internal/insnprof"
	"lab/internal/report"
	"lab/internal/results"
	"lab/internal/run"
	"lab/internal/source"
	"lab/internal/spec"
	"lab/internal/stackprof"
	"lab/internal/testenv"
	"lab/internal/topology"
	"lab/internal/variant"
	"lab/internal/verdict"
	"lab/internal/vm"
)

// Root is the module's root: the tests of any package find labs/ and
// the guest's sources from it.
func Root(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's folder")
		}
		dir = parent
	}
}

// CacheDir is the kernel cache the end-to-end tests share: $LAB_CACHE, or
// lab's default.
func CacheDir(t testing.TB) string {
	if d := os.Getenv("LAB_CACHE"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(home, ".cache", "lab")
}

// Duration is each benchmark's measured time in the suite's labs: one
// sample, as short as their checks allow. A guest second costs ~2.7 s of
// host CPU under icount, and a boot of uprobe-nop and the two controls
// took 9.6 s at 1 s samples, 3.5 s at this (figures to the same last
// digit under icount).
const Duration = 250 * time.Millisecond

// SmallLab is labs/uprobe-srcu.yaml cut down to one short boot per variant,
// without warm-up: a guest second costs ~2.7 s of host CPU under icount. The
// tests that check the warm-up's record ask for one themselves.
//
// Its arm64 kernel also has what the kernel's own bench needs (NET, BTF:
// kernel-config/bpf-bench.config), so that the test of bench beside the
// agent (internal/bpfbench) boots the suite's arm64 kernel instead of
// building a debug-info kernel of its own, the longest cold build the suite
// had.
func SmallLab(t testing.TB, archName string) *spec.Lab {
	lab, err := spec.Load(filepath.Join(Root(t), "labs", "uprobe-srcu.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	SuiteConfig(lab, archName)
	m := &lab.Matrix
	m.Arch, m.CPUs, m.Producers, m.Boots = []string{archName}, []int{2}, []int{1, 2}, 1
	m.Benchmarks = []string{"uprobe-nop"}
	m.Duration.Duration, m.Warmup.Duration = Duration, 0
	if err := lab.Validate(); err != nil {
		t.Fatal(err)
	}
	return lab
}

// OneCPU cuts lab to one vCPU and one producer measured on clock, without
// the controls: for a test that reads uprobe-nop's figures, or only whether
// boots ran, each control would be another guest second per boot. A test
// that does not read the figures measures on the wall clock: a guest
// second is a second of one host CPU there, and about 3 under icount.
func OneCPU(t testing.TB, lab *spec.Lab, clock string) {
	t.Helper()
	off := false
	m := &lab.Matrix
	m.CPUs, m.Producers, m.Measure, m.Controls = []int{1}, []int{1}, clock, &off
	if err := lab.Validate(); err != nil {
		t.Fatal(err)
	}
}

// BenchFragment is the config the kernel's bench needs, which the suite's
// arm64 kernels carry (SuiteConfig).
const BenchFragment = "bpf-bench.config"

// SuiteConfig gives a lab of the suite the config of the suite's kernels
// of an arch: on arm64, what the kernel's bench needs on top of the lab's
// fragments. Every arm64 test lab of the suite takes it, so that they all
// boot one cold-built kernel: one without it was a second arm64 cold
// build (752 files, 174 s).
func SuiteConfig(lab *spec.Lab, archName string) {
	if archName == "arm64" && !slices.Contains(lab.Config, BenchFragment) {
		lab.Config = append(lab.Config, BenchFragment)
	}
}

// Run runs lab as lab run does, and gives its record, folder and output.
func Run(t testing.TB, lab *spec.Lab) (*results.Run, string, string) {
	t.Helper()
	return With(t, run.Options{Lab: lab})
}

// With runs lab with opt, filling in the test's cache, results folder,
// module root and command line, and fails the test when the run fails.
func With(t testing.TB, opt run.Options) (*results.Run, string, string) {
	t.Helper()
	var out bytes.Buffer
	opt.CacheDir, opt.ResultsDir, opt.ModuleRoot, opt.Command, opt.Out = CacheDir(t), t.TempDir(), Root(t), []string{"go", "test"}, &out
	res, dir, err := run.Run(context.Background(), opt)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	return res, dir, out.String()
}

// checkSourceAndSeries checks the provenance of a run of SmallLab: the
// source Debian ships today and the one series, reverted.
func checkSourceAndSeries(t testing.TB, saved *results.Run) {
	t.Helper()
	// The point release is whatever Debian ships today: read it from the
	// installed package, never pin it.
	if want := testenv.DebianKernelVersion(t, spec.DefaultPackage); saved.Source.Version != want || !strings.Contains(saved.Source.Desc, "linux-source-6.12") {
		t.Errorf("source provenance: %+v", saved.Source)
	}
	ser := saved.First()
	if len(saved.Series) != 1 || ser.Variant != variant.Patched || ser.Mode != spec.ModeRevert || len(ser.Patches) != 1 || len(ser.Patches[0].SHA256) != 64 {
		t.Errorf("series provenance: %+v", saved.Series)
	}
	if ser.Variants.Baseline == ser.Variants.Patched {
		t.Error("baseline and patched are the same commit")
	}
}

// CheckRun checks a run of SmallLab: both variants built, booted and
// measured, with the provenance a record must carry, and the warm-up's
// record when the lab has one.
func CheckRun(t testing.TB, res *results.Run, dir, archName string) {
	t.Helper()
	sample := min(res.Matrix.Duration, time.Second)
	warmups := int(res.Matrix.Warmup / sample)
	if !res.Complete {
		t.Error("run not marked complete")
	}
	saved, err := results.Load(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	checkSourceAndSeries(t, saved)
	if saved.Host.CPUs == 0 || saved.Host.CPUModel == "" || saved.LabVersion == "" {
		t.Errorf("host provenance: %+v, lab %q", saved.Host, saved.LabVersion)
	}
	images := map[variant.Variant]string{}
	for _, k := range saved.Kernels {
		if len(k.Info.ConfigSHA256) != 64 || k.Info.Release == "" || k.Info.Inputs.Compiler == "" {
			t.Errorf("kernel provenance: %+v", k.Info)
		}
		images[k.Variant] = k.Info.ConfigSHA256
	}
	if len(images) != 2 {
		t.Errorf("want both variants built, got %v", images)
	}
	if len(saved.Boots) != 2 {
		t.Fatalf("boots = %d, want 2", len(saved.Boots))
	}
	for _, b := range saved.Boots {
		if !b.OK() {
			t.Errorf("boot %d (%s) failed: %+v", b.Index, b.Variant, b.Failure)
			continue
		}
		if b.Hello == nil || !strings.HasPrefix(b.Hello.Release, saved.Source.Version) || b.Hello.OnlineCPUs != 2 {
			t.Errorf("boot %d guest: %+v", b.Index, b.Hello)
		}
		if b.Outcome == nil || b.Outcome.QEMUVersion == "" || len(b.Outcome.VCPUs) != 2 || b.Accel.Reason == "" {
			t.Errorf("boot %d QEMU provenance: %+v accel %+v", b.Index, b.Outcome, b.Accel)
		}
		if _, err := os.Stat(filepath.Join(dir, b.Console)); err != nil {
			t.Errorf("boot %d console log: %v", b.Index, err)
		}
		// uprobe-nop and the two controls, at 1 and 2 producers.
		if len(b.Results) != 6 {
			t.Errorf("boot %d: %d results, want 6", b.Index, len(b.Results))
		}
		// Found by name: the ratios' order is not what this checks.
		if r := b.Ratios(); !slices.ContainsFunc(r, func(x results.Ratio) bool { return x.Benchmark == "uprobe-nop" && x.Producers == 2 && x.Value > 0 }) {
			t.Errorf("boot %d: no uprobe-nop scaling ratio: %v", b.Index, r)
		}
		for _, r := range b.Results {
			if r.Error != "" || r.Unsupported != "" {
				t.Errorf("boot %d %s p=%d: %s%s", b.Index, r.Benchmark, r.Producers, r.Error, r.Unsupported)
				continue
			}
			if len(r.Samples) != 1 || len(r.Warmup) != warmups {
				t.Errorf("boot %d %s p=%d: %d samples, %d warm-up, want 1 and %d", b.Index, r.Benchmark, r.Producers, len(r.Samples), len(r.Warmup), warmups)
			}
			for _, s := range r.Samples {
				if s.Hits == 0 || s.Rate <= 0 || s.IntervalNS < sample.Nanoseconds()/2 {
					t.Errorf("boot %d %s p=%d: sample %+v", b.Index, r.Benchmark, r.Producers, s)
				}
			}
			if r.Benchmark == "uprobe-nop" && !strings.Contains(r.Attach, "/lab-producer:nop+0") {
				t.Errorf("attach point not recorded: %q", r.Attach)
			}
		}
	}
	table := report.Text(report.Build(saved, dir, "test"), false)
	if !strings.Contains(table, "uprobe-srcu · "+archName+" · 2 vCPUs · TCG") && !strings.Contains(string(table), "KVM") {
		t.Errorf("table header:\n%s", table)
	}
	checkSampledProfiles(t, saved)
}

// checkSampledProfiles checks the sampled profile of each kernel of a
// wall-clock run (its only boot): the guest's perf_event BPF program
// sampled kernel stacks in one more sample of each result, and lab named
// them by the kernel's System.map. A uprobe hit runs uprobe_notify_resume
// on both arches (x86_64 on the way back to user mode, arm64 from
// do_notify_resume), under which the handler chain runs (hitPathSamples);
// the user-mode loop's samples have no kernel stack.
//
// How many samples a guest takes depends on the host: a TCG vCPU that the
// host does not run misses its cpu-clock ticks (a 2-vCPU guest beside the
// suite's builds took 87, alone some 400), so the check asks for enough
// samples to tell those shares, not a count a quiet host gives.
func checkSampledProfiles(t testing.TB, saved *results.Run) {
	t.Helper()
	for _, v := range []variant.Variant{variant.Baseline, variant.Patched} {
		i := slices.IndexFunc(saved.Profiles, func(p results.Profile) bool { return p.Variant == v && p.Method == stackprof.Method })
		if i < 0 {
			t.Errorf("%s: no sampled profile (profiles %d)", v, len(saved.Profiles))
			continue
		}
		p := saved.Profiles[i]
		for _, res := range p.Results {
			children := map[string]uint64{}
			for _, f := range res.Functions {
				children[f.Name] = f.Children
			}
			switch {
			case res.Samples < minStackSamples || res.Ops == 0 || res.Event != "cpu-clock" || res.Hz != run.StackHz:
				t.Errorf("%s %s p=%d: %d samples of %q at %d Hz over %d operations", v, res.Benchmark, res.Producers, res.Samples, res.Event, res.Hz, res.Ops)
			case res.Benchmark == "uprobe-nop" && hitPathSamples(children) < busySamples(res.Samples, children)/10:
				t.Errorf("%s uprobe-nop p=%d: the uprobe hit path in %d of %d samples: %+v", v, res.Producers, hitPathSamples(children), res.Samples, res.Functions)
			case res.Benchmark == "usermode-count" && children[insnprof.User] < busySamples(res.Samples, children)/3:
				t.Errorf("%s usermode-count p=%d: user mode in %d of %d samples: %+v", v, res.Producers, children[insnprof.User], res.Samples, res.Functions)
			}
		}
	}
}

// hitPathSamples is how many samples a uprobe hit's path holds, by the
// function of it that holds the most. Where in the path a cpu-clock sample
// lands depends on the host: the timer that takes it fires where the
// guest enables interrupts again, so a loaded host piles samples at the
// exception's exit (x86_64 beside the suite's builds: 69 of 78 under
// asm_exc_int3, 64 in irqentry_exit_to_user_mode itself, 4 under
// uprobe_notify_resume; arm64: el0_softstp 26, el0_brk64 23 and
// uprobe_notify_resume 21 of 125 busy). The path is the breakpoint's
// exception (x86_64's int3; arm64's BRK, then its single step) and the
// work on the way back to user mode.
func hitPathSamples(children map[string]uint64) uint64 {
	var most uint64
	for _, f := range []string{"uprobe_notify_resume", "asm_exc_int3", "el0_brk64", "el0_softstp"} {
		most = max(most, children[f])
	}
	return most
}

// busySamples is how many of a profile's samples caught a vCPU at work:
// one producer on a 2-vCPU guest leaves a vCPU idle, and how many of its
// ticks a TCG host delivers depends on the host's load (an arm64 guest
// beside the suite's builds: 117 of 242 samples in default_idle_call, the
// uprobe path in 21, a tenth of all but a sixth of the busy ones; the
// user-mode loop in 37 of 115, under a third of all).
func busySamples(samples uint64, children map[string]uint64) uint64 {
	idle := max(children["do_idle"], children["default_idle_call"])
	return samples - min(idle, samples)
}

// minStackSamples is the fewest samples a sampled profile of a test run
// must have: enough to see a path in a tenth of them.
const minStackSamples = 30

// Build builds (or finds in the cache) a lab's kernels and initramfs as
// lab build does, with no boot.
func Build(t testing.TB, lab *spec.Lab) (*results.Run, string) {
	t.Helper()
	res, _, out := With(t, run.Options{Lab: lab, BuildOnly: true})
	return res, out
}

// Arch runs the checks of lab run on one arch: both variants built,
// booted and found again in the cache, a NUMA guest, and every benchmark
// of the bench suite the arch supports.
func Arch(t *testing.T, a string) {
	t.Run("both variants", func(t *testing.T) { BothVariants(t, a) })
	t.Run("NUMA", func(t *testing.T) { NUMA(t, a) })
	t.Run("bench suite", func(t *testing.T) { BenchSuite(t, a) })
}

// BothVariants runs SmallLab on arch (both variants built, booted,
// measured; the record checked), then builds it again and checks that
// nothing was compiled: the kernels come from the cache, as lab build
// looks them up.
func BothVariants(t *testing.T, a string) {
	lab := SmallLab(t, a)
	// The warm-up's record is the host's to keep, the same on every arch:
	// x86_64 checks it, with one warm-up sample; on arm64 it would be 6
	// samples more a boot.
	if a == "x86_64" {
		lab.Matrix.Warmup.Duration = Duration
	}
	res, dir, out := Run(t, lab)
	t.Logf("first run:\n%s", out)
	CheckRun(t, res, dir, a)

	// The second time, the kernels come from the cache: lab build
	// looks them up as lab run does, without the boots.
	again, out := Build(t, lab)
	t.Logf("second run:\n%s", out)
	if len(again.Kernels) != 2 {
		t.Fatalf("second run kernels: %+v", again.Kernels)
	}
	for _, k := range again.Kernels {
		if !k.Cached {
			t.Errorf("second run compiled %s/%s again", k.Arch, k.Variant)
		}
	}
	if !strings.Contains(out, "cached, 0 compiled") {
		t.Errorf("second run does not say it compiled nothing:\n%s", out)
	}
}

// NUMA boots a NUMA guest of arch and checks that both QEMU (QMP) and the
// guest kernel saw the layout asked for: an arm64 guest with 4 nodes, an
// x86_64 guest with 2 nodes on 2 sockets.
func NUMA(t *testing.T, a string) {
	i := slices.IndexFunc(numaShapes, func(s numaShape) bool { return s.arch == a })
	if i < 0 {
		t.Fatalf("no NUMA shape for %s", a)
	}
	tc := numaShapes[i]
	lab := SmallLab(t, tc.arch)
	m := &lab.Matrix
	m.CPUs, m.NUMA, m.Sockets, m.Memory, m.Producers = []int{tc.cpus}, []int{tc.numa}, tc.sockets, tc.memory, []int{1}
	m.Duration.Duration = Duration
	if err := lab.Validate(); err != nil {
		t.Fatal(err)
	}
	res, dir, out := With(t, run.Options{Lab: lab, Only: variant.Patched})
	b := res.Boots[0]
	t.Logf("QEMU's view: vCPUs %+v, memdevs %+v", b.Outcome.VCPUs, b.Outcome.Memdevs)
	t.Logf("guest's view: %s", topology.GuestText(b.Hello))
	if b.Shape == nil || len(b.Shape.Nodes) != tc.numa {
		t.Fatalf("shape %+v", b.Shape)
	}
	// The run already verified both views; check the record too.
	if len(b.Hello.Nodes) != tc.numa {
		t.Fatalf("guest nodes %+v", b.Hello.Nodes)
	}
	for i, n := range b.Hello.Nodes {
		if n.CPUs != tc.wantNodeCPUs[i] || n.MemTotalKiB == 0 {
			t.Errorf("guest node %d: %+v, want CPUs %s", i, n, tc.wantNodeCPUs[i])
		}
	}
	sockets := map[int]bool{}
	for _, v := range b.Outcome.VCPUs {
		sockets[v.Props.Socket] = true
		if want := v.Index / (tc.cpus / tc.numa); v.Props.Node != want {
			t.Errorf("QMP: vCPU %d in node %d, want %d", v.Index, v.Props.Node, want)
		}
	}
	if len(sockets) != tc.wantSocketsQMP || len(b.Outcome.Memdevs) != tc.numa {
		t.Errorf("QMP: %d sockets, memdevs %+v", len(sockets), b.Outcome.Memdevs)
	}
	if !strings.Contains(out, fmt.Sprintf("%d NUMA nodes", tc.numa)) {
		t.Errorf("the table does not show the nodes:\n%s", out)
	}
	t.Logf("boot to agent: %v", b.Outcome.ToAgent)
	// x86_64 under TCG gets lpj=, so no secondary CPU runs the slow
	// delay-loop calibration.
	console, _ := os.ReadFile(filepath.Join(dir, b.Console))
	if tc.arch == "x86_64" && bytes.Contains(console, []byte("calibrate_delay_direct() failed")) {
		t.Errorf("secondary CPUs calibrated their delay loops (no lpj=?): %s", filepath.Join(dir, b.Console))
	}
}

// numaShape is a NUMA layout and what QEMU and the guest must show of it.
type numaShape struct {
	arch           string
	cpus, numa     int
	sockets        int
	memory         string
	wantNodeCPUs   []string
	wantSocketsQMP int
}

var numaShapes = []numaShape{
	{"arm64", 16, 4, 0, "2G", []string{"0-3", "4-7", "8-11", "12-15"}, 4},
	{"x86_64", 4, 2, 2, "1G", []string{"0-1", "2-3"}, 2},
}

// BenchSuite boots labs/bench-suite.yaml's benchmarks that arch supports,
// on the patched kernel alone (the agent runs the same code on both, and a
// boot of each would double the test), and checks each has a figure and,
// for a probe, its probe-free baseline. One producer on one vCPU: the
// check is that each benchmark runs on the arch, and BothVariants already
// runs two producers on two vCPUs (two host threads a guest second).
func BenchSuite(t *testing.T, a string) {
	lab, err := spec.Load(filepath.Join(Root(t), "labs", "bench-suite.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	SuiteConfig(lab, a)
	m := &lab.Matrix
	m.Arch, m.Boots = []string{a}, 1
	m.Duration.Duration, m.Warmup.Duration = Duration, 0
	var benches []string
	for _, name := range m.Benchmarks {
		if b, _ := benchmark.Lookup(name); b.UnsupportedOn(a) == "" {
			benches = append(benches, name)
		}
	}
	m.Benchmarks = benches
	// The wall clock: the test reads that each benchmark ran, not its
	// figure. The lab names its controls, so they stay.
	OneCPU(t, lab, spec.MeasureWall)
	// One variant: the agent runs the same code on both, and a boot
	// of each would double the test.
	res, dir, out := With(t, run.Options{Lab: lab, Only: variant.Patched})
	t.Log(out)
	if len(res.Boots) != 1 {
		t.Fatalf("%d boots", len(res.Boots))
	}
	for _, b := range res.Boots {
		if !b.OK() {
			t.Errorf("boot %d %s: %+v", b.Index, b.Variant, b.Failure)
			continue
		}
		seen := map[string]bool{}
		for _, r := range b.Results {
			seen[fmt.Sprintf("%s/%d", r.Benchmark, r.Producers)] = true
			if r.Error != "" || r.Unsupported != "" || len(r.Samples) != 1 || r.Samples[0].Hits == 0 {
				t.Errorf("%s %s p=%d: error %q unsupported %q samples %+v", b.Variant, r.Benchmark, r.Producers, r.Error, r.Unsupported, r.Samples)
			}
			if bench, _ := benchmark.Lookup(r.Benchmark); bench.Probe() && (r.ProbeFree == nil || r.ProbeFree.Calls == 0) {
				t.Errorf("%s %s p=%d: no probe-free baseline", b.Variant, r.Benchmark, r.Producers)
			}
			if r.Benchmark == "kretprobe-flock-tracefs" && r.Counters["kprobe_profile_hits"] == 0 {
				t.Errorf("%s: kprobe_profile shows no hits: %v", r.Benchmark, r.Counters)
			}
		}
		for _, bench := range benches {
			if !seen[bench+"/1"] {
				t.Errorf("%s: no result for %s p=1", b.Variant, bench)
			}
		}
	}
	t.Logf("results in %s", dir)
}

// BuiltKernel is the small lab's x86_64 kernel and initramfs: from the
// cache's manifest, as lab run --no-build takes them, once a build of the
// lab wrote it; else built (or found in the cache) as lab build does. The
// manifest needs no lock on the source tree, which another package's cold
// build holds for its whole length (a boot test waited 12 minutes behind
// the debug-info kernel of the bench's test for a kernel the cache had).
func BuiltKernel(t testing.TB) (kernel, initrd string) {
	t.Helper()
	var out bytes.Buffer
	lab := SmallLab(t, "x86_64")
	res, _, err := run.Run(context.Background(), run.Options{Lab: lab, NoBuild: true, BuildOnly: true,
		CacheDir: CacheDir(t), ResultsDir: t.TempDir(), ModuleRoot: Root(t), Command: []string{"go", "test"}, Out: &out})
	switch {
	case errors.Is(err, run.ErrNotBuilt):
		res, _ = Build(t, lab)
	case err != nil:
		t.Fatalf("the small lab's kernel from the cache: %v\n%s", err, out.String())
	}
	return res.Kernels[0].Info.Image, res.Initramfs[0].Path
}

// QEMUOf is the pid of the QEMU whose command line names dir, 0 if none.
func QEMUOf(dir string) int {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && bytes.HasPrefix(b, []byte("qemu-system")) && bytes.Contains(b, []byte(dir)) {
			var pid int
			fmt.Sscanf(filepath.Base(filepath.Dir(p)), "%d", &pid)
			return pid
		}
	}
	return 0
}

// BootConfig is a one-vCPU x86_64 TCG boot of kernel and initrd running job,
// in a folder of the test's.
func BootConfig(t testing.TB, kernel, initrd string, job protocol.Job) vm.Config {
	a, _ := arch.Lookup("x86_64")
	dir := t.TempDir()
	shape, err := topology.Resolve("x86_64", topology.Request{CPUs: 1, Memory: "512M"})
	if err != nil {
		t.Fatal(err)
	}
	return vm.Config{Arch: a, Kernel: kernel, Initrd: initrd, Shape: shape,
		Accel: vm.Accel{Name: results.TCG, Reason: "test"}, Clock: results.ClockWall, Job: job,
		Dir: dir, QMPPath: filepath.Join(dir, "q.sock")}
}

// NoQEMU fails if a QEMU of this boot is still running.
func NoQEMU(t testing.TB, cfg vm.Config) {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && bytes.Contains(b, []byte(cfg.ConsoleLog())) {
			t.Errorf("QEMU still running: %s", p)
		}
	}
}

// TarballSeries writes each series (name: its edits) under root/patches,
// made from the files of the default source's tree in the test cache.
func TarballSeries(t testing.TB, root string, series map[string][]testenv.Edit) {
	t.Helper()
	tree, err := source.Prepare(context.Background(), source.Origin{Tarball: spec.DefaultTarball, Package: spec.DefaultPackage}, CacheDir(t), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	for name, edits := range series {
		testenv.WriteSeries(t, tree, root, name, edits)
	}
}

// Versions opens the series of a lab of several (versions:), each named
// as the lab names it, for run.Options.Series; the test closes them.
func Versions(t testing.TB, lab *spec.Lab) []run.NamedSeries {
	t.Helper()
	var named []run.NamedSeries
	for i, v := range lab.Versions {
		s, err := lab.OpenVersion(i)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		named = append(named, run.NamedSeries{Variant: variant.Variant(v.Name), Series: s})
	}
	return named
}

// RunVersions runs a lab file of versions (one boot a kernel, as icount
// boots them: boots is the total the test expects) and gives the run, its
// report document and every comparison's first-table rows, keyed
// "<comparison> <benchmark>" ("planted vs baseline uprobe-nop").
func RunVersions(t testing.TB, labFile string, boots int) (*results.Run, *report.Document, map[string]verdict.Row) {
	t.Helper()
	lab, err := spec.Load(labFile)
	if err != nil {
		t.Fatal(err)
	}
	res, dir, out := With(t, run.Options{Lab: lab, Series: Versions(t, lab)})
	t.Log(out)
	if n := len(res.Boots); n != boots {
		t.Fatalf("%d boots, want %d: one a kernel", n, boots)
	}
	d := report.Build(res, dir, "test")
	rows := map[string]verdict.Row{}
	for _, c := range d.Comparisons {
		for _, r := range c.Tables[0].Rows {
			rows[c.Name()+" "+r.Benchmark] = r
			t.Logf("%s %s: %s", c.Name(), r.Benchmark, r.Change.Words())
		}
	}
	return res, d, rows
}
