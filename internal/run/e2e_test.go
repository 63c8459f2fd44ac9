package run_test

// End-to-end tests: real kernels built from Debian's linux-source-6.12, real
// QEMU boots, real BPF uprobes in the guest. They share lab's kernel cache
// ($LAB_CACHE, default ~/.cache/lab), so only the first run on a machine
// compiles kernels. They run when LAB_E2E=1 is set, as ./scripts/test does;
// plain `go test ./...` is the fast suite.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"lab/initramfs/protocol"
	"lab/internal/arch"
	"lab/internal/gitcmd"
	"lab/internal/results"
	"lab/internal/run"
	"lab/internal/run/runtest"
	"lab/internal/series"
	"lab/internal/source"
	"lab/internal/spec"
	"lab/internal/testbed"
	"lab/internal/testenv"
	"lab/internal/variant"
	"lab/internal/vm"
)

func e2e(t *testing.T) { testenv.E2E(t, "builds and boots real kernels") }

// TestArch runs lab run's checks of one arch on x86_64 (see runtest.Arch);
// package arm64e2e runs them on arm64, beside this one.
func TestArch(t *testing.T) {
	e2e(t)
	runtest.Arch(t, "x86_64")
}

// A guest that panics (here: no init in the initramfs) ends its boot with an
// error quoting the console, and no QEMU is left behind, on each x86_64
// machine: q35 (a guest that calibrates its TSC) and microvm (one given its
// TSC rate, as lab's TCG plans do).
func TestBootPanicIsReported(t *testing.T) {
	e2e(t)
	kernel, _ := runtest.BuiltKernel(t)
	empty := filepath.Join(t.TempDir(), "empty.cpio")
	os.WriteFile(empty, nil, 0o644)
	khz, _ := vm.HostTSCkHz()
	for _, tc := range []struct {
		machine string
		tscKHz  int64
	}{{"q35", 0}, {"microvm", khz}} {
		t.Run(tc.machine, func(t *testing.T) {
			if tc.tscKHz == 0 && tc.machine == "microvm" {
				t.Skip("the host's TSC rate is unknown here: no TCG guest boots on microvm")
			}
			cfg := runtest.BootConfig(t, kernel, empty, protocol.Job{Benchmarks: []string{"uprobe-nop"}, Producers: []int{1}, DurationS: 1})
			cfg.TSCkHz = tc.tscKHz
			if got := cfg.Machine().Name(); got != tc.machine {
				t.Fatalf("the guest boots on %s, want %s", got, tc.machine)
			}
			_, err := vm.Boot(context.Background(), cfg, 2*time.Minute, nil)
			var be *vm.BootError
			if !errors.As(err, &be) || be.Kind != results.FailPanic || !strings.Contains(err.Error(), "Kernel panic") {
				t.Fatalf("err = %v", err)
			}
			runtest.NoQEMU(t, cfg)
		})
	}
}

// Pinning puts each vCPU thread on the host CPU of the plan, as the kernel
// reports it for QEMU's thread while the guest runs.
func TestBootPinsVCPUs(t *testing.T) {
	e2e(t)
	kernel, initrd := runtest.BuiltKernel(t)
	cfg := runtest.BootConfig(t, kernel, initrd, protocol.Job{Benchmarks: []string{"usermode-count"}, Producers: []int{1}, DurationS: 1})
	host := runtime.NumCPU() - 1 // the last host CPU
	cfg.Pin = []int{host}
	out, err := vm.Boot(context.Background(), cfg, 2*time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Pinned) != 1 || out.Pinned[0] != host || len(out.VCPUs) != 1 {
		t.Fatalf("pinned %v, vCPUs %+v", out.Pinned, out.VCPUs)
	}
	runtest.NoQEMU(t, cfg)
}

// A guest that runs past its deadline is stopped, with an error saying so.
func TestBootDeadline(t *testing.T) {
	e2e(t)
	kernel, initrd := runtest.BuiltKernel(t)
	cfg := runtest.BootConfig(t, kernel, initrd, protocol.Job{Benchmarks: []string{"uprobe-nop"}, Producers: []int{1}, DurationS: 600})
	start := time.Now()
	_, err := vm.Boot(context.Background(), cfg, 15*time.Second, nil)
	if err == nil || !strings.Contains(err.Error(), "deadline of 15s passed") || results.FailureKind(err) != results.FailHang {
		t.Fatalf("err = %v", err)
	}
	if time.Since(start) > 30*time.Second {
		t.Errorf("stopping took %v", time.Since(start))
	}
	runtest.NoQEMU(t, cfg)
}

// Cancelling (Ctrl-C) stops the guest at once and keeps what it sent.
func TestBootInterrupt(t *testing.T) {
	e2e(t)
	kernel, initrd := runtest.BuiltKernel(t)
	cfg := runtest.BootConfig(t, kernel, initrd, protocol.Job{Benchmarks: []string{"uprobe-nop"}, Producers: []int{1}, DurationS: 600})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		// Cancel once the agent has said hello.
		for ctx.Err() == nil {
			if fi, err := os.Stat(cfg.ResultsPath()); err == nil && fi.Size() > 0 {
				cancel()
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	out, err := vm.Boot(ctx, cfg, 5*time.Minute, nil)
	cancel()
	if !errors.Is(err, context.Canceled) || results.FailureKind(err) != results.FailInterrupt {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if out == nil || len(out.Records) == 0 || out.Records[0].Type != protocol.TypeHello {
		t.Errorf("records kept: %+v", out)
	}
	runtest.NoQEMU(t, cfg)
}

// A QEMU stopped by a signal from outside lab ends cleanly (exit 0): that
// is not the guest's doing. Alone, it is an infrastructure failure; with
// lab's own cancel just after (a scheduler's cancel signals both), an
// interruption, so that the boot is not recorded as the kernel's failure.
func TestBootQEMUSignalledFromOutside(t *testing.T) {
	e2e(t)
	kernel, initrd := runtest.BuiltKernel(t)
	for _, tc := range []struct {
		name       string
		labCancels bool
		want       string
	}{
		{"alone", false, results.FailInfra},
		{"with lab's cancel", true, results.FailInterrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := runtest.BootConfig(t, kernel, initrd, protocol.Job{Benchmarks: []string{"uprobe-nop"}, Producers: []int{1}, DurationS: 600})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				for ctx.Err() == nil {
					if fi, err := os.Stat(cfg.ResultsPath()); err == nil && fi.Size() > 0 {
						if pid := runtest.QEMUOf(cfg.ConsoleLog()); pid > 0 {
							syscall.Kill(pid, syscall.SIGTERM)
							if tc.labCancels {
								time.Sleep(500 * time.Millisecond)
								cancel()
							}
							return
						}
					}
					time.Sleep(100 * time.Millisecond)
				}
			}()
			_, err := vm.Boot(ctx, cfg, 5*time.Minute, nil)
			if got := results.FailureKind(err); got != tc.want {
				t.Errorf("failure %q (%v), want %q", got, err, tc.want)
			}
			runtest.NoQEMU(t, cfg)
		})
	}
}

// A user's own git tree: lab adds a worktree of it at the base ref and
// applies the series with git am. The lab-owned tree of Debian's tarball
// serves as the user's tree, based at the commit without the SRCU lookup, so
// applying the series must give back the file as Debian ships it.
func TestGitTreeSource(t *testing.T) {
	e2e(t)
	ctx := context.Background()
	lab := runtest.SmallLab(t, "x86_64")
	ser, err := series.Load(lab.SeriesPath())
	if err != nil {
		t.Fatal(err)
	}
	tarball, err := source.Prepare(ctx, source.Origin(lab.Source), runtest.CacheDir(t), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := tarball.Variants(ctx, ser, spec.ModeRevert)
	tarball.Close()
	if err != nil {
		t.Fatal(err)
	}
	user := source.Origin{Git: tarball.Dir, Base: rev.Baseline}
	tree, err := source.Prepare(ctx, user, t.TempDir(), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	if !regexp.MustCompile(`^6\.12\.[0-9]+$`).MatchString(tarball.Version) || tree.Version != tarball.Version || !strings.HasPrefix(tree.Desc, "git ") {
		t.Errorf("tree: version %q (tarball's %q), desc %q", tree.Version, tarball.Version, tree.Desc)
	}
	app, err := tree.Variants(ctx, ser, spec.ModeApply)
	if err != nil {
		t.Fatal(err)
	}
	if app.Baseline != rev.Baseline {
		t.Errorf("apply baseline %s, want the base ref %s", app.Baseline, rev.Baseline)
	}
	g := &gitcmd.Git{Dir: tree.Dir}
	blob := func(commit string) string {
		out, err := g.Output(ctx, "rev-parse", commit+":kernel/events/uprobes.c")
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if blob(app.Patched) != blob(rev.Patched) {
		t.Error("base + series differs from Debian's uprobes.c")
	}
	if blob(app.Baseline) == blob(app.Patched) {
		t.Error("the series changed nothing")
	}
	subject, _ := g.Output(ctx, "log", "-1", "--format=%s", app.Patched)
	if subject != ser.Patches[0].Subject {
		t.Errorf("git am commit subject %q, want %q", subject, ser.Patches[0].Subject)
	}

	// The git tree's first kernel starts from a copy of the tarball
	// tree's build folder (kbuild's seed), not cold, and is the same
	// image as the tarball tree's build of the same content. The test's
	// cache sees the shared cache's build folders (read only: they are
	// copied) and keeps its own kernels.
	a, _ := arch.Lookup("x86_64")
	if tarball, err = source.Prepare(ctx, source.Origin(lab.Source), runtest.CacheDir(t), t.Logf); err != nil {
		t.Fatal(err)
	}
	shared := &testbed.Kernels{Tree: tarball, CacheDir: runtest.CacheDir(t), Fragments: lab.Fragments("x86_64"), Logf: t.Logf}
	want, err := shared.Get(ctx, a, rev.Baseline, "tarball/baseline")
	if err != nil {
		t.Fatal(err)
	}
	sharedBuild := filepath.Join(runtest.CacheDir(t), "build", tarball.ID)
	if rec, _ := os.ReadFile(filepath.Join(sharedBuild, "x86_64-common+x86_64", ".lab-built.json")); !strings.Contains(string(rec), `"out"`) {
		// The folder is no seed: its last build failed (a fault test's
		// series that does not compile) or came before folders recorded
		// their builds. A build of this run's own there makes it one; the
		// tree stays locked until the seed is taken, so that no other
		// package's build comes between.
		logLine := testenv.CommitBranch(t, filepath.Join(tarball.Dir, ".git"), tarball.BaseHash, []testenv.Edit{{
			Subject: "init: a log line of TestGitTreeSource's", File: "init/main.c",
			Change: testenv.Replace("Run %s as init process", fmt.Sprintf("Run %%s as init process (git tree source test %d)", time.Now().UnixNano()))}})
		if _, err := shared.Get(ctx, a, logLine[0], "tarball/own"); err != nil {
			t.Fatal(err)
		}
		if err := tarball.Checkout(ctx, tarball.BaseHash); err != nil {
			t.Fatal(err)
		}
	}
	defer tarball.Close()
	ownCache := filepath.Dir(filepath.Dir(tree.Dir)) // the test's cache: src/<id> is the tree
	os.MkdirAll(filepath.Join(ownCache, "build"), 0o755)
	if err := os.Symlink(sharedBuild, filepath.Join(ownCache, "build", tarball.ID)); err != nil {
		t.Fatal(err)
	}
	own := &testbed.Kernels{Tree: tree, CacheDir: ownCache, Fragments: lab.Fragments("x86_64"), Logf: t.Logf}
	got, err := own.Get(ctx, a, app.Baseline, "git/baseline")
	if err != nil {
		t.Fatal(err)
	}
	// (The test's cache sees the shared folder through its own link.)
	if !strings.Contains(got.Info.Seeded, filepath.Join(ownCache, "build", tarball.ID)) || got.Info.Compiled > 200 {
		t.Errorf("the git tree's first kernel: seeded from %q, %d compiled: want a copy of %s and an incremental build",
			got.Info.Seeded, got.Info.Compiled, sharedBuild)
	}
	if got.Info.ImageSHA256 != want.Info.ImageSHA256 {
		t.Errorf("seeded build's image sha256 %s, the tarball tree's of the same content %s", got.Info.ImageSHA256, want.Info.ImageSHA256)
	}
}

// Under TCG with one vCPU lab measures on QEMU's instruction-count clock, so
// a rate is a path length and repeats from boot to boot. The SRCU lookup
// removes the rwlock from the uprobe hit path: about 11 instructions of
// about 950 per hit were measured for it on x86_64 (+1.2 %), so patched must
// come out ahead by a small, definite margin.
func TestICountSeesThePathLength(t *testing.T) {
	e2e(t)
	lab := runtest.SmallLab(t, "x86_64")
	lab.Matrix.CPUs, lab.Matrix.Producers = []int{1}, []int{1}
	if err := lab.Validate(); err != nil {
		t.Fatal(err)
	}
	res, _, out := runtest.Run(t, lab)
	t.Log(out)
	var rate variant.Pair[float64]
	for _, b := range res.Boots {
		if b.Clock != results.ClockICount || !b.OK() || len(b.Results) != 3 || b.Results[0].Benchmark != "uprobe-nop" {
			t.Fatalf("boot %d: clock %s, failure %+v, results %+v", b.Index, b.Clock, b.Failure, b.Results)
		}
		if !strings.Contains(strings.Join(b.Outcome.Args, " "), "-icount shift=0,sleep=off") {
			t.Errorf("boot %d did not run under icount: %v", b.Index, b.Outcome.Args)
		}
		rate.Set(b.Variant, protocol.Rate(b.Results[0].Samples)/1e9)
	}
	delta := rate.Patched/rate.Baseline - 1
	t.Logf("icount uprobe-nop: baseline %.6f, patched %.6f hits/ns: %+.2f %%", rate.Baseline, rate.Patched, delta*100)
	if delta < 0.003 || delta > 0.03 {
		t.Errorf("patched/baseline - 1 = %+.2f %%, want the SRCU lookup's +0.3..+3 %%", delta*100)
	}
}

// Under icount a figure is a count of guest instructions: every boot of
// one image must give the same figures, whether it runs alone or beside
// another, with no warm-up to hide its first second. Two boots of one
// kernel side by side, then one alone: each benchmark's figure, controls
// included, within 0.002 % from boot to boot (before vm.ICountFixes,
// uprobe-nop took two levels 0.06 % apart and the controls scattered by
// 0.005 %; 24 boots with a new random seed each now stay within 0.0003 %,
// docs/validation.md), and every boot records what held it still.
func TestICountOneImageOneFigure(t *testing.T) {
	e2e(t)
	lab := runtest.SmallLab(t, "x86_64")
	m := &lab.Matrix
	m.CPUs, m.Producers = []int{1}, []int{1}
	m.Benchmarks = []string{"uprobe-nop", "uretprobe-nop", "kretprobe"}
	m.Duration.Duration, m.Warmup.Duration = time.Second, 0
	runWith := func(boots, parallel int) *results.Run {
		t.Helper()
		m.Boots = boots
		if err := lab.Validate(); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		res, _, err := run.Run(context.Background(), run.Options{
			Lab: lab, CacheDir: runtest.CacheDir(t), ResultsDir: t.TempDir(), ModuleRoot: "../..",
			Command: []string{"go", "test"}, Out: &out, Parallel: parallel, Only: variant.Patched,
		})
		if err != nil {
			t.Fatalf("run --boots %d --parallel %d: %v\n%s", boots, parallel, err, out.String())
		}
		return res
	}
	boots := append(runWith(2, 2).Boots, runWith(1, 1).Boots...)
	figures := map[string][]float64{}
	var names []string
	for _, b := range boots {
		if !b.OK() || b.Clock != results.ClockICount {
			t.Fatalf("boot %d: clock %s, failure %+v", b.Index, b.Clock, b.Failure)
		}
		if b.Outcome == nil || len(b.Outcome.Deterministic) != 3 {
			t.Errorf("boot %d records no fixes that hold it still: %+v", b.Index, b.Outcome)
		}
		for _, r := range b.Results {
			if _, ok := figures[r.Benchmark]; !ok {
				names = append(names, r.Benchmark)
			}
			figures[r.Benchmark] = append(figures[r.Benchmark], protocol.Rate(r.Samples))
		}
	}
	if len(names) != 5 {
		t.Fatalf("benchmarks %v, want 3 and the two controls", names)
	}
	for _, name := range names {
		v := figures[name]
		lo, hi := slices.Min(v), slices.Max(v)
		spread := 100 * (hi - lo) / lo
		t.Logf("%s: %d boots, %.3f..%.3f hits/s, max-min %.6f %%", name, len(v), lo, hi, spread)
		if len(v) != 3 || lo <= 0 || spread > 0.002 {
			t.Errorf("%s: %d boots from %.3f to %.3f hits/s, max-min %.6f %%: want 3 boots within 0.002 %%", name, len(v), lo, hi, spread)
		}
	}
}
