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
		if !loops[b.Loop] || b.Kind == "" || b.About == "" {
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
