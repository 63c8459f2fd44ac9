package main

import (
	"runtime"
	"testing"

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
		if pl.loop == "" {
			t.Errorf("%s: no loop", b.Name)
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
