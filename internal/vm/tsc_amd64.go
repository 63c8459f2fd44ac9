package vm

import (
	"sort"
	"time"
)

func rdtsc() uint64

// HostTSCkHz measures the host's TSC rate: the rate an x86_64 guest's TSC
// runs at under TCG, which reads the host's counter.
func HostTSCkHz() (int64, bool) {
	var khz []float64
	for i := 0; i < 3; i++ {
		t0, c0 := time.Now(), rdtsc()
		time.Sleep(30 * time.Millisecond)
		t1, c1 := time.Now(), rdtsc()
		khz = append(khz, float64(c1-c0)/float64(t1.Sub(t0).Nanoseconds())*1e6)
	}
	sort.Float64s(khz)
	return int64(khz[1]), khz[1] > 0
}
