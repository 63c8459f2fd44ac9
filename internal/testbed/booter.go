package testbed

import (
	"context"
	"errors"
	"fmt"
	"lab/initramfs/protocol"
	"lab/internal/benchmark"
	"lab/internal/kbuild"
	"lab/internal/results"
	"lab/internal/runfolder"
	"lab/internal/topology"
	"lab/internal/variant"
	"lab/internal/vm"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// Booter boots kernels into a run's folder and checks what each boot
// delivered: the guest's shape, and the console lines the lab expects.
type Booter struct {
	Dir string // the run folder: boots/NN-.../ go here
	// QMP is the QMP socket's path (short: sun_path has 108 bytes); ""
	// makes one in a temporary folder for each boot.
	QMP           string
	Boot          func(ctx context.Context, c vm.Config, deadline time.Duration, progress func(string)) (*vm.Outcome, error)
	ConsoleExpect []string
	Logf          func(format string, args ...any)
	// Results, when set, hears how many benchmark results the boot has
	// delivered so far.
	Results func(n int)
	// Seed is an icount boot's random seed (0 is 1): the k-th boot of a
	// kernel is given seed k.
	Seed int
	// Plugin is lab's instruction profile plugin (insnprof.Plugin) to
	// load, "" for none: its counts go to the boot folder's insncount.txt.
	Plugin string
	// StackHz, when set, has the agent sample kernel stacks at this rate
	// in one more sample of each benchmark (protocol.Job.StackHz): the
	// sampled profile of a boot that no instruction counter sees.
	StackHz int
}

// Run boots kernel with plan p as boot number idx, into a folder named
// after idx and name (the variant, or a bisect's step). The returned Boot
// is filled in as far as the boot got; the error is a *vm.BootError when
// the guest showed what went wrong (results.FailureKind says whether the
// kernel is at fault).
func (bt Booter) Run(ctx context.Context, p ShapePlan, kernel results.Kernel, initrd string, v variant.Variant, idx int, name, label string) (results.Boot, error) {
	if bt.QMP == "" {
		dir, err := os.MkdirTemp("", "lab-qmp-")
		if err != nil {
			return results.Boot{Index: idx, Variant: v}, &vm.InfraError{Reason: "make the QMP socket's folder", Err: err}
		}
		defer os.RemoveAll(dir)
		bt.QMP = filepath.Join(dir, "qmp.sock")
	}
	shape := p.Shape
	hostTopo := p.HostTopology
	rel := runfolder.Boot(idx, p.Arch.Name, p.Tag(), pathSafe(name))
	if bt.StackHz > 0 {
		p.Job.StackHz = bt.StackHz
	}
	b := results.Boot{
		Index: idx, Arch: p.Arch.Name, CPUs: shape.CPUs, Variant: v, Accel: recordAccel(p.Accel), Clock: p.Clock,
		Console: filepath.Join(rel, "console.log"), Job: p.Job,
		Shape: &shape, HostTopology: &hostTopo, Caveats: p.Caveats, Pinning: p.PinNote,
	}
	cfg := vm.Config{
		LPJ: p.LPJ(kbuild.HZ(kernel.Info.Config)), TSCkHz: p.TSCkHz, Oversubscribed: p.Oversubscribed, SingleThread: p.SingleThread,
		Arch: p.Arch, Kernel: kernel.Info.Image, Initrd: initrd, Shape: shape,
		Accel: p.Accel, Clock: p.Clock, Job: p.Job, Dir: filepath.Join(bt.Dir, rel),
		QMPPath: bt.QMP, Pin: p.Pin, Quiet: p.Quiet, Verbose: len(bt.ConsoleExpect) > 0,
		Firmware: p.Firmware,
	}
	if p.Clock == results.ClockICount {
		b.Seed, cfg.Seed = max(bt.Seed, 1), max(bt.Seed, 1)
	}
	if bt.Plugin != "" {
		cfg.Plugin, cfg.PluginOut = bt.Plugin, cfg.PluginPath()
	}
	if bt.Results != nil {
		// Records are a hello, one per benchmark result, then done.
		want := ExpectedResults(p.Job)
		cfg.Records = func(n int) { bt.Results(min(max(n-1, 0), want)) }
	}
	bt.Logf("%s (deadline %s to boot, then %s per record)", label, p.BootDeadline.Round(time.Second), p.Quiet.Round(time.Second))
	out, retried, err := bt.boot(ctx, cfg, p.BootDeadline, label)
	b.Outcome, b.Retried = recordOutcome(out), retried
	if out != nil {
		for i, rec := range out.Records {
			switch rec.Type {
			case protocol.TypeHello:
				b.Hello = rec.Hello
			case protocol.TypeResult:
				res := *rec.Result
				res.VCPUHostShare = out.VCPUShare(i)
				b.Results = append(b.Results, res)
			}
		}
	}
	if err != nil {
		return b, err
	}
	if err := checkGuest(b.Hello, out, shape); err != nil {
		return b, &vm.BootError{Kind: results.FailShape, Reason: err.Error()}
	}
	if err := expectConsole(filepath.Join(bt.Dir, b.Console), bt.ConsoleExpect); err != nil {
		return b, err
	}
	return b, nil
}

// starvedTries is how many times in all a boot is tried while the host
// starves its guest's boot-time calibration (results.FailStarved): that
// says nothing of the kernel, and a loaded host's stall passes.
const starvedTries = 3

// boot runs one boot, again when the host starved the guest's calibration.
// Each discarded try's console stays in the boot's folder as
// console.tryN.log, and retried says why each was discarded.
func (bt Booter) boot(ctx context.Context, cfg vm.Config, deadline time.Duration, label string) (out *vm.Outcome, retried []string, err error) {
	for try := 1; ; try++ {
		out, err = bt.Boot(ctx, cfg, deadline, func(s string) { bt.Logf("%s: %s", label, s) })
		var be *vm.BootError
		if try == starvedTries || !errors.As(err, &be) || be.Kind != results.FailStarved {
			return out, retried, err
		}
		kept := fmt.Sprintf("console.try%d.log", try)
		if os.Rename(cfg.ConsoleLog(), filepath.Join(cfg.Dir, kept)) != nil {
			return out, retried, err // the next try would overwrite the evidence
		}
		retried = append(retried, fmt.Sprintf("try %d of %d: %s; its console is %s", try, starvedTries, be.Reason, kept))
		bt.Logf("%s: booting again: %s", label, be.Reason)
	}
}

// pathSafe keeps a label usable as a file name.
func pathSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '_'
	}, s)
}

// checkGuest compares the machine QEMU built (QMP) and the one the guest
// kernel found (the agent's hello) with the shape asked for.
func checkGuest(hello *protocol.Hello, out *vm.Outcome, shape topology.Shape) error {
	if hello == nil {
		return fmt.Errorf("the agent never said hello")
	}
	var cpus []topology.QMPCPU
	var memdevs []topology.Memdev
	if out != nil {
		cpus, memdevs = out.QMPCPUs(), out.Memdevs
	}
	return topology.Verify(shape, cpus, memdevs, hello)
}

// expectConsole fails a boot whose console lacks a line the lab expects
// (e.g. a KUnit suite's "ok" line).
func expectConsole(log string, expect []string) error {
	if len(expect) == 0 {
		return nil
	}
	data, err := os.ReadFile(log)
	if err != nil {
		return &vm.InfraError{Reason: "read the console log", Err: err}
	}
	for _, e := range expect {
		re, err := regexp.Compile(e)
		if err != nil {
			return err
		}
		if !re.Match(data) {
			return &vm.BootError{Kind: results.FailExpect, Reason: fmt.Sprintf("the console never showed %q (console_expect): see %s", e, log)}
		}
	}
	return nil
}

// ExpectedResults is how many results a boot of job sends: one per
// benchmark and producer count, and one more per guest tool that measures
// the benchmark too (bench: those with an upstream name).
func ExpectedResults(job protocol.Job) int {
	n := 0
	for _, name := range job.Benchmarks {
		per := 1
		if b, ok := benchmark.Lookup(name); ok && b.Upstream != "" {
			per += len(job.Tools)
		}
		n += per * len(job.Producers)
	}
	return n
}
