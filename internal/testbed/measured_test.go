package testbed

import (
	"fmt"
	"testing"

	"lab/initramfs/protocol"
	"lab/internal/arch"
	"lab/internal/results"
	"lab/internal/topology"
	"lab/internal/variant"
)

// A boot stands for a new one only under icount, of the same image, arch,
// guest shape and job: each difference makes it another measurement.
func TestMeasured(t *testing.T) {
	x86, err := arch.Lookup("x86_64")
	if err != nil {
		t.Fatal(err)
	}
	one, _ := topology.Resolve("x86_64", topology.Request{CPUs: 1, Memory: "1G"})
	two, _ := topology.Resolve("x86_64", topology.Request{CPUs: 2, Memory: "1G"})
	job := protocol.Job{Benchmarks: []string{"uprobe-nop", "usermode-count"}, Producers: []int{1}, Samples: 1, SampleMS: 250}
	plan := ShapePlan{Arch: x86, Shape: one, Clock: results.ClockICount, Job: job}
	reordered := job
	reordered.Benchmarks = []string{"usermode-count", "uprobe-nop"}
	boot := func(i int, v variant.Variant, clock string, shape topology.Shape, j protocol.Job) results.Boot {
		return results.Boot{Index: i, Arch: "x86_64", Variant: v, Clock: clock, Shape: &shape, Job: j}
	}
	run := &results.Run{RunID: "r",
		Kernels: []results.Kernel{{Arch: "x86_64", Variant: variant.Baseline, Info: results.Build{ImageSHA256: "aa"}},
			{Arch: "x86_64", Variant: variant.Patched, Info: results.Build{ImageSHA256: "bb"}}},
		Boots: []results.Boot{
			boot(1, variant.Baseline, results.ClockICount, one, job),       // stands
			boot(2, variant.Patched, results.ClockICount, one, job),        // another image
			boot(3, variant.Baseline, results.ClockWall, one, job),         // the wall clock
			boot(4, variant.Baseline, results.ClockICount, two, job),       // another shape
			boot(5, variant.Baseline, results.ClockICount, one, reordered), // another job
		}}
	failed := boot(6, variant.Baseline, results.ClockICount, one, job)
	failed.Failure = &results.Failure{Kind: results.FailPanic}
	run.Boots = append(run.Boots, failed)
	got := Measured(run, "aa", plan)
	if len(got) != 1 || got[0].Index != 1 {
		t.Errorf("measured %v, want boot 1 alone", indexes(got))
	}
	wall := plan
	wall.Clock = results.ClockWall
	if got := Measured(run, "aa", wall); len(got) != 0 {
		t.Errorf("a wall-clock plan takes %v, want none", indexes(got))
	}
	if got := Measured(run, "cc", plan); len(got) != 0 {
		t.Errorf("an image never booted: %v", indexes(got))
	}
}

func indexes(boots []results.Boot) string {
	var s []int
	for _, b := range boots {
		s = append(s, b.Index)
	}
	return fmt.Sprint(s)
}
