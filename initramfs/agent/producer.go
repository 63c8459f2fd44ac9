package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"lab/initramfs/targets"
)

// producerFile is where the agent writes the producer program: the
// initramfs's own root, a file system uprobes attach to.
const producerFile = "/lab-producer"

const pageSize = 4096

// producers are p copies of the producer program running one loop, each
// pinned to CPU i when asked. Each counts its calls in a page it shares
// with the agent, so that reading a count costs the producers nothing.
type producers struct {
	loop     string
	pages    [][]byte
	procs    []*os.Process
	done     []chan struct{}
	stopping atomic.Bool
	errs     chan error
}

// writeProducer writes the program once a boot: a file that is running
// cannot be rewritten.
func writeProducer() error {
	if _, err := os.Stat(producerFile); err == nil {
		return nil
	}
	prog, err := targets.Program(runtime.GOARCH)
	if err != nil {
		return err
	}
	return os.WriteFile(producerFile, prog, 0o755)
}

func startProducers(p int, affinity bool, loop string) (*producers, error) {
	idx, ok := targets.LoopIndex(loop)
	if !ok {
		return nil, fmt.Errorf("the producer program has no %s loop", loop)
	}
	if err := writeProducer(); err != nil {
		return nil, fmt.Errorf("write the producer program: %w", err)
	}
	pr := &producers{loop: loop, errs: make(chan error, p)}
	for cpu := 0; cpu < p; cpu++ {
		if err := pr.start(cpu, affinity, idx); err != nil {
			pr.halt()
			return nil, err
		}
	}
	return pr, nil
}

// start runs one producer with its page as fd 3.
func (pr *producers) start(cpu int, affinity bool, loop uint32) error {
	fd, err := unix.MemfdCreate("lab-producer-page", 0)
	if err != nil {
		return fmt.Errorf("producer page: %w", err)
	}
	f := os.NewFile(uintptr(fd), "lab-producer-page")
	defer f.Close() // the producer has its own fd, the agent its mapping
	if err := f.Truncate(pageSize); err != nil {
		return fmt.Errorf("producer page: %w", err)
	}
	page, err := unix.Mmap(fd, 0, pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("map the producer page: %w", err)
	}
	pr.pages = append(pr.pages, page)
	binary.LittleEndian.PutUint32(page[8:], loop)
	cmd := exec.Command(producerFile)
	cmd.ExtraFiles = []*os.File{f}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start producer %d: %w", cpu, err)
	}
	done := make(chan struct{})
	pr.procs, pr.done = append(pr.procs, cmd.Process), append(pr.done, done)
	go func() {
		err := cmd.Wait()
		if !pr.stopping.Load() {
			// Exit status 1: the program could not map its page.
			pr.errs <- fmt.Errorf("producer %d (%s loop) stopped by itself: %v", cpu, pr.loop, err)
		}
		close(done)
	}()
	if affinity {
		var set unix.CPUSet
		set.Set(cpu)
		if err := unix.SchedSetaffinity(cmd.Process.Pid, &set); err != nil {
			return fmt.Errorf("pin producer to CPU %d: %w", cpu, err)
		}
	}
	return nil
}

// stopped is the error of a producer that stopped by itself, nil while
// they all run.
func (pr *producers) stopped() error {
	select {
	case err := <-pr.errs:
		return err
	default:
		return nil
	}
}

// calls sums the producers' counts.
func (pr *producers) calls() uint64 {
	var sum uint64
	for _, page := range pr.pages {
		sum += (*atomic.Uint64)(unsafe.Pointer(&page[0])).Load()
	}
	return sum
}

// cpuNS sums the CPU time the producers have had, from each process's
// scheduler clock (nanoseconds, not ticks).
func (pr *producers) cpuNS() (int64, error) {
	var sum int64
	for _, p := range pr.procs {
		// MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)
		clock := int32(^uint32(p.Pid)<<3 | 2)
		var ts unix.Timespec
		if err := unix.ClockGettime(clock, &ts); err != nil {
			return 0, fmt.Errorf("CPU time of producer %d: %w", p.Pid, err)
		}
		sum += ts.Nano()
	}
	return sum, nil
}

// halt kills the producers and waits until they are gone.
func (pr *producers) halt() {
	pr.stopping.Store(true)
	for _, p := range pr.procs {
		p.Kill()
	}
	for _, d := range pr.done {
		<-d
	}
	for _, page := range pr.pages {
		unix.Munmap(page)
	}
	pr.procs, pr.done, pr.pages = nil, nil, nil
}
