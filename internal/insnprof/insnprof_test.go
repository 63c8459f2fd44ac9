package insnprof

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"lab/initramfs/protocol"
	"lab/internal/results"
)

// The plugin's output read back: each section's counts by block, a
// section the guest never closed marked so, and lines lab cannot read
// refused with their number.
func TestReadSections(t *testing.T) {
	out := "# insncount x86_64 api 1\n# section 1 id 1 total 30 tbs 2\nffffffff81000010 20\n7f0000001000 10\n" +
		"# section 2 id 1 total 5 tbs 1 incomplete\nffffffff81000010 5\n# end sections 2\n"
	s, err := ReadSections(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(s) != 2 || s[1].Total != 30 || s[1].Counts[0xffffffff81000010] != 20 || s[1].Counts[0x7f0000001000] != 10 || !s[2].Incomplete || s[1].Incomplete {
		t.Errorf("sections %+v %+v", s[1], s[2])
	}
	for _, bad := range []string{"ffffffff81000010 20\n", "# section x id 1 total 3 tbs 1\n", "# section 1 id 1 total 3 tbs 1\nzz 1\n"} {
		if _, err := ReadSections(strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "line ") {
			t.Errorf("%q: %v, want an error naming the line", bad, err)
		}
	}
}

// A profile boot's results, named by function: user addresses together,
// kernel ones by the nearest text symbol at or below them, per operation
// against another kernel's; the lines sum to the whole change.
func TestSummarizeAndDiff(t *testing.T) {
	sm := filepath.Join(t.TempDir(), "System.map")
	os.WriteFile(sm, []byte("ffffffff81000000 T _stext\nffffffff81000100 t _raw_read_lock\nffffffff81000200 T uprobe_notify_resume\nffffffff81000300 D some_data\n"), 0o644)
	syms, err := LoadSystemMap(sm)
	if err != nil {
		t.Fatal(err)
	}
	for addr, want := range map[uint64]string{0xffffffff81000100: "_raw_read_lock", 0xffffffff81000150: "_raw_read_lock",
		0xffffffff81000380: "uprobe_notify_resume", 0x401000: User} {
		if got := syms.Name(addr); got != want {
			t.Errorf("%#x: %s, want %s", addr, got, want)
		}
	}
	boot := func(secs ...int) results.Boot {
		var ss []protocol.Sample
		for _, s := range secs {
			ss = append(ss, protocol.Sample{Hits: 1000, Section: s})
		}
		return results.Boot{Results: []protocol.Result{{Benchmark: "uprobe-nop", Producers: 1, Samples: ss}}}
	}
	before := map[int]*Section{1: {N: 1, Total: 870000, Counts: map[uint64]uint64{0xffffffff81000100: 6000, 0xffffffff81000200: 700000, 0x401000: 164000}}}
	after := map[int]*Section{1: {N: 1, Total: 860000, Counts: map[uint64]uint64{0xffffffff81000200: 696000, 0x401000: 164000}}}
	a, err := Summarize(boot(1), before, syms)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Summarize(boot(1), after, syms)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Summarize(boot(2), before, syms); err == nil {
		t.Errorf("a sample whose section the output lacks: no error")
	}
	w := Diff(a[0], b[0], -1.1494)
	if w.Before != 870 || w.After != 860 || len(w.Rows) != 2 || w.Rows[0].Function != "_raw_read_lock" || w.Rows[0].Delta != -6 ||
		w.Rows[1].Function != "uprobe_notify_resume" || w.Rows[1].Delta != -4 || math.Abs(w.Rows[0].Share-0.6) > 1e-9 {
		t.Errorf("where %+v", w)
	}
	if agree := w.Agreement(); agree > 0.01 {
		t.Errorf("the profile's %.4f %% against the figure's -1.1494 %%: %.3f %% apart", w.PathPct(), agree)
	}
	text := w.Text("")
	for _, want := range []string{"870.0 → 860.0 instructions a hit", "_raw_read_lock", "-6.00", "60%", "the lines sum to -10.00 instructions a hit"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	// A workload's figure counts its program's operations, and says so.
	a[0].Benchmark, b[0].Benchmark = "stress-mmap", "stress-mmap"
	if text := Diff(a[0], b[0], -1.1494).Text(""); !strings.Contains(text, "870.0 → 860.0 instructions an operation") {
		t.Errorf("a workload's block:\n%s", text)
	}
	a[0].Benchmark = "uprobe-nop"
	// The same profile on both sides: nothing moved, an empty block.
	if same := Diff(a[0], a[0], 0); len(same.Rows) != 0 || !strings.Contains(same.Text(""), "no function moved") {
		t.Errorf("an unchanged path: %+v", same)
	}
}

// The plugin is built for the QEMU lab finds, and a QEMU of another plugin
// API is refused by its version, before anything is built.
func TestSupported(t *testing.T) {
	for v, ok := range map[string]bool{"7.2.22": true, "7.0": true, "8.2.2": false, "9.1.0": false, "6.2.0": false} {
		if why := Supported(v); (why == "") != ok || !ok && !strings.Contains(why, "QEMU "+v) {
			t.Errorf("QEMU %s: %q", v, why)
		}
	}
}

// The plugin builds with the host's gcc for the QEMU it will load in, and
// a second call finds it in the cache.
func TestPluginBuilds(t *testing.T) {
	qemu, err := exec.LookPath("qemu-system-x86_64")
	if err != nil {
		t.Skip("no qemu-system-x86_64 here")
	}
	cache := t.TempDir()
	so, err := Plugin(t.Context(), cache, qemu)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Plugin(t.Context(), cache, qemu)
	if err != nil || again != so || filepath.Dir(so) != filepath.Join(cache, "plugins") {
		t.Errorf("built %s, then %s (%v)", so, again, err)
	}
}
