package main

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"

	"lab/initramfs/protocol"
)

// reading is what the producers had done at one instant.
type reading struct {
	atNS  int64 // CLOCK_MONOTONIC
	hits  uint64
	calls uint64
	cpuNS int64
}

// sampler runs f on a thread of its own at real-time priority. Its wake-up
// then preempts the producers at once, and nothing they or other tasks do
// lands inside a reading: with an ordinary thread the scheduler let a
// producer finish its slice first, and the interval depended on the tick's
// phase (0.01 % of a second under icount).
func sampler(f func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.SchedSetAttr(0, &unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: 1}, 0); err != nil {
		return fmt.Errorf("make the sampling thread real-time: %w", err)
	}
	defer unix.SchedSetAttr(0, &unix.SchedAttr{Policy: unix.SCHED_NORMAL}, 0)
	return f()
}

func monotonicNS() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// sleepUntil sleeps the calling thread itself (not a goroutine the Go
// runtime would wake from another thread) until the monotonic clock reads
// ns.
func sleepUntil(ns int64) error {
	ts := unix.NsecToTimespec(ns)
	for {
		err := unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &ts, nil)
		if err != unix.EINTR {
			return err
		}
	}
}

// settle idles the guest for the job's SettleMS so that the deferred work
// of what ran before (RCU grace periods and callbacks after a probe was
// detached, work queued as the previous producers exited) completes
// before anything is measured, not inside a measured second at a moment
// the guest's random stream decides. Under icount an idle second costs the
// host almost nothing: QEMU skips to the next timer.
func settle(job protocol.Job) error {
	if job.SettleMS <= 0 {
		return nil
	}
	return sleepUntil(monotonicNS() + int64(job.SettleMS)*1e6)
}

// read takes a reading: hits (the producers' calls when hits is nil),
// calls and CPU time.
func (pr *producers) read(hits func() (uint64, error)) (reading, error) {
	r := reading{atNS: monotonicNS()}
	var err error
	if hits == nil {
		r.hits = pr.calls()
	} else if r.hits, err = hits(); err != nil {
		return r, err
	}
	r.calls = pr.calls()
	r.cpuNS, err = pr.cpuNS()
	return r, err
}

// sample is the interval from a to b.
func sample(a, b reading) protocol.Sample {
	iv := b.atNS - a.atNS
	return protocol.Sample{IntervalNS: iv, Hits: b.hits - a.hits, Calls: b.calls - a.calls,
		Rate: float64(b.hits-a.hits) / (float64(iv) / 1e9), ProducerNS: b.cpuNS - a.cpuNS}
}

// withProducers settles the guest, runs p producers of loop and calls f
// on the sampling thread while they run.
func withProducers(p int, job protocol.Job, loop string, f func(*producers) error) error {
	if err := settle(job); err != nil {
		return err
	}
	pr, err := startProducers(p, job.Affinity, loop)
	if err != nil {
		return err
	}
	defer pr.halt()
	return sampler(func() error { return f(pr) })
}

// measure runs p producers and samples once each job.Sample() (a second,
// as the kernel's bench does, unless the job says less), timing each
// interval. hits counts what the benchmark measures (probe hits); nil
// means the producers' own calls. A measured sample the producers did not
// have to themselves (deferred kernel work landed in it under icount, the
// host starved the guest under the wall clock: job.RetakeAbove) is taken
// again, up to job.Retakes times; the
// least disturbed try is kept, the others recorded as Retaken. A retake
// carries none of the producers' start, which the first sample does:
// uprobe-nop's retaken second read 0.003 % above a clean first one under
// icount, well within the floor.
func measure(res *protocol.Result, p int, job protocol.Job, hits func() (uint64, error), loop string) error {
	return withProducers(p, job, loop, func(pr *producers) error {
		prev, err := pr.read(hits)
		if err != nil {
			return err
		}
		// Each sample is a section of its own, from the reading that
		// starts it to the one that ends it (the next sample's start).
		section := marked.start()
		defer marked.stop()
		next := func() (protocol.Sample, error) {
			if err := sleepUntil(prev.atNS + job.Sample().Nanoseconds()); err != nil {
				return protocol.Sample{}, err
			}
			if err := pr.stopped(); err != nil {
				return protocol.Sample{}, err
			}
			r, err := pr.read(hits)
			marked.stop()
			if err != nil {
				return protocol.Sample{}, err
			}
			s := sample(prev, r)
			s.Section, section = section, marked.start()
			prev = r
			return s, nil
		}
		for i := 0; i < job.WarmupSamples; i++ {
			s, err := next()
			if err != nil {
				return err
			}
			res.Warmup = append(res.Warmup, s)
		}
		for i := 0; i < job.Samples; i++ {
			s, err := next()
			if err != nil {
				return err
			}
			for try := 0; try < job.Retakes && disturbed([]protocol.Sample{s}, p) > job.RetakeAbove(); try++ {
				again, err := next()
				if err != nil {
					return err
				}
				if disturbed([]protocol.Sample{again}, p) < disturbed([]protocol.Sample{s}, p) {
					s, again = again, s
				}
				res.Retaken = append(res.Retaken, again)
			}
			res.Samples = append(res.Samples, s)
		}
		if job.StackHz > 0 {
			res.Stacks = profiled(job.StackHz, next)
		}
		return nil
	})
}

// disturbed is the most time, per producer, any of the samples gave to the
// rest of the guest. The agent records its producers' CPU time, so a
// sample in which they had none (the host did not run the guest while
// they started) gave all of it.
func disturbed(samples []protocol.Sample, producers int) int64 {
	var most int64
	for _, s := range samples {
		elsewhere := s.ElsewhereNS(producers)
		if s.ProducerNS <= 0 {
			elsewhere = s.IntervalNS
		}
		most = max(most, elsewhere)
	}
	return most
}

// probeFree measures the benchmark's loop before the probe is attached: one
// sample after a short warm-up, so a table can show the probe's own cost.
func probeFree(p int, job protocol.Job, loop string) (*protocol.Sample, error) {
	var s protocol.Sample
	err := withProducers(p, job, loop, func(pr *producers) error {
		if err := sleepUntil(monotonicNS() + 200e6); err != nil {
			return err
		}
		a, err := pr.read(nil)
		if err != nil {
			return err
		}
		section := marked.start()
		if err := sleepUntil(a.atNS + job.Sample().Nanoseconds()); err != nil {
			marked.stop()
			return err
		}
		if err := pr.stopped(); err != nil {
			marked.stop()
			return err
		}
		b, err := pr.read(nil)
		marked.stop()
		if err != nil {
			return err
		}
		s = sample(a, b)
		s.Section = section
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &s, nil
}
