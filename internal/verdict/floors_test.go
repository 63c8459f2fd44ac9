package verdict

import (
	"math"
	"testing"
	"time"
)

// The least icount floor is 0.01 % for samples of a second or more, and
// grows as the sample shortens, with the sampler's share of it.
func TestMinICountFloorPctFor(t *testing.T) {
	for _, tc := range []struct {
		sample time.Duration
		want   float64
	}{
		{0, 0.01},
		{time.Second, 0.01},
		{5 * time.Second, 0.01},
		{500 * time.Millisecond, 0.02},
		{250 * time.Millisecond, 0.04},
		{100 * time.Millisecond, 0.1},
	} {
		if got := MinICountFloorPctFor(tc.sample); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("sample %v: least floor %v %%, want %v %%", tc.sample, got, tc.want)
		}
	}
}

// A workload's own floor holds where it is wider than its samples'; a
// probe benchmark keeps the samples'.
func TestMinICountFloorPctOf(t *testing.T) {
	for _, tc := range []struct {
		sample time.Duration
		name   string
		want   float64
	}{
		{250 * time.Millisecond, "uprobe-nop", 0.04},
		{250 * time.Millisecond, "stress-futex", 5},
		{time.Second, "stress-mmap", 0.7},
		{10 * time.Millisecond, "stress-pipe", 1},
	} {
		if got := MinICountFloorPctOf(tc.sample, tc.name); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s at %v: %.3f %%, want %.3f %%", tc.name, tc.sample, got, tc.want)
		}
	}
}
