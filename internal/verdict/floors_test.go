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
