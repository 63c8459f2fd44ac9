package bpfbench_test

// The end-to-end test of the kernel's bench beside the agent. It is a
// package of its own in the suite (not internal/run's) because its kernel
// is a debug-info build of its own, the longest cold build of the suite:
// scripts/test runs it beside internal/run's cold kernels, not after them.

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"lab/initramfs/protocol"
	"lab/internal/benchmark"
	"lab/internal/run"
	"lab/internal/spec"
	"lab/internal/testbed"
	"lab/internal/testenv"
	"lab/internal/variant"
)

// The kernel's own bench, built from the lab's source tree, runs in the
// guest right after the agent and its output is parsed into the same row:
// one real trig-uprobe-nop result per boot, and the agent ÷ bench ratio
// close to 1 under icount, where both count instructions.
func TestBPFBenchBesideTheAgent(t *testing.T) {
	testenv.E2E(t, "builds a debug-info kernel and the kernel's bench, and boots them")
	lab, err := spec.Load("../../labs/bench-parity.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := &lab.Matrix
	m.CPUs, m.Benchmarks, m.Boots = []int{1}, []string{"uprobe-nop"}, 1
	m.Duration.Duration, m.Warmup.Duration = 2*time.Second, time.Second
	if err := lab.Validate(); err != nil {
		t.Fatal(err)
	}
	// One variant: the two tools run side by side in each boot, and the
	// other variant's kernel (its BTF, its bench) would be a second build
	// of a debug-info kernel for the same check.
	var buf bytes.Buffer
	res, dir, err := run.Run(context.Background(), run.Options{
		Lab: lab, CacheDir: testbed.DefaultCache(), ResultsDir: t.TempDir(), ModuleRoot: "../..",
		Command: []string{"go", "test"}, Out: &buf, Only: variant.Patched,
	})
	out := buf.String()
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	t.Log(out)
	if len(res.Boots) != 1 {
		t.Fatalf("%d boots, want 1", len(res.Boots))
	}
	if len(res.Initramfs) != 1 || len(res.Initramfs[0].Tools) != 1 || res.Initramfs[0].Tools[0].SHA256 == "" {
		t.Fatalf("the image's tools are not recorded: %+v", res.Initramfs)
	}
	for _, b := range res.Boots {
		if !b.OK() {
			t.Fatalf("boot %d %s: %+v", b.Index, b.Variant, b.Failure)
		}
		var agent, bench *protocol.Result
		for i, r := range b.Results {
			if r.Benchmark != "uprobe-nop" {
				continue
			}
			switch r.Tool {
			case "":
				agent = &b.Results[i]
			case benchmark.BPFBench:
				bench = &b.Results[i]
			}
		}
		if agent == nil || bench == nil {
			t.Fatalf("boot %d: agent %v, bench %v", b.Index, agent, bench)
		}
		if !bench.OK() || len(bench.Samples) != 3 || len(bench.Warmup) != 1 {
			t.Fatalf("boot %d: bench result %+v", b.Index, bench)
		}
		if !strings.Contains(strings.Join(bench.Output, "\n"), "Summary: hits") {
			t.Errorf("boot %d: bench's output kept without its summary: %q", b.Index, bench.Output)
		}
		ratio := protocol.Rate(agent.Samples) / protocol.Rate(bench.Samples)
		t.Logf("boot %d %s: agent %.0f hits/s, bench %.0f hits/s, agent ÷ bench %.4f", b.Index, b.Variant,
			protocol.Rate(agent.Samples), protocol.Rate(bench.Samples), ratio)
		if ratio < 0.9 || ratio > 1.1 {
			t.Errorf("boot %d: agent ÷ bench = %.3f under icount, want within 10 %%", b.Index, ratio)
		}
	}
	t.Logf("results in %s", dir)
}
