package main

import (
	"errors"
	"testing"

	"lab/initramfs/protocol"
)

// A sampled profile takes more sample lengths while it has too few stacks,
// up to its bound, and sums what it took.
func TestSampleUntil(t *testing.T) {
	for _, tc := range []struct {
		name      string
		perSample uint64 // stack samples the program counts in each interval
		want      int    // intervals taken
	}{
		{"enough in one", protocol.MinStackSamples, 1},
		{"enough in three", protocol.MinStackSamples/3 + 1, 3},
		{"never enough", 1, protocol.MaxStackIntervals},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls int
			var counted uint64
			next := func() (protocol.Sample, error) {
				calls++
				counted += tc.perSample
				return protocol.Sample{IntervalNS: 250e6, Hits: 1000, Calls: 1001, ProducerNS: 240e6, Section: calls}, nil
			}
			s, err := sampleUntil(next, func() uint64 { return counted })
			if err != nil {
				t.Fatal(err)
			}
			n := int64(tc.want)
			want := protocol.Sample{IntervalNS: n * 250e6, Hits: uint64(n) * 1000, Calls: uint64(n) * 1001, ProducerNS: n * 240e6, Rate: 4000, Section: 1}
			if calls != tc.want || s != want {
				t.Errorf("%d intervals, sample %+v; want %d, %+v", calls, s, tc.want, want)
			}
		})
	}
	fail := errors.New("producer died")
	calls := 0
	_, err := sampleUntil(func() (protocol.Sample, error) {
		if calls++; calls == 2 {
			return protocol.Sample{}, fail
		}
		return protocol.Sample{IntervalNS: 1}, nil
	}, func() uint64 { return 0 })
	if !errors.Is(err, fail) {
		t.Errorf("a failed second interval: %v", err)
	}
}
