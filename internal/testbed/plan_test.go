package testbed

import (
	"lab/initramfs/protocol"
	"lab/internal/results"
	"lab/internal/spec"
	"lab/internal/topology"
	"lab/internal/vm"
	"testing"
	"time"
)

func TestCheckGuest(t *testing.T) {
	shape := func(cpus int) topology.Shape {
		s, err := topology.Resolve("x86_64", topology.Request{CPUs: cpus, Memory: "1G"})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	out := &vm.Outcome{VCPUs: make([]vm.VCPU, 4)}
	for i := range out.VCPUs {
		out.VCPUs[i].Index, out.VCPUs[i].Props.Core = i, i
	}
	hello := &protocol.Hello{Online: "0-3", Nodes: []protocol.Node{{ID: 0, CPUs: "0-3", MemTotalKiB: 950 << 10}}}
	if err := checkGuest(hello, out, shape(4)); err != nil {
		t.Error(err)
	}
	if err := checkGuest(hello, out, shape(8)); err == nil {
		t.Error("4 online CPUs for 8 asked: want an error")
	}
	if err := checkGuest(nil, nil, shape(1)); err == nil {
		t.Error("no hello: want an error")
	}
}

func TestChooseClock(t *testing.T) {
	tcg, kvm := vm.Accel{Name: results.TCG}, vm.Accel{Name: results.KVM}
	for _, tc := range []struct {
		measure string
		accel   vm.Accel
		cpus    int
		want    string
	}{
		{spec.MeasureAuto, tcg, 1, results.ClockICount},
		{spec.MeasureAuto, tcg, 2, results.ClockWall},
		{spec.MeasureAuto, kvm, 1, results.ClockWall},
		{spec.MeasureWall, tcg, 1, results.ClockWall},
		{spec.MeasureICount, tcg, 1, results.ClockICount},
	} {
		if got := chooseClock(tc.measure, tc.accel, tc.cpus); got != tc.want {
			t.Errorf("chooseClock(%s, %s, %d) = %s, want %s", tc.measure, tc.accel.Name, tc.cpus, got, tc.want)
		}
	}
}

// A duration under a second is one sample that long, the warm-up whole
// samples of it; from a second up, one sample a second as before.
func TestJobSamples(t *testing.T) {
	for _, tc := range []struct {
		duration, warmup                 time.Duration
		sampleMS, samples, warmupSamples int
	}{
		{5 * time.Second, time.Second, 0, 5, 1},
		{time.Second, 0, 0, 1, 0},
		{500 * time.Millisecond, 0, 500, 1, 0},
		{500 * time.Millisecond, time.Second, 500, 1, 2},
	} {
		lab := &spec.Lab{Matrix: spec.Matrix{Benchmarks: []string{"uprobe-nop"}, Producers: []int{1}}}
		lab.Matrix.Duration.Duration, lab.Matrix.Warmup.Duration = tc.duration, tc.warmup
		j := job(lab, 1, results.ClockICount)
		if j.SampleMS != tc.sampleMS || j.Samples != tc.samples || j.WarmupSamples != tc.warmupSamples {
			t.Errorf("duration %v, warm-up %v: job samples %d×%dms + %d warm-up, want %d×%dms + %d", tc.duration, tc.warmup,
				j.Samples, j.SampleMS, j.WarmupSamples, tc.samples, tc.sampleMS, tc.warmupSamples)
		}
		if got := j.Sample() * time.Duration(j.Samples); got != tc.duration {
			t.Errorf("duration %v: the guest would measure %v", tc.duration, got)
		}
		if j.SettleMS != ICountSettleMS {
			t.Errorf("icount job settles %d ms, want %d", j.SettleMS, ICountSettleMS)
		}
	}
}

// Both clocks take a disturbed sample again: under icount one that lost
// more than protocol.MaxElsewhereNS to the rest of the guest, under the
// wall clock only one its host starved of half its time.
func TestJobRetakes(t *testing.T) {
	lab := &spec.Lab{Matrix: spec.Matrix{Benchmarks: []string{"uprobe-nop"}, Producers: []int{1}}}
	lab.Matrix.Duration.Duration = 250 * time.Millisecond
	for _, tc := range []struct {
		clock string
		above int64
	}{
		{results.ClockICount, protocol.MaxElsewhereNS},
		{results.ClockWall, 125e6},
	} {
		j := job(lab, 1, tc.clock)
		if j.Retakes != SampleRetakes || j.RetakeAbove() != tc.above {
			t.Errorf("%s: %d retakes above %d ns, want %d above %d", tc.clock, j.Retakes, j.RetakeAbove(), SampleRetakes, tc.above)
		}
	}
}
