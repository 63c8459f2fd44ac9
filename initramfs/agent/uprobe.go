package main

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"lab/initramfs/protocol"
	"lab/initramfs/targets"
)

// runBenchmark runs one benchmark at p producers and never panics: a
// failure becomes the result's Error.
func runBenchmark(name string, p int, job protocol.Job) (res protocol.Result) {
	res = protocol.Result{Benchmark: name, Producers: p}
	defer func() {
		if r := recover(); r != nil {
			res.Error = fmt.Sprintf("panic: %v", r)
		}
	}()
	var err error
	switch name {
	case "uprobe-nop":
		err = uprobeBench(&res, "nop", p, job)
	default:
		res.Unsupported = fmt.Sprintf("this agent does not know benchmark %q", name)
	}
	if err != nil {
		res.Error = err.Error()
	}
	return res
}

// counterProg counts hits in a per-CPU array, as the kernel's bench does
// since 2024: shared counters would make the counting the bottleneck.
func counterProg() (*ebpf.Map, *ebpf.Program, error) {
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: 1})
	if err != nil {
		return nil, nil, fmt.Errorf("create counter map: %w", err)
	}
	insns := asm.Instructions{
		asm.StoreImm(asm.RFP, -4, 0, asm.Word), // key = 0
		asm.LoadMapPtr(asm.R1, m.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -4),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.Mov.Imm(asm.R1, 1),
		asm.StoreXAdd(asm.R0, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
		asm.Return(),
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.Kprobe, Instructions: insns, License: "GPL"})
	if err != nil {
		m.Close()
		return nil, nil, fmt.Errorf("load counter program: %w", err)
	}
	return m, prog, nil
}

func readHits(m *ebpf.Map) (uint64, error) {
	var per []uint64
	if err := m.Lookup(uint32(0), &per); err != nil {
		return 0, err
	}
	var sum uint64
	for _, v := range per {
		sum += v
	}
	return sum, nil
}

func uprobeBench(res *protocol.Result, target string, p int, job protocol.Job) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	t, ok := targets.Table[target]
	if !ok {
		res.Unsupported = fmt.Sprintf("no %s target on %s", target, runtime.GOARCH)
		return nil
	}
	loc, err := targets.Locate(exe, t)
	if err != nil {
		return err
	}
	res.Attach = "uprobe " + loc.String()
	m, prog, err := counterProg()
	if err != nil {
		return err
	}
	defer m.Close()
	defer prog.Close()
	ex, err := link.OpenExecutable(exe)
	if err != nil {
		return err
	}
	l, err := ex.Uprobe(t.Symbol, prog, &link.UprobeOptions{Address: loc.Offset})
	if err != nil {
		return fmt.Errorf("attach uprobe at %s: %w", loc, err)
	}
	defer l.Close()
	return measure(res, p, job, func() (uint64, error) { return readHits(m) }, targets.Nop)
}

// measure runs p producers calling fn in a tight loop and samples count once
// a second, timing each interval, as the kernel's bench does.
func measure(res *protocol.Result, p int, job protocol.Job, count func() (uint64, error), fn func()) error {
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, p)
	for i := 0; i < p; i++ {
		wg.Add(1)
		go func(cpu int) {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			if job.Affinity {
				var set unix.CPUSet
				set.Set(cpu)
				if err := unix.SchedSetaffinity(0, &set); err != nil {
					errs <- fmt.Errorf("pin producer to CPU %d: %w", cpu, err)
					return
				}
			}
			for !stop.Load() {
				for j := 0; j < 256; j++ {
					fn()
				}
			}
		}(i)
	}
	defer func() { stop.Store(true); wg.Wait() }()

	prev, err := count()
	if err != nil {
		return err
	}
	last := time.Now()
	total := job.WarmupS + job.DurationS
	for i := 0; i < total; i++ {
		time.Sleep(time.Until(last.Add(time.Second)))
		select {
		case err := <-errs:
			return err
		default:
		}
		now := time.Now()
		c, err := count()
		if err != nil {
			return err
		}
		iv := now.Sub(last)
		s := protocol.Sample{IntervalNS: iv.Nanoseconds(), Hits: c - prev, Rate: float64(c-prev) / iv.Seconds()}
		if i < job.WarmupS {
			res.Warmup = append(res.Warmup, s)
		} else {
			res.Samples = append(res.Samples, s)
		}
		prev, last = c, now
	}
	return nil
}
