package bpfbench_test

// The end-to-end test of the kernel's bench beside the agent, on arm64: the
// suite's arm64 kernel carries what bench needs (runtest.SmallLab), so this
// test builds no kernel of its own; an x86_64 kernel with BTF would be a
// debug-info build cold beside the suite's other x86_64 kernel (every
// object differs by -g), the longest build the suite had. Bench is cross-
// compiled for arm64 (build-bench.sh), which the x86_64 path does not need.

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"lab/initramfs/protocol"
	"lab/internal/benchmark"
	"lab/internal/run"
	"lab/internal/run/runtest"
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
	testenv.E2E(t, "builds the kernel's bench for arm64 and boots it beside the agent")
	lab, err := spec.Load("../../labs/bench-parity.yaml")
	if err != nil {
		t.Fatal(err)
	}
	names := func(l *spec.Lab) []string {
		var out []string
		for _, f := range l.Fragments("arm64") {
			out = append(out, filepath.Base(f))
		}
		return out
	}
	if small := runtest.SmallLab(t, "arm64"); !slices.Equal(names(lab), names(small)) {
		t.Fatalf("bench-parity's arm64 kernel config %v is not the suite's arm64 kernel's %v: this test would build one of its own", names(lab), names(small))
	}
	m := &lab.Matrix
	m.Arch, m.CPUs, m.Benchmarks, m.Boots = []string{"arm64"}, []int{1}, []string{"uprobe-nop"}, 1
	m.Duration.Duration, m.Warmup.Duration = time.Second, time.Second
	// Without the controls: the check is uprobe-nop's two tools, and each
	// control measured by both was two thirds of the boot's guest time.
	off := false
	m.Controls = &off
	if err := lab.Validate(); err != nil {
		t.Fatal(err)
	}
	// One variant: the two tools run side by side in each boot; the other
	// variant would add a kernel and a bench build for the same check.
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
		// bench runs warm-up + duration + 1 one-second iterations.
		if !bench.OK() || len(bench.Samples) != int(m.Duration.Seconds())+1 || len(bench.Warmup) != int(m.Warmup.Seconds()) {
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
