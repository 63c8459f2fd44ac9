package benchmark

import (
	"os"
	"strings"
	"testing"
)

var loops = map[string]bool{LoopNop: true, LoopPush: true, LoopRet: true, LoopGetpgid: true, LoopFlock: true}

// Every entry is complete and consistent: a known loop, kprobe kinds on
// syscalls, uprobe kinds on user targets, unique names.
func TestTable(t *testing.T) {
	seen := map[string]bool{}
	for _, b := range All() {
		if seen[b.Name] {
			t.Errorf("%s twice", b.Name)
		}
		seen[b.Name] = true
		if b.Kind == Workload {
			if b.Program == nil || b.Program.Package == "" || b.Program.Metric == "" || b.Limits == "" || b.About == "" || b.Loop != "" || b.Control {
				t.Errorf("%s: a workload needs a program with a package and a metric, its limits, and no loop: %+v", b.Name, b)
			}
			continue
		}
		if !loops[b.Loop] || b.Kind == "" || b.About == "" || b.Program != nil {
			t.Errorf("%s: incomplete %+v", b.Name, b)
		}
		user := b.Loop == LoopNop || b.Loop == LoopPush || b.Loop == LoopRet
		switch b.Kind {
		case Uprobe, Uretprobe, UprobeMulti, UretprobeMulti:
			if !user {
				t.Errorf("%s: a uprobe needs a user-space target, not %s", b.Name, b.Loop)
			}
		case Kprobe, Kretprobe, KprobeMulti, KretprobeMulti, TracefsKretprobe:
			if user {
				t.Errorf("%s: a kprobe needs a syscall, not %s", b.Name, b.Loop)
			}
		}
		if b.Control && b.Probe() {
			t.Errorf("%s: a control must not probe anything", b.Name)
		}
	}
	if got := strings.Join(Controls(), ","); got != "usermode-count,syscall-count" {
		t.Errorf("controls %s", got)
	}
}

// docs/benchmarks.md shows `lab benchmarks`, so a benchmark added here is
// documented; the README points to it.
func TestDocsListTheTable(t *testing.T) {
	page, err := os.ReadFile("../../docs/benchmarks.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), Doc()) {
		t.Errorf("docs/benchmarks.md does not hold the output of `lab benchmarks`; paste it:\n%s", Doc())
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "(docs/benchmarks.md)") {
		t.Error("README.md does not point to docs/benchmarks.md")
	}
}

// Every workload's package is one scripts/install-deps installs, with
// --workloads and with --test (the suite runs them).
func TestInstallDepsHasTheWorkloads(t *testing.T) {
	script, err := os.ReadFile("../../scripts/install-deps")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range All() {
		if b.Program == nil {
			continue
		}
		for _, flag := range []string{"--workloads)", "--test)"} {
			_, rest, _ := strings.Cut(string(script), flag)
			line, _, _ := strings.Cut(rest, ";;")
			if !strings.Contains(" "+line+" ", " "+b.Program.Package+" ") && !strings.Contains(line, " "+b.Program.Package+"\"") {
				t.Errorf("%s: scripts/install-deps %s does not install %s", b.Name, strings.TrimSuffix(flag, ")"), b.Program.Package)
			}
		}
	}
}

// A workload's figure is read from what its program wrote, and nothing
// lab cannot trust becomes a figure.
func TestStressNGOps(t *testing.T) {
	p := *stressNG("mmap", 10)
	for _, tc := range []struct {
		name, yaml string
		want       uint64
		wantErr    string
	}{
		{name: "one stressor", want: 24, yaml: "---\nsystem-info:\n      run-by: root\n\nmetrics:\n    - stressor: mmap\n      bogo-ops: 24\n      wall-clock-time: 0.1\n...\n"},
		{name: "two instances' stressors", want: 30, yaml: "metrics:\n    - stressor: mmap\n      bogo-ops: 10\n    - stressor: futex\n      bogo-ops: 20\n"},
		{name: "bogo-ops outside the metrics", wantErr: "no bogo-ops", yaml: "system-info:\n      bogo-ops: 5\n"},
		{name: "none", wantErr: "no bogo-ops", yaml: ""},
		{name: "malformed", wantErr: `bogo-ops "many"`, yaml: "metrics:\n    - stressor: mmap\n      bogo-ops: many\n"},
		{name: "no work done", wantErr: "bogo-ops 0", yaml: "metrics:\n    - stressor: mmap\n      bogo-ops: 0\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := p.Ops([]byte(tc.yaml))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %d, %v; want an error with %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %d, %v; want %d", got, err, tc.want)
			}
		})
	}
	if argv := p.Argv(3); strings.Join(argv[:3], " ") != "/usr/bin/stress-ng --mmap 3" || !strings.Contains(strings.Join(argv, " "), "--yaml "+StressNGYAML) {
		t.Errorf("argv %q", argv)
	}
}
