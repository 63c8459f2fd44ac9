package run

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"lab/initramfs/protocol"
	"lab/internal/kbuild"
	"lab/internal/results"
	"lab/internal/runfolder"
	"lab/internal/shard"
	"lab/internal/topology"
	"lab/internal/variant"
	"lab/internal/vm"
	"lab/internal/workpool"
)

// measure boots every slot, shape after shape, saving results.json after
// each boot. Within a shape whose plan allows it (icount: a boot's figures
// are guest instructions, so guests side by side do not move them), up to
// Parallel boots run at once; results keep the slots' order. It returns the
// number of failed boots: a failed boot does not stop the run, an
// interruption does.
func (r *Runner) measure(ctx context.Context, plans []ShapePlan, slots []shard.Slot, art *Artifacts) (int, error) {
	qmpDir, err := os.MkdirTemp("", "lab-qmp-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(qmpDir)
	failed := 0
	for start := 0; start < len(slots); {
		end := start
		for end < len(slots) && slots[end].Shape == slots[start].Shape {
			end++
		}
		p := plans[slots[start].Shape]
		r.logf("%s, %s: %s (%s), %s clock; %s; %d boot(s) at a time", p.Arch.Name, p.Shape, strings.ToUpper(p.Accel.Name), p.Accel.Reason, p.Clock, p.PinNote, max(p.Parallel, 1))
		for _, c := range p.Caveats {
			r.logf("caveat: %s", c)
		}
		n, err := r.measureShape(ctx, p, slots, start, end, art, qmpDir)
		failed += n
		if err != nil {
			return failed, err
		}
		start = end
	}
	return failed, nil
}

// measureShape boots slots[start:end], all of one plan, up to p.Parallel at
// a time. Boot numbers follow the slots, whatever order boots finish in.
// Ctrl-C starts no new boot and collects the running ones; a results.json
// that cannot be saved ends the batch.
func (r *Runner) measureShape(ctx context.Context, p ShapePlan, slots []shard.Slot, start, end int, art *Artifacts, qmpDir string) (int, error) {
	var (
		mu          sync.Mutex // one finished boot recorded at a time
		failed      int
		interrupted string
	)
	errs, stop := workpool.Run(ctx, end-start, p.Parallel, func(ctx context.Context, i int) error {
		if ctx.Err() != nil {
			return nil // Ctrl-C: no new boot
		}
		n := start + i
		sl := slots[n]
		label := fmt.Sprintf("boot %d/%d %s %s %s", n+1, len(slots), p.Arch.Name, p.Tag(), sl.Variant)
		qmp := filepath.Join(qmpDir, fmt.Sprintf("qmp-%d.sock", sl.Index))
		b, err := r.boot(ctx, p, sl.Variant, art, sl.Index, qmp, label)
		b.Round = sl.Round
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			b.Fail(err)
			failed++
		}
		r.run.Boots = append(r.run.Boots, b)
		sort.SliceStable(r.run.Boots, func(i, j int) bool { return r.run.Boots[i].Index < r.run.Boots[j].Index })
		if serr := r.save(); serr != nil {
			return serr
		}
		switch {
		case ctx.Err() != nil:
			interrupted = label
			r.logf("%s: interrupted", label)
		case err != nil:
			r.logf("%s FAILED (%s): %v", label, b.Failure.Kind, err)
		default:
			r.logf("%s: %s in %.1fs (agent up after %.1fs)", label, summary(b), b.Outcome.Wall.Seconds(), b.Outcome.ToAgent.Seconds())
		}
		return nil
	}, func(error) bool { return true })
	if stop >= 0 {
		return failed, errs[stop]
	}
	if ctx.Err() != nil {
		return failed, fmt.Errorf("interrupted during %s: %w", interrupted, ctx.Err())
	}
	return failed, nil
}

// boot runs one guest of plan p with variant v's kernel.
func (r *Runner) boot(ctx context.Context, p ShapePlan, v variant.Variant, art *Artifacts, idx int, qmp, label string) (results.Boot, error) {
	kernel, err := art.Kernel(p.Arch.Name, v)
	if err != nil {
		return results.Boot{Index: idx, Variant: v}, err
	}
	initrd, err := art.Initrd(p.Arch.Name)
	if err != nil {
		return results.Boot{Index: idx, Variant: v}, err
	}
	b := Booter{Dir: r.dir, QMP: qmp, Boot: r.env.Boot, ConsoleExpect: r.lab.ConsoleExpect, Logf: r.logf,
		Results: func(n int) { r.received(idx, n) }}
	return b.Run(ctx, p, kernel, initrd, v, idx, string(v), label)
}

// Booter boots kernels into a run's folder and checks what each boot
// delivered: the guest's shape, and the console lines the lab expects.
type Booter struct {
	Dir           string // the run folder: boots/NN-.../ go here
	QMP           string // QMP socket path (short: sun_path has 108 bytes)
	Boot          func(ctx context.Context, c vm.Config, deadline time.Duration, progress func(string)) (*vm.Outcome, error)
	ConsoleExpect []string
	Logf          func(format string, args ...any)
	// Results, when set, hears how many benchmark results the boot has
	// delivered so far.
	Results func(n int)
}

// Run boots kernel with plan p as boot number idx, into a folder named
// after idx and name (the variant, or a bisect's step). The returned Boot
// is filled in as far as the boot got; the error is a *vm.BootError when
// the kernel is at fault.
func (bt Booter) Run(ctx context.Context, p ShapePlan, kernel results.Kernel, initrd string, v variant.Variant, idx int, name, label string) (results.Boot, error) {
	shape := p.Shape
	hostTopo := p.HostTopology
	rel := runfolder.Boot(idx, p.Arch.Name, p.Tag(), pathSafe(name))
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
	if bt.Results != nil {
		// Records are a hello, one per benchmark result, then done.
		want := expectedResults(p.Job)
		cfg.Records = func(n int) { bt.Results(min(max(n-1, 0), want)) }
	}
	bt.Logf("%s (deadline %s to boot, then %s per record)", label, p.BootDeadline.Round(time.Second), p.Quiet.Round(time.Second))
	out, err := bt.Boot(ctx, cfg, p.BootDeadline, func(s string) { bt.Logf("%s: %s", label, s) })
	b.Outcome = recordOutcome(out)
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
