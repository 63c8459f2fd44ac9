package main

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"lab/initramfs/protocol"
)

// batch is how many calls a producer makes between two counter updates: the
// counting must never become the bottleneck.
const batch = 64

// counter is one producer's call count, alone on its cache lines.
type counter struct {
	n atomic.Uint64
	_ [120]byte
}

// producers runs p goroutines calling fn in a tight loop, each on its own
// OS thread, pinned to CPU i when asked, until stop is closed.
type producers struct {
	counts []counter
	stop   atomic.Bool
	wg     sync.WaitGroup
	errs   chan error
}

func startProducers(p int, affinity bool, fn func()) *producers {
	pr := &producers{counts: make([]counter, p), errs: make(chan error, p)}
	for i := 0; i < p; i++ {
		pr.wg.Add(1)
		go func(cpu int) {
			defer pr.wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			if affinity {
				var set unix.CPUSet
				set.Set(cpu)
				if err := unix.SchedSetaffinity(0, &set); err != nil {
					pr.errs <- fmt.Errorf("pin producer to CPU %d: %w", cpu, err)
					return
				}
			}
			c := &pr.counts[cpu]
			for !pr.stop.Load() {
				for j := 0; j < batch; j++ {
					fn()
				}
				c.n.Add(batch)
			}
		}(i)
	}
	return pr
}

func (pr *producers) calls() uint64 {
	var sum uint64
	for i := range pr.counts {
		sum += pr.counts[i].n.Load()
	}
	return sum
}

func (pr *producers) halt() {
	pr.stop.Store(true)
	pr.wg.Wait()
}

// measure runs p producers and samples once a second, timing each interval,
// as the kernel's bench does. hits counts what the benchmark measures (probe
// hits); nil means the producers' own calls.
func measure(res *protocol.Result, p int, job protocol.Job, hits func() (uint64, error), fn func()) error {
	pr := startProducers(p, job.Affinity, fn)
	defer pr.halt()
	count := func() (uint64, error) {
		if hits == nil {
			return pr.calls(), nil
		}
		return hits()
	}
	prevHits, err := count()
	if err != nil {
		return err
	}
	prevCalls, last := pr.calls(), time.Now()
	for i := 0; i < job.WarmupS+job.DurationS; i++ {
		time.Sleep(time.Until(last.Add(time.Second)))
		select {
		case err := <-pr.errs:
			return err
		default:
		}
		now := time.Now()
		h, err := count()
		if err != nil {
			return err
		}
		c := pr.calls()
		iv := now.Sub(last)
		s := protocol.Sample{IntervalNS: iv.Nanoseconds(), Hits: h - prevHits, Calls: c - prevCalls, Rate: float64(h-prevHits) / iv.Seconds()}
		if i < job.WarmupS {
			res.Warmup = append(res.Warmup, s)
		} else {
			res.Samples = append(res.Samples, s)
		}
		prevHits, prevCalls, last = h, c, now
	}
	return nil
}

// probeFree measures the benchmark's loop before the probe is attached: one
// second after a short warm-up, so a table can show the probe's own cost.
func probeFree(p int, job protocol.Job, fn func()) (*protocol.Sample, error) {
	pr := startProducers(p, job.Affinity, fn)
	defer pr.halt()
	time.Sleep(200 * time.Millisecond)
	c0, t0 := pr.calls(), time.Now()
	time.Sleep(time.Second)
	c1, t1 := pr.calls(), time.Now()
	select {
	case err := <-pr.errs:
		return nil, err
	default:
	}
	iv := t1.Sub(t0)
	return &protocol.Sample{IntervalNS: iv.Nanoseconds(), Hits: c1 - c0, Calls: c1 - c0, Rate: float64(c1-c0) / iv.Seconds()}, nil
}
