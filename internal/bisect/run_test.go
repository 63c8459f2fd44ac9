package bisect

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"lab/initramfs/protocol"
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

// TestFollowKeepsTheLabsOrder: the job cut down to a figure and the
// controls keeps the lab's order, so the ends' boots a track made with
// the lab's job and the bisect's own boots run their benchmarks alike.
func TestFollowKeepsTheLabsOrder(t *testing.T) {
	for _, tc := range []struct {
		name   string
		lab    []string
		figure string
		want   []string
	}{
		{"controls after the figure", []string{"uprobe-nop", "syscall-count", "usermode-count"}, "uprobe-nop", []string{"uprobe-nop", "syscall-count", "usermode-count"}},
		{"controls first", []string{"usermode-count", "kprobe", "uprobe-nop", "syscall-count"}, "uprobe-nop", []string{"usermode-count", "uprobe-nop", "syscall-count"}},
		{"figure not in the lab's job", []string{"syscall-count"}, "kretprobe", []string{"kretprobe", "syscall-count"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &bisector{fullJob: protocol.Job{Benchmarks: tc.lab, Producers: []int{1}}}
			b.follow(results.Figure{Benchmark: tc.figure, Producers: 1}, "test")
			if !slices.Equal(b.plan.Job.Benchmarks, tc.want) {
				t.Errorf("job %v, want %v", b.plan.Job.Benchmarks, tc.want)
			}
		})
	}
}
