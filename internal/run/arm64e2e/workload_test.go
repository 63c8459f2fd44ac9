package arm64e2e

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"lab/initramfs/protocol"
	"lab/internal/run"
	"lab/internal/run/runtest"
	"lab/internal/spec"
	"lab/internal/variant"
)

// A workload on an arm64 guest: the host is x86_64, so stress-ng and its
// libraries come from Debian's arm64 packages, fetched into the cache
// (guestroot) and put into the initramfs as the arm64 loader finds them.
// One boot of the suite's arm64 kernel under icount runs stress-mmap to its
// fixed amount of work and records the package it came from.
func TestWorkloadOnArm64(t *testing.T) {
	e2e(t)
	lab := runtest.SmallLab(t, "arm64")
	lab.Matrix.Benchmarks = []string{"stress-mmap"}
	lab.Matrix.Duration.Duration, lab.Matrix.Warmup.Duration = runtest.Duration, 0
	runtest.OneCPU(t, lab, spec.MeasureICount)
	var out bytes.Buffer
	res, _, err := run.Run(context.Background(), run.Options{
		Lab: lab, CacheDir: runtest.CacheDir(t), ResultsDir: t.TempDir(), ModuleRoot: runtest.Root(t),
		Command: []string{"go", "test"}, Out: &out, Only: variant.Patched,
	})
	t.Log(out.String())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Initramfs) != 1 || len(res.Initramfs[0].Programs) != 1 {
		t.Fatalf("the image records no program: %+v", res.Initramfs)
	}
	if p := res.Initramfs[0].Programs[0]; p.Package != "stress-ng:arm64" || p.Version == "" || p.Files < 10 {
		t.Errorf("the program recorded %+v, want stress-ng:arm64 with its version and libraries", p)
	}
	if len(res.Boots) != 1 || !res.Boots[0].OK() {
		t.Fatalf("boots %+v", res.Boots)
	}
	for _, r := range res.Boots[0].Results {
		if r.Benchmark != "stress-mmap" {
			continue
		}
		if r.Error != "" || len(r.Samples) != 1 || r.Samples[0].Hits != 24 || protocol.Rate(r.Samples) <= 0 {
			t.Fatalf("stress-mmap on arm64: error %q, samples %+v", r.Error, r.Samples)
		}
		if !strings.Contains(r.Attach, "/usr/bin/stress-ng --mmap 1") {
			t.Errorf("attach %q does not say what ran", r.Attach)
		}
		t.Logf("stress-mmap on arm64: %.3f ops a guest second", protocol.Rate(r.Samples))
		return
	}
	t.Fatal("no stress-mmap result")
}
