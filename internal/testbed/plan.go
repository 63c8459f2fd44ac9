package testbed

import (
	"fmt"
	"runtime"
	"strings"
	"time"

	"lab/initramfs/protocol"
	"lab/internal/arch"
	"lab/internal/results"
	"lab/internal/spec"
	"lab/internal/topology"
	"lab/internal/vm"
)

// Host is what planning needs to know about the machine lab runs on, read
// once per run (ReadHost) so that Plan itself is a pure function.
type Host struct {
	VM       vm.Host       // what accelerator detection looks at
	Topology topology.Host // host CPUs and NUMA nodes, for pinning and caveats
	CPUs     int
	TSCkHz   int64 // the host's TSC rate, 0 when unknown or not x86
}

// ReadHost looks at this machine; forcedAccel is --accel ("" for auto).
func ReadHost(forcedAccel string) Host {
	h := Host{VM: vm.ReadHost(forcedAccel), CPUs: runtime.NumCPU()}
	h.Topology = topology.ReadHost(h.CPUs)
	if khz, ok := vm.HostTSCkHz(); ok {
		h.TSCkHz = khz
	}
	return h
}

// ShapePlan is how every boot of one arch and guest shape runs: decided
// before anything is built, the same for both variants.
type ShapePlan struct {
	Arch           arch.Arch
	Shape          topology.Shape
	Accel          vm.Accel
	Clock          string // results.ClockWall or results.ClockICount
	Pin            []int  // host CPU of each vCPU thread; nil: not pinned
	PinNote        string // whether and why (not) pinned
	Caveats        []string
	Job            protocol.Job
	BootDeadline   time.Duration // QEMU start to the agent's first record
	Quiet          time.Duration // then, at most between two records
	Oversubscribed bool          // more vCPUs than host CPUs
	// SingleThread runs the vCPUs in one host thread (see
	// arch.Arch.OversubscribedSingleThread).
	SingleThread bool
	HostTopology topology.Host
	TSCkHz       int64  // for lpj= (see LPJ) and the guest's TSC rate (vm.Config.TSCkHz)
	Firmware     string // QEMU's -bios file, "" for its default
	// Parallel is how many boots of this shape may run at once (see
	// Parallelize); 0 or 1: one after the other.
	Parallel int
}

// Tag names the shape in boot directories and labels: "2cpu", "16cpu-4node".
func (p ShapePlan) Tag() string {
	tag := fmt.Sprintf("%dcpu", p.Shape.CPUs)
	if len(p.Shape.Nodes) > 1 {
		tag += fmt.Sprintf("-%dnode", len(p.Shape.Nodes))
	}
	return tag
}

// LPJ is the loops-per-jiffy value the guest gets on its command line for a
// kernel with CONFIG_HZ=hz, 0 when it does not apply: only multi-vCPU TCG
// guests under the wall clock on arches whose delay loop counts the TSC
// (see vm.Config.Cmdline).
func (p ShapePlan) LPJ(hz int) int64 {
	if !p.Arch.TSCDelayLoop || p.Accel.Name != results.TCG || p.Clock != results.ClockWall || p.Shape.CPUs < 2 || p.TSCkHz == 0 || hz <= 0 {
		return 0
	}
	return p.TSCkHz * 1000 / int64(hz)
}

// Plan decides, for every arch and shape of the lab's matrix, the
// accelerator, clock, pinning, job and deadlines. It fails before anything
// heavy starts when the host cannot run the lab (e.g. --accel kvm without
// KVM).
func Plan(lab *spec.Lab, h Host) ([]ShapePlan, error) {
	m := lab.Matrix
	var plans []ShapePlan
	for _, name := range m.Arch {
		a, err := arch.Lookup(name)
		if err != nil {
			return nil, err
		}
		accel, err := vm.ChooseAccel(h.VM, a)
		if err != nil {
			return nil, err
		}
		shapes, err := m.Shapes(a.Name)
		if err != nil {
			return nil, err
		}
		for _, shape := range shapes {
			clock := chooseClock(m.Measure, accel, shape.CPUs)
			if clock == results.ClockICount && accel.Name != results.TCG {
				return nil, fmt.Errorf("%s, %s: measure icount needs TCG, and this run uses %s (%s)", a.Name, shape, strings.ToUpper(accel.Name), accel.Reason)
			}
			p := ShapePlan{Arch: a, Shape: shape, Accel: accel, Clock: clock, HostTopology: h.Topology,
				Oversubscribed: shape.CPUs > h.CPUs, TSCkHz: h.TSCkHz, Firmware: h.VM.FirmwarePath(a, vm.Config{Arch: a, Shape: shape, Accel: accel, Clock: clock, TSCkHz: h.TSCkHz}.Machine())}
			p.Caveats = topology.Caveats(shape, h.Topology, accel.Name == results.KVM)
			if c := accel.Caveat(); c != "" {
				p.Caveats = append(p.Caveats, c)
			}
			p.Pin, p.PinNote = topology.PinPlan(shape, h.Topology, m.Pin)
			if accel.Name == results.TCG && clock == results.ClockICount {
				// One TCG thread runs every vCPU: nothing per vCPU to pin.
				p.Pin, p.PinNote = nil, "not pinned: single-threaded TCG (icount)"
			}
			if accel.Name == results.TCG && clock == results.ClockWall && p.Oversubscribed && a.OversubscribedSingleThread {
				p.SingleThread = true
				p.Pin, p.PinNote = nil, "not pinned: single-threaded TCG"
				p.Caveats = append(p.Caveats, fmt.Sprintf("single-threaded TCG: the %d vCPUs take turns on one host thread (it boots faster than a thread per vCPU on %d host CPUs); no two vCPUs run at once", shape.CPUs, h.CPUs))
			}
			p.Job = job(lab, shape.CPUs, clock)
			p.BootDeadline, p.Quiet = Deadline(a, shape.CPUs, accel, clock, p.Job, h.CPUs)
			plans = append(plans, p)
		}
	}
	return plans, nil
}

// job is what the agent runs in a boot of one shape.
func job(lab *spec.Lab, cpus int, clock string) protocol.Job {
	m := &lab.Matrix
	affinity := true
	if m.Affinity != nil {
		affinity = *m.Affinity
	}
	j := protocol.Job{
		Benchmarks: m.JobBenchmarks(), Producers: m.ProducersFor(cpus), Affinity: affinity,
		Samples: int(m.Duration.Duration / m.Sample()), WarmupSamples: int(m.Warmup.Duration / m.Sample()),
		MaxActive: m.MaxActive, Tools: lab.Tools,
	}
	if m.Sample() != time.Second {
		j.SampleMS = int(m.Sample().Milliseconds())
	}
	j.Retakes = SampleRetakes
	if clock == results.ClockICount {
		// Free under icount; under the wall clock it would cost
		// real seconds per benchmark for less than the noise.
		j.SettleMS = ICountSettleMS
	} else {
		// Under the wall clock a guest always loses some of a sample
		// to its host; only one it lost half of is taken again.
		j.RetakeAboveNS = m.Sample().Nanoseconds() / 2
	}
	return j
}

// ICountSettleMS is the guest's idle settle before each measured section
// under icount: with it, boots of one kernel that drew different random
// streams agreed within 0.0002 % on uprobe-nop; without it, 0.011 %
// (docs/validation.md).
const ICountSettleMS = 1000

// SampleRetakes is how many times a disturbed sample is taken again: under
// icount one that deferred kernel work landed in (protocol.MaxElsewhere),
// which falls where the image's instruction count puts it, so an image
// without a code change could read 0.045 % apart from its parent's; under
// the wall clock one the host starved (Job.RetakeAboveNS).
const SampleRetakes = 2

// ParallelCaveat marks wall-clock figures of guests that ran side by side.
const ParallelCaveat = "parallel wall-clock boots: %d guests ran at once and slowed each other; compare only within this run"

// Parallelize sets how many boots of each shape run at once. asked is
// --parallel (0: not given). icount shapes default to the host's CPUs: a
// boot's figures are guest instructions, which another guest does not
// change. Wall-clock shapes stay serial unless asked, and then carry a
// caveat, since guests side by side measure each other.
func Parallelize(plans []ShapePlan, asked, hostCPUs int) {
	for i := range plans {
		p := &plans[i]
		switch {
		case p.Clock == results.ClockICount && asked == 0:
			p.Parallel = max(hostCPUs, 1)
		case p.Clock == results.ClockICount:
			p.Parallel = asked
		case asked > 1:
			p.Parallel = asked
			p.Caveats = append(p.Caveats, fmt.Sprintf(ParallelCaveat, asked))
		default:
			p.Parallel = 1
		}
	}
}

// chooseClock applies the lab's measure setting: icount where it is sound
// (TCG with one vCPU), the wall clock otherwise.
func chooseClock(measure string, accel vm.Accel, cpus int) string {
	switch measure {
	case spec.MeasureWall:
		return results.ClockWall
	case spec.MeasureICount:
		return results.ClockICount
	}
	if accel.Name == results.TCG && cpus == 1 {
		return results.ClockICount
	}
	return results.ClockWall
}

// Deadline is how long a guest may take to boot (QEMU start to the agent's
// first record), and then how long it may go without sending a record (one
// benchmark at one producer count, measured probe-free first). Boot time per
// vCPU under TCG is in the arch table; the margins are wide. icount and
// oversubscribed TCG stretch the benchmarks' host time: a guest second can
// take many host seconds when vCPUs outnumber host CPUs.
func Deadline(a arch.Arch, cpus int, accel vm.Accel, clock string, job protocol.Job, hostCPUs int) (boot, quiet time.Duration) {
	boot = 60 * time.Second
	if accel.Name == results.TCG {
		boot += time.Duration(cpus) * a.TCGBootPerCPU
	}
	record := time.Duration(2*(job.Samples+job.WarmupSamples))*job.Sample() + 8*time.Second + 2*time.Duration(job.SettleMS)*time.Millisecond
	stretch := 3
	switch {
	case clock == results.ClockICount:
		stretch = 10
	case accel.Name == results.TCG && cpus > hostCPUs:
		stretch = max(4, cpus/max(hostCPUs, 1))
	}
	return boot, time.Duration(stretch) * record
}

// ShapeBoots are each plan's boots per kernel: the lab's seeds under icount
// (every figure exact), its boots on the wall clock.
func ShapeBoots(plans []ShapePlan, m spec.Matrix) []int {
	out := make([]int, len(plans))
	for i, p := range plans {
		out[i] = m.BootsFor(p.Clock == results.ClockICount)
	}
	return out
}
