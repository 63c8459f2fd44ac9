package spec

import (
	"errors"
	"flag"
	"fmt"

	"lab/internal/flagval"
	"lab/internal/topology"
)

// Flags are the command-line overrides of a lab file. RegisterFlags adds
// them to a flag set; Apply changes a lab by the flags that were given, and
// only by those: a flag set to 0 (--warmup 0) is a value, not "unset".
type Flags struct {
	Arch       flagval.Strings
	CPUs       flagval.Ints
	Producers  flagval.Ints
	Benchmarks flagval.Strings
	NUMA       flagval.Ints
	Boots      flagval.Int
	Duration   flagval.Duration
	Warmup     flagval.Duration
	Measure    flagval.String
	Memory     flagval.String
	Pin        flagval.String
	Sockets    flagval.Int
	Clusters   flagval.Int
	Cores      flagval.Int
	Threads    flagval.Int
	NoControls flagval.Bool
	Tools      flagval.Strings
	Mode       flagval.String
}

// RegisterFlags adds the lab overrides to fs.
func (f *Flags) RegisterFlags(fs *flag.FlagSet) {
	fs.Var(&f.Arch, "arch", "guest architectures, comma-separated (x86_64, arm64)")
	fs.Var(&f.CPUs, "cpus", "vCPU counts, comma-separated")
	fs.Var(&f.Producers, "producers", "producer counts, comma-separated")
	fs.Var(&f.Benchmarks, "benchmarks", "benchmarks, comma-separated (lab benchmarks lists them)")
	fs.Var(&f.Boots, "boots", "boots per kernel, on any clock (under icount each with its own seed; the default there is one: its figures are exact)")
	fs.Var(&f.Duration, "duration", "measured time per benchmark (one sample a second; under 1s, one sample that long), e.g. 5s or 500ms")
	fs.Var(&f.Warmup, "warmup", "warm-up time per benchmark, dropped (0: none)")
	fs.Var(&f.Measure, "measure", "clock: auto, wall or icount")
	fs.Var(&f.NoControls, "no-controls", "do not add the usermode-count and syscall-count controls to each boot")
	fs.Var(&f.NUMA, "numa", "NUMA node counts, comma-separated: each splits vCPUs and memory evenly (1: no NUMA)")
	fs.Var(&f.Sockets, "sockets", "sockets (default: one per NUMA node)")
	fs.Var(&f.Clusters, "clusters", "clusters per socket (arm64)")
	fs.Var(&f.Cores, "cores", "cores per cluster or socket (default: what the vCPUs need)")
	fs.Var(&f.Threads, "threads", "threads per core (default 1)")
	fs.Var(&f.Memory, "memory", "guest memory, e.g. 2G")
	fs.Var(&f.Pin, "pin", "pin vCPU threads to host CPUs: auto (when a host CPU is left over), on or off")
	fs.Var(&f.Mode, "mode", "which side the series is on: apply (the source lacks it), revert (the source has it) or auto (lab tries both)")
	fs.Var(&f.Tools, "tools", "guest tools that measure each benchmark again beside the agent, comma-separated (bpf-bench: the kernel's own bench)")
}

// Apply changes lab by the flags that were given, then validates it again.
func (f *Flags) Apply(lab *Lab) error {
	m := &lab.Matrix
	for _, c := range shapeCounts {
		if fl := c.flag(f); fl.IsSet() && fl.V < 1 {
			return &FlagError{Msg: countError(c.key, fl.V)}
		}
	}
	if f.Arch.IsSet() {
		m.Arch = f.Arch.V
	}
	if f.CPUs.IsSet() {
		m.CPUs = f.CPUs.V
		// Producer counts above the vCPUs cannot run: keep those every
		// shape can run, as a lab with clip_producers does per shape.
		if !m.ClipProducers && !f.Producers.IsSet() {
			clipped := *m
			clipped.ClipProducers = true
			m.Producers = clipped.ProducersFor(minInt(m.CPUs))
		}
	}
	if f.Producers.IsSet() {
		m.Producers = f.Producers.V
	}
	if f.Benchmarks.IsSet() {
		m.Benchmarks = f.Benchmarks.V
	}
	if f.NoControls.IsSet() && f.NoControls.V {
		off := false
		m.Controls = &off
	}
	if f.Boots.IsSet() {
		m.Boots, m.Seeds = f.Boots.V, f.Boots.V
	}
	if f.Duration.IsSet() {
		m.Duration.Duration = f.Duration.V
	}
	if f.Warmup.IsSet() {
		m.Warmup.Duration = f.Warmup.V
	}
	if f.Measure.IsSet() {
		m.Measure = f.Measure.V
	}
	if f.NUMA.IsSet() {
		if m.NUMALayout != nil && m.Memory == "" {
			m.Memory = layoutMemory(*m.NUMALayout) // the guest keeps the memory its nodes had
		}
		m.NUMA, m.NUMALayout = f.NUMA.V, nil
	}
	if f.Sockets.IsSet() || f.Clusters.IsSet() || f.Cores.IsSet() || f.Threads.IsSet() {
		// A topology given on the command line replaces the lab's whole:
		// what it leaves out lab works out.
		m.Sockets, m.Clusters, m.Cores, m.Threads = f.Sockets.V, f.Clusters.V, f.Cores.V, f.Threads.V
	}
	if f.Memory.IsSet() {
		m.Memory = f.Memory.V
	}
	if f.Pin.IsSet() {
		m.Pin = f.Pin.V
	}
	if f.Tools.IsSet() {
		lab.Tools = f.Tools.V
	}
	if f.Mode.IsSet() {
		lab.Mode = f.Mode.V
	}
	if err := lab.Validate(); err != nil {
		var se *Error
		if errors.As(err, &se) {
			return &FlagError{Msg: se.Msg}
		}
		return &FlagError{Msg: err.Error()}
	}
	return nil
}

// FlagError is a lab the command-line flags made invalid (the file alone
// was checked before them): a usage error, not a bad lab file.
type FlagError struct{ Msg string }

func (e *FlagError) Error() string { return "with the command-line flags: " + e.Msg }

// layoutMemory is the memory of a layout's nodes in all, 1G when a node's
// is unreadable (validation then says which).
func layoutMemory(l topology.Layout) string {
	var total int64
	for _, n := range l.Nodes {
		mib, err := topology.ParseMiB(n.Memory)
		if err != nil {
			return "1G"
		}
		total += mib
	}
	return fmt.Sprintf("%dM", total)
}

func minInt(x []int) int {
	m := x[0]
	for _, v := range x {
		m = min(m, v)
	}
	return m
}
