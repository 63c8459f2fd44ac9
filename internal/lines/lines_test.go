package lines

import (
	"lab/initramfs/protocol"
	"lab/internal/changepoint"
	"lab/internal/history"
	"testing"
)

// Lines of Go-producer agents keep the threshold their noise needed; lines
// of the producer program get icount's own.
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
	} {
		o := detectOptions(history.LineKey{Clock: tc.clock, Method: tc.method}, tc.minPct)
		if o.MinPct != tc.want {
			t.Errorf("%s %q --min-pct %v: MinPct %v, want %v", tc.clock, tc.method, tc.minPct, o.MinPct, tc.want)
		}
	}
}
