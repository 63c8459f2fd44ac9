package icounte2e

import (
	"bytes"
	"context"
	"testing"
	"time"

	"lab/internal/run"
	"lab/internal/run/runtest"
	"lab/internal/source"
	"lab/internal/spec"
	"lab/internal/testenv"
)

// Two labs sharing a cached source: while another run holds the work tree
// (it checked a commit out to build it), a run whose kernels are all
// cached prepares the source, finds its variants and kernels from git's
// objects and the cache, and measures, without waiting for the other.
func TestACachedRunMeasuresWhileAnotherBuilds(t *testing.T) {
	testenv.E2E(t, "boots real kernels under icount")
	lab := runtest.SmallLab(t, "x86_64")
	runtest.OneCPU(t, lab, spec.MeasureICount)
	runtest.Build(t, lab) // cached by the package's other tests, or built here
	building, err := source.Prepare(t.Context(), source.Origin(lab.Source), runtest.CacheDir(t), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer building.Close()
	if err := building.Checkout(t.Context(), building.BaseHash); err != nil {
		t.Fatal(err)
	}
	// Two boots take seconds: a run that waited for the tree would wait
	// until the deadline.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	var out bytes.Buffer
	res, _, err := run.Run(ctx, run.Options{Lab: lab, CacheDir: runtest.CacheDir(t), ResultsDir: t.TempDir(), ModuleRoot: runtest.Root(t),
		Command: []string{"go", "test"}, Out: &out})
	if err != nil {
		t.Fatalf("the cached run, beside a run holding the tree: %v\n%s", err, out.String())
	}
	if len(res.Boots) != 2 {
		t.Errorf("%d boots, want 2", len(res.Boots))
	}
	for _, k := range res.Kernels {
		if !k.Cached {
			t.Errorf("kernel %s/%s was built", k.Arch, k.Variant)
		}
	}
}
