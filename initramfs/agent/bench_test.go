package main

import (
	"runtime"
	"testing"

	"lab/initramfs/protocol"
	"lab/internal/arch"
	"lab/internal/benchmark"
)

// Every benchmark of the table has a loop, an attach point and a runner in
// the agent: a benchmark cannot be added to the table and not to the agent.
func TestAgentRunsTheWholeTable(t *testing.T) {
	a, err := arch.ForGOARCH(runtime.GOARCH)
	if err != nil {
		t.Skip(err)
	}
	run := runners()
	for _, b := range benchmark.All() {
		pl, err := planFor(b.Name)
		if b.UnsupportedOn(a.Name) != "" {
			if err == nil {
				t.Errorf("%s: unsupported on %s, but the agent plans it", b.Name, a.Name)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", b.Name, err)
			continue
		}
		if pl.loop == "" && b.Program == nil {
			t.Errorf("%s: no loop and no program", b.Name)
		}
		if _, ok := run[b.Kind]; !ok {
			t.Errorf("%s: no runner for kind %s", b.Name, b.Kind)
		}
		switch b.Kind {
		case benchmark.Kprobe, benchmark.Kretprobe, benchmark.KprobeMulti, benchmark.KretprobeMulti, benchmark.TracefsKretprobe:
			if pl.symbol != a.SyscallPrefix+b.Loop {
				t.Errorf("%s: attaches to %q", b.Name, pl.symbol)
			}
		}
	}
	if _, err := planFor("no-such-bench"); err == nil {
		t.Error("an unknown benchmark was planned")
	}
}

// A section is as disturbed as its worst sample.
func TestDisturbed(t *testing.T) {
	clean := protocol.Sample{IntervalNS: 1e9, ProducerNS: 1e9 - 100e3}
	hit := protocol.Sample{IntervalNS: 1e9, ProducerNS: 1e9 - 464e3}
	two := protocol.Sample{IntervalNS: 1e9, ProducerNS: 2e9 - 2*100e3}
	for _, tc := range []struct {
		samples   []protocol.Sample
		producers int
		want      int64
	}{
		{nil, 1, 0},
		{[]protocol.Sample{clean}, 1, 100e3},
		{[]protocol.Sample{clean, hit, clean}, 1, 464e3},
		{[]protocol.Sample{two}, 2, 100e3},
		// The producers had none of it: the host did not run the guest
		// while they started (CI: a 250 ms sample of 1.26 s, no hit).
		{[]protocol.Sample{{IntervalNS: 1.26e9}}, 1, 1.26e9},
	} {
		if got := disturbed(tc.samples, tc.producers); got != tc.want {
			t.Errorf("%+v at %d producers: %d ns, want %d", tc.samples, tc.producers, got, tc.want)
		}
	}
	if disturbed([]protocol.Sample{hit}, 1) <= protocol.MaxElsewhereNS || disturbed([]protocol.Sample{clean}, 1) > protocol.MaxElsewhereNS {
		t.Errorf("the disturbed sample measured in a guest (464 µs elsewhere) and a clean one (100 µs) fall on the wrong sides of %d ns", protocol.MaxElsewhereNS)
	}
	// Under the wall clock only a starved sample is taken again: half of
	// a 250 ms sample, not the 10 % a busy host takes from any.
	wall := protocol.Job{SampleMS: 250, RetakeAboveNS: 125e6}
	busy := protocol.Sample{IntervalNS: 250e6, ProducerNS: 225e6}
	starved := protocol.Sample{IntervalNS: 1.26e9}
	if disturbed([]protocol.Sample{busy}, 1) > wall.RetakeAbove() || disturbed([]protocol.Sample{starved}, 1) <= wall.RetakeAbove() {
		t.Errorf("a busy wall-clock sample and a starved one fall on the wrong sides of %d ns", wall.RetakeAbove())
	}
	if (protocol.Job{}).RetakeAbove() != protocol.MaxElsewhereNS {
		t.Errorf("a job without RetakeAboveNS retakes above %d ns, want %d", (protocol.Job{}).RetakeAbove(), protocol.MaxElsewhereNS)
	}
}
