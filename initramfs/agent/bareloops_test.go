package main

import (
	"testing"

	"lab/initramfs/protocol"
)

// A loop measured bare once in a boot is every later benchmark's
// probe-free figure, named by who measured it; per loop and producer
// count, and a control's samples count as one interval.
func TestBareLoopsServeLaterBenchmarks(t *testing.T) {
	bare := bareLoops{}
	bare.keep("nop", 1, "usermode-count", []protocol.Sample{
		{IntervalNS: 1e9, Hits: 300, Calls: 300, ProducerNS: 9e8},
		{IntervalNS: 1e9, Hits: 100, Calls: 100, ProducerNS: 9e8},
	})
	bare.keep("getpgid", 1, "syscall-count", nil)
	res := protocol.Result{Benchmark: "uprobe-nop", Producers: 1}
	if err := bare.probeFree(&res, 1, protocol.Job{}, "nop"); err != nil {
		t.Fatal(err)
	}
	want := protocol.Sample{IntervalNS: 2e9, Hits: 400, Calls: 400, ProducerNS: 18e8, Rate: 200}
	if res.ProbeFree == nil || *res.ProbeFree != want || res.ProbeFreeFrom != "usermode-count" {
		t.Fatalf("probe-free %+v from %q, want %+v from usermode-count", res.ProbeFree, res.ProbeFreeFrom, want)
	}
	// The result holds a copy: nothing later changes it.
	res.ProbeFree.Hits = 1
	if bare[bareLoop{"nop", 1}].sample.Hits != 400 {
		t.Error("the result shares the boot's sample")
	}
	// No samples: nothing kept. Another producer count or loop: not served.
	for _, k := range []bareLoop{{"getpgid", 1}, {"nop", 2}, {"push", 1}} {
		if _, ok := bare[k]; ok {
			t.Errorf("%v kept", k)
		}
	}
}
