package main

import "lab/initramfs/protocol"

// bareLoops holds, for one boot, each loop's rate with nothing attached at
// each producer count, and the benchmark that measured it. A probe
// benchmark's probe-free figure is that rate, so only the first benchmark
// of a loop in a boot measures it: the others (a control runs first, the
// host orders bare loops first) take it from here instead of spending
// another 1.2 guest seconds on the same loop, which under icount cost about
// 2.7 host seconds each here.
type bareLoops map[bareLoop]bareRate

type bareLoop struct {
	loop      string
	producers int
}

type bareRate struct {
	sample protocol.Sample
	from   string // the benchmark that measured it
}

// keep records what benchmark from measured of loop at p producers with
// nothing attached: its samples as one interval.
func (b bareLoops) keep(loop string, p int, from string, samples []protocol.Sample) {
	if len(samples) == 0 {
		return
	}
	s := protocol.Sample{Rate: protocol.Rate(samples)}
	for _, x := range samples {
		s.IntervalNS += x.IntervalNS
		s.Hits += x.Hits
		s.Calls += x.Calls
		s.ProducerNS += x.ProducerNS
	}
	b[bareLoop{loop, p}] = bareRate{s, from}
}

// probeFree sets res's probe-free figure: the boot's rate of loop at p
// producers when it has one, else one measured now.
func (b bareLoops) probeFree(res *protocol.Result, p int, job protocol.Job, loop string) error {
	if r, ok := b[bareLoop{loop, p}]; ok {
		s := r.sample
		res.ProbeFree, res.ProbeFreeFrom = &s, r.from
		return nil
	}
	s, err := probeFree(p, job, loop)
	if err != nil {
		return err
	}
	res.ProbeFree = s
	b[bareLoop{loop, p}] = bareRate{*s, res.Benchmark}
	return nil
}
