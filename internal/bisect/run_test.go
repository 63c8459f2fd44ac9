package bisect

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"lab/internal/results"
	"lab/internal/spec"
)

// --parallel is for icount bisects: under the wall clock guests side by
// side slow each other and a step is judged against boots of the ends, so
// lab says no before it builds anything.
func TestWallClockBisectRefusesParallel(t *testing.T) {
	lab, err := spec.Load("../../labs/uprobe-srcu.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lab.Matrix.CPUs, lab.Matrix.Measure = []int{2}, spec.MeasureWall
	var out bytes.Buffer
	_, _, err = Run(context.Background(), Options{Lab: lab, CacheDir: t.TempDir(), ResultsDir: t.TempDir(), Accel: "tcg",
		Out: &out, Figure: &results.Figure{Benchmark: "uprobe-nop", Producers: 1}, Parallel: 2})
	if err == nil || !strings.Contains(err.Error(), "--parallel 2") || !strings.Contains(err.Error(), "wall clock") {
		t.Fatalf("err = %v, want --parallel refused under the wall clock", err)
	}
}
