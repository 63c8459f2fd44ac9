package run

import (
	"math"
	"testing"
	"time"

	"lab/initramfs/protocol"
	"lab/internal/arch"
	"lab/internal/results"
	"lab/internal/spec"
	"lab/internal/topology"
	"lab/internal/vm"
)

func res(bench string, p int, hits ...uint64) protocol.Result {
	r := protocol.Result{Benchmark: bench, Producers: p}
	for _, h := range hits {
		r.Samples = append(r.Samples, protocol.Sample{IntervalNS: 1e9, Hits: h})
	}
	return r
}

func TestRatios(t *testing.T) {
	got := ratios([]protocol.Result{
		res("kretprobe", 1, 100, 100),
		res("kretprobe", 2, 196, 196),
		res("kretprobe", 4, 300, 300),
		res("uprobe-nop", 2, 50), // no 1-producer figure: no ratio
		{Benchmark: "uprobe-ret", Producers: 1, Error: "attach failed"},
		res("uprobe-ret", 2, 10),
	})
	want := map[string]float64{"kretprobe p2/p1": 1.96, "kretprobe p4/p1": 3}
	if len(got) != len(want) {
		t.Fatalf("ratios = %v, want %v", got, want)
	}
	for k, v := range want {
		if math.Abs(got[k]-v) > 1e-9 {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
}

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
	ok := results.Boot{Outcome: out, Hello: &protocol.Hello{Online: "0-3",
		Nodes: []protocol.Node{{ID: 0, CPUs: "0-3", MemTotalKiB: 950 << 10}}}}
	if err := checkGuest(ok, shape(4)); err != nil {
		t.Error(err)
	}
	if err := checkGuest(ok, shape(8)); err == nil {
		t.Error("4 online CPUs for 8 asked: want an error")
	}
	if err := checkGuest(results.Boot{}, shape(1)); err == nil {
		t.Error("no hello: want an error")
	}
}

func TestChooseClock(t *testing.T) {
	tcg, kvm := vm.Accel{Name: vm.TCG}, vm.Accel{Name: vm.KVM}
	for _, tc := range []struct {
		measure string
		accel   vm.Accel
		cpus    int
		want    string
	}{
		{spec.MeasureAuto, tcg, 1, vm.ClockICount},
		{spec.MeasureAuto, tcg, 2, vm.ClockWall},
		{spec.MeasureAuto, kvm, 1, vm.ClockWall},
		{spec.MeasureWall, tcg, 1, vm.ClockWall},
		{spec.MeasureICount, tcg, 1, vm.ClockICount},
	} {
		if got := chooseClock(tc.measure, tc.accel, tc.cpus); got != tc.want {
			t.Errorf("chooseClock(%s, %s, %d) = %s, want %s", tc.measure, tc.accel.Name, tc.cpus, got, tc.want)
		}
	}
}

// Deadlines grow with vCPUs (x86 TCG bring-up is serial), benchmark time and
// icount's slower clock.
func TestDeadline(t *testing.T) {
	x86, _ := arch.Lookup("x86_64")
	arm, _ := arch.Lookup("arm64")
	tcg := vm.Accel{Name: vm.TCG}
	job := protocol.Job{Benchmarks: []string{"uprobe-nop"}, Producers: []int{1}, DurationS: 5, WarmupS: 1}
	boot, quiet := Deadline(x86, 2, tcg, vm.ClockWall, job)
	if boot < 60*time.Second || boot > 5*time.Minute || quiet < 12*time.Second {
		t.Errorf("2 vCPUs: boot %v, quiet %v", boot, quiet)
	}
	// Measured here: x86_64 96 vCPUs 335 s to the agent, arm64 70 s.
	if big, _ := Deadline(x86, 96, tcg, vm.ClockWall, job); big < 335*time.Second {
		t.Errorf("x86 96 vCPUs took 335 s to boot when measured; deadline %v", big)
	}
	armBoot, armQuiet := Deadline(arm, 96, tcg, vm.ClockWall, job)
	x86Boot, _ := Deadline(x86, 96, tcg, vm.ClockWall, job)
	if armBoot >= x86Boot || armBoot < 70*time.Second {
		t.Errorf("arm64 96 vCPUs: %v (x86_64 %v); measured 70 s", armBoot, x86Boot)
	}
	// Oversubscribed: a guest second takes many host seconds.
	if armQuiet < 4*quiet {
		t.Errorf("96 vCPUs on a small host: quiet %v, 2 vCPUs %v", armQuiet, quiet)
	}
	long := job
	long.DurationS = 600
	if _, d := Deadline(x86, 2, tcg, vm.ClockWall, long); d < 600*time.Second {
		t.Errorf("a 600 s benchmark gets a %v deadline", d)
	}
}
