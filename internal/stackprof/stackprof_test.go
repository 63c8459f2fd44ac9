package stackprof

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"lab/initramfs/protocol"
	"lab/internal/insnprof"
	"lab/internal/results"
)

func symbols(t *testing.T) *insnprof.Symbols {
	t.Helper()
	path := filepath.Join(t.TempDir(), "System.map")
	m := "ffffffff81000000 T _stext\n" +
		"ffffffff81001000 T uprobe_notify_resume\n" +
		"ffffffff81002000 T _raw_read_lock\n" +
		"ffffffff81003000 T srcu_read_lock\n" +
		"ffffffff81004000 T exc_int3\n"
	if err := os.WriteFile(path, []byte(m), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := insnprof.LoadSystemMap(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSummarize(t *testing.T) {
	res := protocol.Result{Benchmark: "uprobe-nop", Producers: 1, Samples: []protocol.Sample{{Hits: 10}},
		Stacks: &protocol.StackProfile{Event: protocol.StackEvent, Hz: 997, Sample: protocol.Sample{Hits: 500}, Taken: 100, User: 60, Lost: 4,
			Stacks: []protocol.StackCount{
				// _raw_read_lock under uprobe_notify_resume under exc_int3,
				// with a recursion that children must count once.
				{N: 20, PCs: []uint64{0xffffffff81002010, 0xffffffff81001100, 0xffffffff81001200, 0xffffffff81004010}},
				{N: 16, PCs: []uint64{0xffffffff81001050, 0xffffffff81004010}},
			}}}
	failing := protocol.Result{Benchmark: "uprobe-nop", Producers: 2, Stacks: &protocol.StackProfile{Error: "perf_event_open: ENOENT"}}
	unprofiled := protocol.Result{Benchmark: "usermode-count", Producers: 1}
	out, failed := Summarize(results.Boot{Results: []protocol.Result{res, failing, unprofiled}}, symbols(t))
	if len(out) != 1 || len(failed) != 1 || !strings.Contains(failed[0], "p=2: perf_event_open") {
		t.Fatalf("profiles %+v, failed %q", out, failed)
	}
	p := out[0]
	if p.Samples != 100 || p.Ops != 500 || p.Hz != 997 || p.Event != "cpu-clock" {
		t.Errorf("profile %+v", p)
	}
	want := map[string][2]uint64{
		insnprof.User:          {60, 60},
		"uprobe_notify_resume": {16, 36},
		"_raw_read_lock":       {20, 20},
		"exc_int3":             {0, 36},
		Lost:                   {4, 4},
	}
	if len(p.Functions) != len(want) {
		t.Errorf("functions %+v", p.Functions)
	}
	for _, f := range p.Functions {
		if w, ok := want[f.Name]; !ok || w != [2]uint64{f.Self, f.Children} {
			t.Errorf("%s: self %d children %d, want %v", f.Name, f.Self, f.Children, w)
		}
	}
	if p.Functions[0].Name != insnprof.User {
		t.Errorf("most self samples first: %+v", p.Functions)
	}
}

func profile(samples uint64, self map[string]uint64) results.ProfileResult {
	p := results.ProfileResult{Benchmark: "uprobe-nop", Producers: 1, Samples: samples, Event: "cpu-clock", Hz: 997}
	for name, n := range self {
		p.Functions = append(p.Functions, results.FunctionCount{Name: name, Self: n, Children: n})
	}
	return p
}

func TestDiff(t *testing.T) {
	for _, tc := range []struct {
		name  string
		a, b  results.ProfileResult
		lines []string // the functions listed, in order
	}{
		{
			name: "a function gone, one grown",
			a:    profile(2000, map[string]uint64{"_raw_read_lock": 100, "uprobe_notify_resume": 400, "[user]": 1500}),
			b:    profile(2000, map[string]uint64{"srcu_read_lock": 40, "uprobe_notify_resume": 400, "[user]": 1560}),
			// _raw_read_lock −5 points (its standard error 0.49),
			// srcu_read_lock +2 (0.31); [user] +3 is within three of its
			// 1.34.
			lines: []string{"_raw_read_lock", "srcu_read_lock"},
		},
		{
			name:  "within the noise",
			a:     profile(200, map[string]uint64{"uprobe_notify_resume": 40, "[user]": 160}),
			b:     profile(200, map[string]uint64{"uprobe_notify_resume": 44, "[user]": 156}),
			lines: nil,
		},
		{
			name:  "no samples",
			a:     profile(0, nil),
			b:     profile(100, map[string]uint64{"[user]": 100}),
			lines: nil,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := Diff(tc.a, tc.b)
			var got []string
			for _, l := range w.Lines {
				got = append(got, l.Function)
			}
			if strings.Join(got, ",") != strings.Join(tc.lines, ",") {
				t.Errorf("lines %v, want %v", got, tc.lines)
			}
			text := w.Text("  ")
			for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
				if n := len([]rune(l)); n > 80 {
					t.Errorf("a line of %d columns: %q", n, l)
				}
			}
			if len(tc.lines) == 0 && !strings.Contains(text, "no function's share changed beyond the sampling's noise") {
				t.Errorf("an empty block does not say so:\n%s", text)
			}
		})
	}
}

func TestDiffShares(t *testing.T) {
	w := Diff(profile(2000, map[string]uint64{"_raw_read_lock": 100, "[user]": 1900}), profile(1000, map[string]uint64{"[user]": 1000}))
	i := slices.IndexFunc(w.Lines, func(l Line) bool { return l.Function == "_raw_read_lock" })
	if i < 0 {
		t.Fatalf("_raw_read_lock not listed: %+v", w.Lines)
	}
	l := w.Lines[i]
	if l.Function != "_raw_read_lock" || l.SelfBefore != 5 || l.SelfAfter != 0 || l.ChildrenBefore != 5 {
		t.Errorf("line %+v", l)
	}
	if !strings.Contains(w.Text(""), "2000 → 1000 samples (cpu-clock, 997 Hz a CPU)") {
		t.Errorf("heading:\n%s", w.Text(""))
	}
}
