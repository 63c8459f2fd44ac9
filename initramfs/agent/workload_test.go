package main

import (
	"path/filepath"
	"strings"
	"testing"

	"lab/internal/benchmark"
)

// A workload's run becomes a sample only when its program succeeded and
// its metrics can be trusted; otherwise the row fails with what the
// program printed. The programs here are the host's sh standing in for
// stress-ng, writing the YAML it would.
func TestRunProgram(t *testing.T) {
	out := filepath.Join(t.TempDir(), "metrics.yaml")
	prog := benchmark.Program{Path: "/bin/sh", Metric: benchmark.MetricStressNG, Output: out}
	yaml := func(ops string) string {
		return "printf 'metrics:\\n    - stressor: mmap\\n      bogo-ops: " + ops + "\\n' > " + out
	}
	for _, tc := range []struct {
		name, script string
		ops          uint64
		wantErr      []string
	}{
		{name: "done", script: "echo working; " + yaml("24"), ops: 24},
		{name: "failed", script: "echo 'stress-ng: fail: mmap: out of memory'; exit 2",
			wantErr: []string{"exit status 2", "it printed:\nstress-ng: fail: mmap: out of memory"}},
		{name: "no metrics", script: "echo 'skipped: no mmap'", wantErr: []string{"read its metrics", "skipped: no mmap"}},
		{name: "malformed", script: "echo ran; " + yaml("lots"), wantErr: []string{`bogo-ops "lots"`, "it printed:\nran"}},
		{name: "nothing done", script: yaml("0"), wantErr: []string{"bogo-ops 0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := runProgram(prog, []string{"/bin/sh", "-c", tc.script})
			if len(tc.wantErr) > 0 {
				for _, w := range tc.wantErr {
					if err == nil || !strings.Contains(err.Error(), w) {
						t.Errorf("err %v, want one with %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Hits != tc.ops || s.Calls != tc.ops || s.IntervalNS <= 0 || s.Rate <= 0 || s.Section == 0 {
				t.Errorf("sample %+v, want %d operations over a measured interval in a section", s, tc.ops)
			}
		})
	}
}

// The end of a long output is kept, from a line's start.
func TestTail(t *testing.T) {
	long := strings.Repeat("x", 100) + "\nthe end\n"
	if got := tail([]byte(long), 20); got != "…\nthe end\n" {
		t.Errorf("tail %q", got)
	}
	if got := tail([]byte("short"), 20); got != "short" {
		t.Errorf("tail %q", got)
	}
}
