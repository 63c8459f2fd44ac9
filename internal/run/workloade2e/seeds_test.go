package workloade2e

import (
	"bytes"
	"context"
	"slices"
	"testing"

	"lab/initramfs/protocol"
	"lab/internal/benchmark"
	"lab/internal/run"
	"lab/internal/run/runtest"
	"lab/internal/stats"
	"lab/internal/testenv"
	"lab/internal/variant"
)

// seeds is how many random streams the experiment draws: one boot each.
const seeds = 8

// One image, 8 seeds (one boot each, as 8 images of the same code would
// draw them): each workload's spread stays within its own icount floor,
// which the benchmark table sets at 3 × this spread. A workload of two
// processes (futex's waiter and waker, pipe's writer and reader) takes
// another path when the random stream moves how they interleave; one
// seed's figure repeats to the last digit (TestICountOneImageOneFigure).
func TestWorkloadSeeds(t *testing.T) {
	testenv.E2E(t, "boots a real kernel 8 times under icount, running stress-ng")
	lab := runtest.SmallLab(t, "x86_64")
	m := &lab.Matrix
	m.CPUs, m.Producers, m.Seeds = []int{1}, []int{1}, seeds
	m.Benchmarks = []string{"stress-mmap", "stress-futex", "stress-pipe"}
	m.Duration.Duration, m.Warmup.Duration = runtest.Duration, 0
	if err := lab.Validate(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	res, _, err := run.Run(context.Background(), run.Options{
		Lab: lab, CacheDir: runtest.CacheDir(t), ResultsDir: t.TempDir(), ModuleRoot: runtest.Root(t),
		Command: []string{"go", "test"}, Out: &out, Only: variant.Patched,
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	figures := map[string][]float64{}
	for _, b := range res.Boots {
		for _, r := range b.Results {
			if r.Error != "" {
				t.Errorf("seed %d: %s: %s", b.Seed, r.Benchmark, r.Error)
				continue
			}
			figures[r.Benchmark] = append(figures[r.Benchmark], protocol.Rate(r.Samples))
		}
	}
	for _, name := range m.Benchmarks {
		s := stats.Summarize(figures[name])
		floor := benchmark.ICountFloorPct(name)
		lo, hi := slices.Min(s.Values), slices.Max(s.Values)
		t.Logf("%s: %d seeds, mean %.3f ops/s, CV %.3f %%, range %.3f %%; floor %.1f %%", name, s.N, s.Mean, 100*s.CV(), 100*(hi-lo)/s.Mean, floor)
		if s.N != seeds || 3*100*s.CV() > floor {
			t.Errorf("%s: %d seeds, 3 × CV %.2f %% beyond its floor %.1f %%", name, s.N, 3*100*s.CV(), floor)
		}
	}
}
