package changepoint

import "testing"

// BenchmarkDetect is the speed target: 50 series of 10,000 points
// each (one op), under icount noise with a step and a layout shift, and
// under the wall clock's. The target is an op under a second.
func BenchmarkDetect(b *testing.B) {
	for _, tc := range []struct {
		name string
		sd   float64
		opt  Options
	}{
		{"icount", icountSD, ICount()},
		{"wall", wallSD, Wall()},
	} {
		series := make([][]float64, 50)
		for i := range series {
			series[i] = stream(uint64(i), 10000, tc.sd, step{At: 3000, Pct: 0.06}, step{At: 6000, Pct: 10})
		}
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				for _, s := range series {
					if len(Detect(s, tc.opt)) == 0 {
						b.Fatal("the planted step was not found")
					}
				}
			}
		})
	}
}
