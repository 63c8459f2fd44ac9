package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"

	"lab/initramfs/protocol"
	"lab/internal/cpulist"
)

// maxStackDepth is the kernel's PERF_MAX_STACK_DEPTH: a stack map's value
// holds this many addresses.
const maxStackDepth = 127

// maxStacks bounds the distinct stacks one profiled sample keeps; a stack
// that finds the map full is counted as lost.
const maxStacks = 8192

// stackSampler is a perf_event BPF program attached to a cpu-clock event on
// every online CPU: each sample counts its kernel stack's id.
type stackSampler struct {
	counts, stacks *ebpf.Map
	prog           *ebpf.Program
	events         []int
}

// startStackSampler loads the program and starts sampling at hz on every
// online CPU.
func startStackSampler(hz int) (st *stackSampler, err error) {
	st = &stackSampler{}
	defer func() {
		if err != nil {
			st.close()
		}
	}()
	if st.stacks, err = ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.StackTrace, KeySize: 4, ValueSize: 8 * maxStackDepth, MaxEntries: maxStacks}); err != nil {
		return st, fmt.Errorf("create the stack map: %w", err)
	}
	if st.counts, err = ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Hash, KeySize: 4, ValueSize: 8, MaxEntries: maxStacks + 8}); err != nil {
		return st, fmt.Errorf("create the count map: %w", err)
	}
	if st.prog, err = ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.PerfEvent, Instructions: stackInsns(st.counts, st.stacks), License: "GPL"}); err != nil {
		return st, fmt.Errorf("load the stack sampler: %w", err)
	}
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return st, err
	}
	cpus, err := cpulist.Parse(strings.TrimSpace(string(b)))
	if err != nil {
		return st, fmt.Errorf("/sys/devices/system/cpu/online: %w", err)
	}
	attr := unix.PerfEventAttr{Type: unix.PERF_TYPE_SOFTWARE, Config: unix.PERF_COUNT_SW_CPU_CLOCK,
		Size: uint32(unsafe.Sizeof(unix.PerfEventAttr{})), Sample: uint64(hz), Bits: unix.PerfBitFreq | unix.PerfBitDisabled}
	for _, cpu := range cpus {
		fd, err := unix.PerfEventOpen(&attr, -1, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
		if err != nil {
			return st, fmt.Errorf("perf_event_open %s on CPU %d: %w", protocol.StackEvent, cpu, err)
		}
		st.events = append(st.events, fd)
		if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_BPF, st.prog.FD()); err != nil {
			return st, fmt.Errorf("attach the stack sampler on CPU %d: %w", cpu, err)
		}
	}
	for _, fd := range st.events {
		if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_ENABLE, 0); err != nil {
			return st, fmt.Errorf("enable %s: %w", protocol.StackEvent, err)
		}
	}
	return st, nil
}

// stackInsns counts each sample by its kernel stack's id (bpf_get_stackid:
// negative when there is none, as in user mode, or the map has no room).
func stackInsns(counts, stacks *ebpf.Map) asm.Instructions {
	lookupAdd := func(miss string) asm.Instructions {
		return asm.Instructions{
			asm.LoadMapPtr(asm.R1, counts.FD()),
			asm.Mov.Reg(asm.R2, asm.RFP),
			asm.Add.Imm(asm.R2, -4),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, miss),
			asm.Mov.Imm(asm.R1, 1),
			asm.StoreXAdd(asm.R0, asm.R1, asm.DWord),
			asm.Ja.Label("out"),
		}
	}
	insns := asm.Instructions{
		// R1 is the context the helper unwinds from.
		asm.LoadMapPtr(asm.R2, stacks.FD()),
		asm.Mov.Imm(asm.R3, 0), // the kernel stack
		asm.FnGetStackid.Call(),
		asm.StoreMem(asm.RFP, -4, asm.R0, asm.Word),
	}
	insns = append(insns, lookupAdd("new")...)
	insns = append(insns,
		asm.Mov.Imm(asm.R1, 1).WithSymbol("new"),
		asm.StoreMem(asm.RFP, -16, asm.R1, asm.DWord),
		asm.LoadMapPtr(asm.R1, counts.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -4),
		asm.Mov.Reg(asm.R3, asm.RFP),
		asm.Add.Imm(asm.R3, -16),
		asm.Mov.Imm(asm.R4, 1), // BPF_NOEXIST: another CPU may have added it
		asm.FnMapUpdateElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
	)
	insns = append(insns, lookupAdd("out")...)
	return append(insns, asm.Mov.Imm(asm.R0, 0).WithSymbol("out"), asm.Return())
}

// disable stops sampling on every CPU.
func (st *stackSampler) disable() {
	for _, fd := range st.events {
		unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_DISABLE, 0)
	}
}

func (st *stackSampler) close() {
	for _, fd := range st.events {
		unix.Close(fd)
	}
	if st.prog != nil {
		st.prog.Close()
	}
	if st.counts != nil {
		st.counts.Close()
	}
	if st.stacks != nil {
		st.stacks.Close()
	}
}

// read fills sp with what the program counted.
func (st *stackSampler) read(sp *protocol.StackProfile) error {
	var id int32
	var n uint64
	it := st.counts.Iterate()
	for it.Next(&id, &n) {
		sp.Taken += n
		switch {
		case id >= 0:
			pcs, err := st.stack(id)
			if err != nil {
				return err
			}
			sp.Stacks = append(sp.Stacks, protocol.StackCount{N: n, PCs: pcs})
		case -id == int32(unix.EFAULT): // no kernel stack: user mode
			sp.User += n
		default:
			sp.Lost += n
		}
	}
	return it.Err()
}

// stack is stack id's addresses, the sampled one first.
func (st *stackSampler) stack(id int32) ([]uint64, error) {
	var raw [maxStackDepth]uint64
	if err := st.stacks.Lookup(id, &raw); err != nil {
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("stack %d: %w", id, err)
	}
	var pcs []uint64
	for _, pc := range raw {
		if pc == 0 {
			break
		}
		pcs = append(pcs, pc)
	}
	return pcs, nil
}

// profiled takes one more sample (next) with the stack sampler on, and
// more while the stacks are fewer than protocol.MinStackSamples (up to
// protocol.MaxStackIntervals in all): the sampled profile of a benchmark
// (protocol.Job.StackHz). What goes wrong is said in the profile; the
// result's measured samples stand without it.
func profiled(hz int, next func() (protocol.Sample, error)) *protocol.StackProfile {
	sp := &protocol.StackProfile{Event: protocol.StackEvent, Hz: hz}
	st, err := startStackSampler(hz)
	if err != nil {
		sp.Error = err.Error()
		return sp
	}
	defer st.close()
	sp.Sample, err = sampleUntil(next, st.taken)
	st.disable()
	if err != nil {
		sp.Error = fmt.Sprintf("the profiled sample: %v", err)
		return sp
	}
	if err := st.read(sp); err != nil {
		sp.Error = fmt.Sprintf("read the stacks: %v", err)
	}
	return sp
}

// sampleUntil takes samples with next until taken() reaches
// protocol.MinStackSamples or protocol.MaxStackIntervals were taken, and
// returns them as one: their intervals, hits, calls and producer time
// summed.
func sampleUntil(next func() (protocol.Sample, error), taken func() uint64) (protocol.Sample, error) {
	var sum protocol.Sample
	for i := 0; i < protocol.MaxStackIntervals; i++ {
		s, err := next()
		if err != nil {
			return sum, err
		}
		if i == 0 {
			sum = s
		} else {
			sum.IntervalNS += s.IntervalNS
			sum.Hits += s.Hits
			sum.Calls += s.Calls
			sum.ProducerNS += s.ProducerNS
		}
		if taken() >= protocol.MinStackSamples {
			break
		}
	}
	if sum.IntervalNS > 0 {
		sum.Rate = float64(sum.Hits) / float64(sum.IntervalNS) * 1e9
	}
	return sum, nil
}

// taken is how many samples the program has counted so far.
func (st *stackSampler) taken() uint64 {
	var id int32
	var n, sum uint64
	it := st.counts.Iterate()
	for it.Next(&id, &n) {
		sum += n
	}
	return sum
}
