package lines

import (
	"lab/initramfs/protocol"
	"lab/internal/changepoint"
	"lab/internal/history"
	"math"
	"testing"
)

// Lines of Go-producer agents keep the threshold their noise needed; lines
// of the producer program get icount's own, wider for samples shorter
// than a second.
func TestDetectOptionsFollowTheMethod(t *testing.T) {
	for _, tc := range []struct {
		clock, method string
		minPct        float64
		want          float64
	}{
		{history.ClockICount, "", -1, changepoint.ICountGoProducers().MinPct},
		{history.ClockICount, protocol.Method, -1, changepoint.ICount().MinPct},
		{history.ClockWall, protocol.Method, -1, changepoint.Wall().MinPct},
		{history.ClockICount, protocol.Method, 0.5, 0.5},
		// A quarter-second sample weighs the sampler's own path four times.
		{history.ClockICount, protocol.Job{SampleMS: 250}.Method(), -1, 0.04},
		{history.ClockWall, protocol.Job{SampleMS: 250}.Method(), -1, changepoint.Wall().MinPct},
	} {
		o := detectOptions(history.LineKey{Clock: tc.clock, Method: tc.method}, tc.minPct)
		if math.Abs(o.MinPct-tc.want) > 1e-12 {
			t.Errorf("%s %q --min-pct %v: MinPct %v, want %v", tc.clock, tc.method, tc.minPct, o.MinPct, tc.want)
		}
	}
}
