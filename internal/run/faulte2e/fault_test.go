package faulte2e

// Faults, injected for real: series that panic or hang the guest, a QEMU
// killed mid-benchmark, a QEMU that cannot start, a full disk, a damaged
// cache entry, two runs on one cache, a series that does not compile. For
// each, the run keeps the boots finished before the fault, records the
// failed boot with its kind, and the next run of the same lab works without
// any clean-up.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"lab/initramfs/protocol"
	"lab/internal/report"
	"lab/internal/results"
	"lab/internal/run"
	"lab/internal/run/runtest"
	"lab/internal/source"
	"lab/internal/spec"
	"lab/internal/testenv"
	"lab/internal/variant"
	"lab/internal/vm"
)

// hitPath is where a uprobe hit enters the kernel: a patch there acts on
// the first uprobe-nop hit of a boot.
const hitPath = "\tbp_vaddr = uprobe_get_swbp_addr(regs);\n"

func e2e(t *testing.T) { testenv.E2E(t, "builds and boots real kernels, and breaks them") }

// faultLab writes a lab of one apply-mode patch on the default source and
// returns it loaded: x86_64, 1 vCPU, uprobe-nop only, short samples.
func faultLab(t *testing.T, name string, edit testenv.Edit, measure string) *spec.Lab {
	t.Helper()
	root := testenv.Checkout(t, runtest.Root(t))
	tree, err := source.Prepare(context.Background(), source.Origin{Tarball: spec.DefaultTarball, Package: spec.DefaultPackage}, runtest.CacheDir(t), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	testenv.WriteSeries(t, tree, root, name, []testenv.Edit{edit})
	tree.Close()
	lab, err := spec.Load(testenv.WriteLab(t, root, name, fmt.Sprintf(`name: %s
series: %s
mode: apply
matrix:
  arch: [x86_64]
  cpus: [1]
  benchmarks: [uprobe-nop]
  producers: [1]
  boots: 1
  duration: 250ms
  warmup: 0s
  controls: false # the faults are in the boots, not in the figures
  measure: %s
`, name, name, measure)))
	if err != nil {
		t.Fatal(err)
	}
	return lab
}

func runQuiet(t *testing.T, ctx context.Context, opt run.Options) (*results.Run, string, error, string) {
	t.Helper()
	var out syncBuffer
	opt.Out = &out
	if opt.CacheDir == "" {
		opt.CacheDir = runtest.CacheDir(t)
	}
	if opt.ResultsDir == "" {
		opt.ResultsDir = t.TempDir()
	}
	opt.ModuleRoot, opt.Command = runtest.Root(t), []string{"go", "test"}
	res, dir, err := run.Run(ctx, opt)
	return res, dir, err, out.String()
}

// syncBuffer is a bytes.Buffer parallel boots may write to.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// checkFault checks a run whose patched boot failed with kind: the
// baseline boot before it is kept with its figures, the patched one is
// recorded with its kind, and results.json on disk says the same.
func checkFault(t *testing.T, res *results.Run, dir string, err error, kind string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), "1 boot(s) failed") {
		t.Errorf("err = %v, want one failed boot", err)
	}
	saved, lerr := results.Load(filepath.Join(dir, "results.json"))
	if lerr != nil {
		t.Fatal(lerr)
	}
	if len(saved.Boots) != 2 {
		t.Fatalf("%d boots saved, want the baseline and the failed patched one", len(saved.Boots))
	}
	base, pat := saved.Boots[0], saved.Boots[1]
	if !base.OK() || len(base.Results) == 0 || base.Variant != variant.Baseline {
		t.Errorf("the boot before the fault: %+v", base.Failure)
	}
	if pat.Failure == nil || pat.Failure.Kind != kind {
		t.Errorf("the failed boot: %+v, want kind %s", pat.Failure, kind)
	} else {
		t.Logf("boot %d: %s: %s", pat.Index, pat.Failure.Kind, firstLine(pat.Failure.Message))
	}
	noQEMUIn(t, dir)
}

// oneCPUWallLab is the suite's small x86_64 lab at one vCPU on the wall
// clock: the faults are in the boots, not in the figures.
func oneCPUWallLab(t *testing.T) *spec.Lab {
	t.Helper()
	lab := runtest.SmallLab(t, "x86_64")
	runtest.OneCPU(t, lab, spec.MeasureWall)
	return lab
}

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }

// noQEMUIn fails if a QEMU of a boot under dir still runs.
func noQEMUIn(t *testing.T, dir string) {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && bytes.Contains(b, []byte("qemu-system")) && bytes.Contains(b, []byte(dir)) {
			t.Errorf("QEMU still running: %s", p)
		}
	}
}

// A series that panics on the first uprobe hit: the boot is a kernel panic,
// and running the lab again works the same.
func TestFaultGuestPanic(t *testing.T) {
	e2e(t)
	lab := faultLab(t, "fault-panic", testenv.Edit{Subject: "uprobes: panic on the first hit", File: "kernel/events/uprobes.c",
		Change: testenv.Replace(hitPath, hitPath+"\tpanic(\"lab test: a uprobe was hit\");\n")}, spec.MeasureWall)
	res, dir, err, out := runQuiet(t, context.Background(), run.Options{Lab: lab, Parallel: 1})
	if res == nil {
		t.Fatalf("%v\n%s", err, out)
	}
	checkFault(t, res, dir, err, results.FailPanic)
	// Again, the panicking kernel alone: the same kind of failure.
	res, dir, err, out = runQuiet(t, context.Background(), run.Options{Lab: lab, Parallel: 1, Only: variant.Patched})
	if res == nil {
		t.Fatalf("again: %v\n%s", err, out)
	}
	if len(res.Boots) != 1 || res.Boots[0].Failure == nil || res.Boots[0].Failure.Kind != results.FailPanic {
		t.Errorf("again: boots %+v, want one %s", res.Boots, results.FailPanic)
	}
	noQEMUIn(t, dir)
}

// A series that spins with interrupts off on the hit path: the guest goes
// silent and the boot is a hang.
func TestFaultGuestHang(t *testing.T) {
	e2e(t)
	lab := faultLab(t, "fault-hang", testenv.Edit{Subject: "uprobes: spin with interrupts off on a hit", File: "kernel/events/uprobes.c",
		Change: testenv.Replace(hitPath, hitPath+"\tlocal_irq_disable();\n\tfor (;;)\n\t\tcpu_relax();\n")}, "wall")
	start := time.Now()
	res, dir, err, out := runQuiet(t, context.Background(), run.Options{Lab: lab, Parallel: 1})
	if res == nil {
		t.Fatalf("%v\n%s", err, out)
	}
	checkFault(t, res, dir, err, results.FailHang)
	t.Logf("hang detected and the run over in %v", time.Since(start).Round(time.Second))
}

// QEMU killed with SIGKILL in the middle of a benchmark: an infrastructure
// failure, the boot before it kept.
func TestFaultQEMUKilled(t *testing.T) {
	e2e(t)
	lab := oneCPUWallLab(t)
	resultsDir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// Kill the patched boot's QEMU once its agent has said hello.
		for ctx.Err() == nil {
			time.Sleep(200 * time.Millisecond)
			files, _ := filepath.Glob(filepath.Join(resultsDir, "*", "*", "boots", "02-*", "results.jsonl"))
			if len(files) == 0 {
				continue
			}
			if fi, err := os.Stat(files[0]); err != nil || fi.Size() == 0 {
				continue
			}
			if pid := runtest.QEMUOf(filepath.Dir(files[0])); pid > 0 {
				syscall.Kill(pid, syscall.SIGKILL)
				return
			}
		}
	}()
	res, dir, err, out := runQuiet(t, ctx, run.Options{Lab: lab, ResultsDir: resultsDir, Parallel: 1})
	if res == nil {
		t.Fatalf("%v\n%s", err, out)
	}
	checkFault(t, res, dir, err, results.FailInfra)
}

// A host that does not run the guest while its kernel calibrates the local
// APIC timer (here: QEMU stopped for 120 ms at a time, let run for 3 ms,
// until the guest says so or its agent starts): the guest turns that timer
// off, the boot is not the kernel's failure and is booted again, and the
// run delivers, saying so, the first try's console kept.
func TestFaultHostStarvesCalibration(t *testing.T) {
	e2e(t)
	lab := oneCPUWallLab(t)
	resultsDir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	starved := make(chan string, 1)
	go func() { starved <- starve(ctx, resultsDir) }()
	res, dir, err, out := runQuiet(t, ctx, run.Options{Lab: lab, ResultsDir: resultsDir, Parallel: 1, Only: variant.Baseline})
	cancel()
	t.Logf("the starving: %s", <-starved)
	if err != nil || res == nil || len(res.Boots) != 1 {
		t.Fatalf("%v\n%s", err, out)
	}
	b := res.Boots[0]
	if !b.OK() || len(b.Retried) != 1 || !strings.Contains(b.Retried[0], "APIC frequency too slow") {
		t.Fatalf("boot: failure %+v, retried %q", b.Failure, b.Retried)
	}
	t.Logf("retried: %s", b.Retried[0])
	first, rerr := os.ReadFile(filepath.Join(dir, filepath.Dir(b.Console), "console.try1.log"))
	if rerr != nil || !strings.Contains(string(first), "APIC frequency too slow") {
		t.Errorf("the first try's console: %v\n%s", rerr, first)
	}
	if md := report.Markdown(report.Build(res, dir, "test")); !strings.Contains(md, "the host starved its guest's boot-time timer calibration") {
		t.Errorf("the report does not say boot 1 was booted again:\n%s", md)
	}
	noQEMUIn(t, dir)
}

// starve stops and continues the first boot's QEMU until its console shows
// the calibration failed or its agent started, and says how it ended. Only
// the first try is starved: the next one's QEMU starts after the first
// try's console is renamed.
func starve(ctx context.Context, resultsDir string) string {
	var pid int
	for ctx.Err() == nil && pid == 0 {
		time.Sleep(20 * time.Millisecond)
		dirs, _ := filepath.Glob(filepath.Join(resultsDir, "*", "*", "boots", "01-*"))
		if len(dirs) > 0 {
			pid = runtest.QEMUOf(dirs[0])
		}
	}
	defer syscall.Kill(pid, syscall.SIGCONT)
	consoles, _ := filepath.Glob(filepath.Join(resultsDir, "*", "*", "boots", "01-*", "console.log"))
	for stops := 0; ctx.Err() == nil; stops++ {
		if len(consoles) == 0 {
			consoles, _ = filepath.Glob(filepath.Join(resultsDir, "*", "*", "boots", "01-*", "console.log"))
		} else if data, _ := os.ReadFile(consoles[0]); bytes.Contains(data, []byte("APIC frequency too slow")) {
			return fmt.Sprintf("the guest turned its APIC timer off after %d stops", stops)
		} else if bytes.Contains(data, []byte("lab-agent: started")) {
			return fmt.Sprintf("the agent started after %d stops, the calibration unharmed", stops)
		}
		if syscall.Kill(pid, syscall.SIGSTOP) != nil {
			return "QEMU went away"
		}
		time.Sleep(120 * time.Millisecond)
		syscall.Kill(pid, syscall.SIGCONT)
		time.Sleep(3 * time.Millisecond)
	}
	return "stopped: " + ctx.Err().Error()
}

// A QEMU that cannot start (here: its kernel is gone) is an infrastructure
// failure, not the kernel's.
func TestFaultQEMUCannotStart(t *testing.T) {
	e2e(t)
	_, initrd := runtest.BuiltKernel(t)
	cfg := runtest.BootConfig(t, filepath.Join(t.TempDir(), "no-such-bzImage"), initrd, protocol.Job{Benchmarks: []string{"usermode-count"}, Producers: []int{1}, Samples: 1})
	_, err := vm.Boot(context.Background(), cfg, time.Minute, nil)
	var ie *vm.InfraError
	if !errors.As(err, &ie) || results.FailureKind(err) != results.FailInfra || results.KernelFault(results.FailureKind(err)) {
		t.Fatalf("err = %v (kind %s), want an infrastructure failure", err, results.FailureKind(err))
	}
	t.Log(err)
	runtest.NoQEMU(t, cfg)
}

// Results on a full disk: a clear error, and results.json, written
// atomically, is never left torn.
func TestFaultFullDisk(t *testing.T) {
	e2e(t)
	if os.Getuid() != 0 {
		t.Skip("mounting a small tmpfs needs root")
	}
	lab := runtest.SmallLab(t, "x86_64")
	// icount: its boots' records (with what held each still) fill the
	// 48 kB disk mid-run; the wall clock's smaller ones fit.
	runtest.OneCPU(t, lab, spec.MeasureICount)
	runtest.BuiltKernel(t) // the kernels are cached: the run goes straight to its boots
	tiny := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=48k", "lab-test-full", tiny).CombinedOutput(); err != nil {
		t.Skipf("mount tmpfs: %v %s", err, out)
	}
	defer exec.Command("umount", "-l", tiny).Run()
	res, dir, err, out := runQuiet(t, context.Background(), run.Options{Lab: lab, ResultsDir: tiny, Parallel: 1})
	if err == nil || !strings.Contains(err.Error(), "no space left") {
		t.Errorf("err = %v, want a clear \"no space left\" error\n%s", err, out)
	}
	t.Logf("error: %v", err)
	if res != nil && dir != "" {
		if data, rerr := os.ReadFile(filepath.Join(dir, "results.json")); rerr == nil {
			var r results.Run
			if jerr := json.Unmarshal(data, &r); jerr != nil {
				t.Errorf("results.json torn on a full disk: %v", jerr)
			}
		}
	}
	noQEMUIn(t, tiny)
}

// A cached kernel whose image was truncated is detected and rebuilt, and
// the run boots the rebuilt one. The kernel damaged is this test's own (a
// series of one comment), never one the suite shares: other packages boot
// the shared ones at the same time, and would find them gone.
func TestFaultDamagedCacheEntry(t *testing.T) {
	e2e(t)
	lab := faultLab(t, "damaged-entry", testenv.Edit{
		Subject: "uprobes: a kernel of this test's own", File: "kernel/events/uprobes.c",
		Change: func(s string) string { return s + "\n/* lab test: TestFaultDamagedCacheEntry's own kernel */\n" },
	}, spec.MeasureWall)
	res, _, err, out := runQuiet(t, context.Background(), run.Options{Lab: lab, Only: variant.Patched, BuildOnly: true})
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	k, err := (&run.Artifacts{Kernels: res.Kernels}).Kernel("x86_64", variant.Patched)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(k.Info.Image, 4096); err != nil {
		t.Fatal(err)
	}
	res, _, err, out = runQuiet(t, context.Background(), run.Options{Lab: lab, Only: variant.Patched, Parallel: 1})
	if err != nil {
		t.Fatalf("after damaging the cache: %v\n%s", err, out)
	}
	again, _ := (&run.Artifacts{Kernels: res.Kernels}).Kernel("x86_64", variant.Patched)
	if again.Cached || again.Info.Key != k.Info.Key || !res.Boots[0].OK() {
		t.Errorf("the damaged kernel was reused (cached %v) or not rebuilt under its key\n%s", again.Cached, out)
	}
}

// A series that changes no code (a comment at the end of a file) builds
// the baseline's image: lab run says so and boots nothing, and the record
// keeps both kernels and the note.
func TestRunSeriesWithoutCode(t *testing.T) {
	e2e(t)
	lab := faultLab(t, "no-code", testenv.Edit{
		Subject: "uprobes: a comment and nothing else", File: "kernel/events/uprobes.c",
		Change: func(s string) string { return s + "\n/* lab test: TestRunSeriesWithoutCode's comment */\n" },
	}, spec.MeasureICount)
	res, dir, err, out := runQuiet(t, context.Background(), run.Options{Lab: lab, Parallel: 1})
	var same *run.SameImageError
	if !errors.As(err, &same) || res == nil || len(res.Boots) != 0 || len(res.Kernels) != 2 {
		t.Fatalf("err %v; want no code change, no boots, 2 kernels\n%s", err, out)
	}
	if res.Kernels[0].Info.ImageSHA256 != res.Kernels[1].Info.ImageSHA256 || !res.Complete {
		t.Errorf("kernels %+v, complete %v", res.Kernels, res.Complete)
	}
	saved, err := results.Load(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(saved.Notes) != 1 || !strings.Contains(saved.Notes[0], "one image (sha256 "+res.Kernels[0].Info.ImageSHA256+")") {
		t.Errorf("saved notes %q", saved.Notes)
	}
	if _, err := os.Stat(filepath.Join(dir, "boots")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the run made a boot folder: %v", err)
	}
}

// Two runs of different labs, and two of the same lab, at once on one
// cache (three runs: srcu twice, lazy once): all finish, each with its own
// folder and figures. Each boots its patched kernel: what is shared is the
// cache, the source tree and the results folder, not the boots.
func TestFaultConcurrentRuns(t *testing.T) {
	e2e(t)
	srcu := runtest.SmallLab(t, "x86_64")
	runtest.OneCPU(t, srcu, spec.MeasureWall)
	lazy, err := spec.Load(filepath.Join(runtest.Root(t), "labs", "uprobe-lazy-buffer.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	lazy.Matrix.Benchmarks, lazy.Matrix.Boots = []string{"uprobe-nop"}, 1
	lazy.Matrix.Duration.Duration, lazy.Matrix.Warmup.Duration = time.Second, 0
	lazy.Matrix.Controls, lazy.Matrix.Measure = srcu.Matrix.Controls, srcu.Matrix.Measure
	for _, l := range []*spec.Lab{srcu, lazy} {
		if err := l.Validate(); err != nil {
			t.Fatal(err)
		}
	}
	shared := t.TempDir()
	var wg sync.WaitGroup
	errs := make([]error, 3)
	dirs := make([]string, 3)
	for i, l := range []*spec.Lab{srcu, srcu, lazy} {
		wg.Add(1)
		go func(i int, l *spec.Lab) {
			defer wg.Done()
			var res *results.Run
			var out string
			res, dirs[i], errs[i], out = runQuiet(t, context.Background(), run.Options{Lab: l, ResultsDir: shared, Parallel: 1, Only: variant.Patched})
			if errs[i] == nil && (res == nil || len(res.Boots) != 1 || !res.Complete) {
				errs[i] = fmt.Errorf("incomplete run\n%s", out)
			}
		}(i, l)
	}
	wg.Wait()
	seen := map[string]bool{}
	for i, err := range errs {
		if err != nil {
			t.Errorf("run %d: %v", i, err)
		}
		if seen[dirs[i]] {
			t.Errorf("two runs share %s", dirs[i])
		}
		seen[dirs[i]] = true
	}
}

// A series that does not compile: the error names the compiler's file and
// line, and the patch that touched that file.
func TestFaultSeriesDoesNotCompile(t *testing.T) {
	e2e(t)
	lab := faultLab(t, "fault-broken", testenv.Edit{Subject: "uprobes: a declaration that does not compile", File: "kernel/events/uprobes.c",
		Change: func(s string) string { return s + "\nint lab_fault_broken = ;\n" }}, "icount")
	_, _, err, out := runQuiet(t, context.Background(), run.Options{Lab: lab, Parallel: 1})
	if err == nil {
		t.Fatalf("a series that does not compile ran\n%s", out)
	}
	first := firstLine(err.Error())
	if !strings.Contains(first, "kernel/events/uprobes.c:") || !strings.Contains(first, "error:") || !strings.Contains(first, "touched by 0001-uprobes-a-declaration-that-does-not-compile.patch") {
		t.Errorf("first line of the error: %q\nwant the compiler's file:line and the patch", first)
	}
	t.Log(first)
}
