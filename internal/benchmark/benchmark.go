// Package benchmark is the table of lab's guest benchmarks: what each one
// attaches, what its producers call, whether it is a control, where it
// cannot run. The lab validator, the guest agent's dispatch and the
// documentation (`lab benchmarks`) all read this one table.
package benchmark

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// Kind is what a benchmark attaches before its producers start.
type Kind string

// Kinds, named after what the kernel's bench attaches (trig-*).
const (
	Count            Kind = "count"             // nothing: the loop alone, counted in user space
	Uprobe           Kind = "uprobe"            // BPF uprobe on a user-space target
	Uretprobe        Kind = "uretprobe"         // BPF uretprobe
	UprobeMulti      Kind = "uprobe-multi"      // BPF uprobe_multi link
	UretprobeMulti   Kind = "uretprobe-multi"   // BPF uretprobe_multi link
	Kprobe           Kind = "kprobe"            // BPF kprobe on a syscall entry
	Kretprobe        Kind = "kretprobe"         // BPF kretprobe
	KprobeMulti      Kind = "kprobe-multi"      // BPF kprobe_multi link (fprobe)
	KretprobeMulti   Kind = "kretprobe-multi"   // BPF kretprobe_multi link
	TracefsKretprobe Kind = "tracefs-kretprobe" // a tracefs "r" event, no BPF
	Workload         Kind = "workload"          // a guest program run to a fixed amount of work
)

// Loops: what each producer calls in its tight loop. nop, push and ret are
// functions of the producer program in initramfs/targets (their first
// instruction is the one named); getpgid and flock are syscalls.
const (
	LoopNop     = "nop"
	LoopPush    = "push"
	LoopRet     = "ret"
	LoopGetpgid = "getpgid"
	LoopFlock   = "flock"
)

// SyscallLoop reports whether loop is a syscall, whose entry kernel probes
// attach to, rather than a user-space target.
func SyscallLoop(loop string) bool { return loop == LoopGetpgid || loop == LoopFlock }

// Benchmark is one row of the table.
type Benchmark struct {
	Name string
	Kind Kind
	// Loop is what the producers call; kprobe kinds attach to its
	// syscall's entry, uprobe kinds to its target.
	Loop string
	// Control: no kernel series should move it, so every boot runs it to
	// show host drift.
	Control bool
	// Upstream is the name of the same benchmark in the kernel's
	// tools/testing/selftests/bpf/bench, "" when it has none.
	Upstream string
	// UpstreamDiffers says how the kernel's bench runs the benchmark of
	// that name differently, when it does: its rate is then not the
	// agent's, and an agent ÷ bench ratio far from 1 is expected.
	UpstreamDiffers string
	// Unsupported says, per arch, why the benchmark cannot run there; what
	// the guest finds out only at run time it reports itself.
	Unsupported map[string]string
	About       string
	// Program is a workload's guest program (Kind Workload).
	Program *Program
	// Limits says what the figure cannot show under TCG, where it is a
	// path length.
	Limits string
	// ICountFloorPct is the least change of its figure lab calls one under
	// icount, where the benchmark needs more than the table's: a workload
	// of several processes takes another path when a change anywhere moves
	// how they interleave (docs/workloads.md).
	ICountFloorPct float64
}

// ICountFloorPct is the named benchmark's own least icount floor, 0 when
// the table's holds for it.
func ICountFloorPct(name string) float64 {
	b, _ := Lookup(name)
	return b.ICountFloorPct
}

// Program is a workload's guest program: a binary of a Debian package,
// copied with the shared libraries it needs into the initramfs, run with
// Args to a fixed amount of work while the agent reads the instruction
// clock (the wall clock under KVM), its operations then read by Metric.
// It is data: the agent runs any row the same way.
type Program struct {
	Package string // the Debian package that ships it
	Path    string // where, on the host and in the guest
	// Args are its arguments; "{p}" is the number of instances (the
	// lab's producers).
	Args []string
	// Metric is how its operations are read (MetricStressNG), from
	// Output: the file it writes them to, its standard output when "".
	Metric string
	Output string
}

// MetricStressNG reads the bogo-ops of every stressor from the YAML file
// stress-ng writes with --yaml StressNGYAML.
const (
	MetricStressNG = "stress-ng-yaml"
	StressNGYAML   = "/tmp/lab-stress-ng.yaml"
)

// Argv is the program's command line at p instances.
func (p Program) Argv(instances int) []string {
	argv := []string{p.Path}
	for _, a := range p.Args {
		argv = append(argv, strings.ReplaceAll(a, "{p}", fmt.Sprint(instances)))
	}
	return argv
}

// stressNG is a stress-ng stressor run to ops bogo operations per
// instance, with the seed of its random numbers fixed, so that under
// icount each run of an image does the same work.
func stressNG(stressor string, ops int, extra ...string) *Program {
	args := []string{"--" + stressor, "{p}", fmt.Sprintf("--%s-ops", stressor), fmt.Sprint(ops)}
	args = append(args, extra...)
	args = append(args, "--no-rand-seed", "--metrics-brief", "--yaml", StressNGYAML)
	return &Program{Package: "stress-ng", Path: "/usr/bin/stress-ng", Args: args, Metric: MetricStressNG, Output: StressNGYAML}
}

// pathLength is what a workload's figure is under TCG's icount.
const pathLength = "under TCG a path length (operations per 10^9 instructions): not cache misses, TLB reach or lock contention"

const noRethook = "needs CONFIG_FPROBE, which needs HAVE_RETHOOK, which arm64 lacks in 6.12"

// batched is how bench (since Linux 6.10) drives its kernel-probe benchmarks.
const batched = "bench (Linux 6.10 and later) fires the probe 100 times per syscall: a BPF program run by " +
	"BPF_PROG_TEST_RUN calls bpf_get_numa_node_id, the probed function, in a loop; the agent fires it once per " +
	"getpgid syscall, as bench did before, so its rate includes a syscall per hit"

var table = []Benchmark{
	{Name: "usermode-count", Kind: Count, Loop: LoopNop, Control: true, Upstream: "trig-usermode-count",
		About: "the nop target called from user space: the host's speed, no kernel at all"},
	{Name: "syscall-count", Kind: Count, Loop: LoopGetpgid, Control: true, Upstream: "trig-syscall-count",
		About: "getpgid() in a loop, no probe: the syscall path"},
	{Name: "uprobe-nop", Kind: Uprobe, Loop: LoopNop, Upstream: "trig-uprobe-nop", About: "uprobe on a nop"},
	{Name: "uprobe-push", Kind: Uprobe, Loop: LoopPush, Upstream: "trig-uprobe-push", About: "uprobe on a frame-pointer push"},
	{Name: "uprobe-ret", Kind: Uprobe, Loop: LoopRet, Upstream: "trig-uprobe-ret", About: "uprobe on a ret"},
	{Name: "uretprobe-nop", Kind: Uretprobe, Loop: LoopNop, Upstream: "trig-uretprobe-nop", About: "uretprobe on a nop function"},
	{Name: "uretprobe-push", Kind: Uretprobe, Loop: LoopPush, Upstream: "trig-uretprobe-push", About: "uretprobe on a push function"},
	{Name: "uretprobe-ret", Kind: Uretprobe, Loop: LoopRet, Upstream: "trig-uretprobe-ret", About: "uretprobe on a ret function"},
	{Name: "uprobe-multi-nop", Kind: UprobeMulti, Loop: LoopNop, Upstream: "trig-uprobe-multi-nop", About: "uprobe_multi link on a nop"},
	{Name: "uprobe-multi-push", Kind: UprobeMulti, Loop: LoopPush, Upstream: "trig-uprobe-multi-push", About: "uprobe_multi link on a push"},
	{Name: "uprobe-multi-ret", Kind: UprobeMulti, Loop: LoopRet, Upstream: "trig-uprobe-multi-ret", About: "uprobe_multi link on a ret"},
	{Name: "uretprobe-multi-nop", Kind: UretprobeMulti, Loop: LoopNop, Upstream: "trig-uretprobe-multi-nop", About: "uretprobe_multi link on a nop function"},
	{Name: "uretprobe-multi-push", Kind: UretprobeMulti, Loop: LoopPush, Upstream: "trig-uretprobe-multi-push", About: "uretprobe_multi link on a push function"},
	{Name: "uretprobe-multi-ret", Kind: UretprobeMulti, Loop: LoopRet, Upstream: "trig-uretprobe-multi-ret", About: "uretprobe_multi link on a ret function"},
	{Name: "kprobe", Kind: Kprobe, Loop: LoopGetpgid, Upstream: "trig-kprobe", UpstreamDiffers: batched, About: "kprobe on getpgid's entry"},
	{Name: "kretprobe", Kind: Kretprobe, Loop: LoopGetpgid, Upstream: "trig-kretprobe", UpstreamDiffers: batched, About: "kretprobe on getpgid's entry"},
	{Name: "kprobe-multi", Kind: KprobeMulti, Loop: LoopGetpgid, Upstream: "trig-kprobe-multi", UpstreamDiffers: batched,
		Unsupported: map[string]string{"arm64": noRethook}, About: "kprobe_multi link on getpgid's entry"},
	{Name: "kretprobe-multi", Kind: KretprobeMulti, Loop: LoopGetpgid, Upstream: "trig-kretprobe-multi", UpstreamDiffers: batched,
		Unsupported: map[string]string{"arm64": noRethook}, About: "kretprobe_multi link on getpgid's entry"},
	{Name: "kretprobe-flock", Kind: Kretprobe, Loop: LoopFlock,
		About: "kretprobe on flock's entry, flock(0x7878, 0x8787) failing fast with EBADF: the objpool series' loop"},
	{Name: "kretprobe-flock-tracefs", Kind: TracefsKretprobe, Loop: LoopFlock,
		About: "a tracefs r event on flock with the lab's maxactive, kprobe_profile's hits and misses recorded"},
	// The floors are 3 × the spread (CV) of one image's figure over 8
	// seeds, one boot each (TestWorkloadSeeds, docs/workloads.md): mmap
	// 0.21 %, futex 1.5 %, pipe 0.18 %.
	{Name: "stress-mmap", Kind: Workload, Program: stressNG("mmap", 24, "--mmap-bytes", "64K"),
		Limits: pathLength, ICountFloorPct: 0.7,
		About: "stress-ng's mmap stressor: map 64 KiB anonymous, fault every page in, check, unmap (mm/memory.c, mm/mmap.c, mm/page_alloc.c)"},
	{Name: "stress-futex", Kind: Workload, Program: stressNG("futex", 4000),
		Limits: pathLength, ICountFloorPct: 5,
		About: "stress-ng's futex stressor: a waiter and a waker on a shared futex (kernel/futex/)"},
	{Name: "stress-pipe", Kind: Workload, Program: stressNG("pipe", 4000),
		Limits: pathLength, ICountFloorPct: 0.6,
		About: "stress-ng's pipe stressor: a writer and a reader on a pipe, a wake-up and a switch each way (kernel/sched/, fs/pipe.c)"},
}

// All returns the table, in the order benchmarks are documented.
func All() []Benchmark { return append([]Benchmark(nil), table...) }

// Lookup finds a benchmark by name.
func Lookup(name string) (Benchmark, bool) {
	for _, b := range table {
		if b.Name == name {
			return b, true
		}
	}
	return Benchmark{}, false
}

// OpOf is what one of the named benchmark's figures counts: a probe's
// "hit", a workload's "operation" (its program's bogo-op).
func OpOf(name string) string {
	if b, _ := Lookup(name); b.Kind == Workload {
		return "operation"
	}
	return "hit"
}

// Names lists every benchmark's name.
func Names() []string {
	var out []string
	for _, b := range table {
		out = append(out, b.Name)
	}
	return out
}

// Controls lists the control benchmarks: every boot runs them.
func Controls() []string {
	var out []string
	for _, b := range table {
		if b.Control {
			out = append(out, b.Name)
		}
	}
	return out
}

// IsControl reports whether name is a control benchmark.
func IsControl(name string) bool {
	b, ok := Lookup(name)
	return ok && b.Control
}

// Probe reports whether the benchmark attaches a probe (and so also
// measures its loop probe-free first).
func (b Benchmark) Probe() bool { return b.Kind != Count && b.Kind != Workload }

// UnsupportedOn says why arch cannot run the benchmark, "" when it can.
func (b Benchmark) UnsupportedOn(arch string) string { return b.Unsupported[arch] }

// Check names an unknown benchmark with the known ones.
func Check(name string) error {
	if _, ok := Lookup(name); !ok {
		return fmt.Errorf("unknown benchmark %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	return nil
}

// Doc is the table as text, for `lab benchmarks` and the README.
func Doc() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-24s %-18s %-8s %-26s %s\n", "benchmark", "attaches", "loop", "upstream bench", "notes")
	for _, x := range table {
		up := x.Upstream
		if up == "" {
			up = "-"
		}
		if x.UpstreamDiffers != "" {
			up += "*"
		}
		var notes []string
		if x.Control {
			notes = append(notes, "control")
		}
		for _, a := range []string{"x86_64", "arm64"} {
			if why := x.Unsupported[a]; why != "" {
				notes = append(notes, "not on "+a)
			}
		}
		notes = append(notes, x.About)
		loop := x.Loop
		if x.Program != nil {
			loop = filepath.Base(x.Program.Path)
		}
		fmt.Fprintf(&b, "%-24s %-18s %-8s %-26s %s\n", x.Name, x.Kind, loop, up, strings.Join(notes, "; "))
	}
	footnotes := map[string]bool{}
	for _, x := range table {
		if x.UpstreamDiffers != "" && !footnotes[x.UpstreamDiffers] {
			footnotes[x.UpstreamDiffers] = true
			fmt.Fprintf(&b, "* %s\n", x.UpstreamDiffers)
		}
	}
	fmt.Fprintf(&b, "\nworkloads: a program from a Debian package, run to a fixed amount of work ({p}: the producers)\n")
	for _, x := range table {
		if x.Program != nil {
			fmt.Fprintf(&b, "%-24s %s (package %s)\n%-24s %s\n", x.Name, x.Program.Path+" "+strings.Join(x.Program.Args, " "),
				x.Program.Package, "", x.Limits)
		}
	}
	fmt.Fprintf(&b, "\nguest tools (a lab's tools:, or lab run --tools):\n")
	for _, t := range tools {
		fmt.Fprintf(&b, "%-24s %s\n", t.Name, t.About)
	}
	return b.String()
}

// Tool is a program a lab may put in the guest beside lab's agent.
type Tool struct {
	Name string
	// Label names the tool's rows in reports: "uprobe-nop (bench)".
	Label string
	// Fragment is the kernel config fragment (kernel-config/) the guest
	// kernel needs for the tool, added to the lab's own.
	Fragment string
	About    string
	// Resolution is the step of the rates the tool prints, in hits/s (0:
	// not rounded): a change smaller than one step is not seen.
	Resolution float64
	// MinWarmup is the least warm-up the tool runs with: a lab with less
	// is refused when it is read, not by the tool in every boot.
	MinWarmup time.Duration
}

// BPFBench is the kernel's own benchmark runner,
// tools/testing/selftests/bpf/bench, built from the lab's source tree: the
// agent runs it beside its own measurement of every benchmark that has an
// Upstream name.
const BPFBench = "bpf-bench"

var tools = []Tool{
	{Name: BPFBench, Label: "bench", Fragment: "bpf-bench.config",
		About: "the kernel's selftests bench (trig-* benchmarks), built static from the lab's source, run beside the agent",
		// It prints M/s to three decimals.
		Resolution: 1000,
		// "Invalid warm-up duration: 0" (bench.c's argument parser).
		MinWarmup: time.Second},
}

// Tools lists the guest tools.
func Tools() []Tool { return append([]Tool(nil), tools...) }

// ToolLabel is the label of a tool's rows, its name when it has none.
func ToolLabel(name string) string {
	if t, err := LookupTool(name); err == nil && t.Label != "" {
		return t.Label
	}
	return name
}

// LookupTool finds a guest tool by name.
func LookupTool(name string) (Tool, error) {
	var names []string
	for _, t := range tools {
		if t.Name == name {
			return t, nil
		}
		names = append(names, t.Name)
	}
	return Tool{}, fmt.Errorf("unknown tool %q (known: %s)", name, strings.Join(names, ", "))
}
