package exitcode

import (
	"slices"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"
)

// The table is well formed: every entry names known commands, entries run
// by code, and no command has one code with two different rerun advices
// that an engine would read (host's no-kvm is an answer, not advice).
func TestTable(t *testing.T) {
	known := Commands()
	prev := Code(-1)
	for _, e := range Table() {
		if e.Code < prev {
			t.Errorf("%d %s comes after %d: keep the table by code", e.Code, e.Name, prev)
		}
		prev = e.Code
		if e.Name == "" || strings.Contains(e.Name, " ") || e.Meaning == "" || len(e.Commands) == 0 {
			t.Errorf("entry %+v: want a one-word name, a meaning and commands", e)
		}
		for _, c := range e.Commands {
			if !slices.Contains(known, c) {
				t.Errorf("%d %s: unknown command %q", e.Code, e.Name, c)
			}
		}
	}
	for _, c := range known {
		seen := map[Code]string{}
		for _, e := range For(c) {
			if other, ok := seen[e.Code]; ok && c != "host" {
				t.Errorf("lab %s: %d is both %s and %s", c, e.Code, other, e.Name)
			}
			seen[e.Code] = e.Name
		}
		if len(seen) < 2 {
			t.Errorf("lab %s documents %d codes: every command has success and a failure", c, len(seen))
		}
	}
}

// What the Kubernetes and Slurm templates rely on, and the numbers CI users
// already depend on: changing one of these is changing lab's interface.
func TestStableNumbers(t *testing.T) {
	for _, tc := range []struct {
		command string
		code    Code
		name    string
	}{
		{"run", 0, "ok"}, {"run", 1, "failed"}, {"run", 2, "usage"}, {"run", 3, "regression"}, {"run", 4, "claims"},
		{"run", 5, "infrastructure"}, {"run", 130, "interrupted"}, {"run", 143, "terminated"},
		{"bisect", 0, "found"}, {"bisect", 3, "no-change"}, {"bisect", 4, "unclear"}, {"bisect", 5, "infrastructure"},
		{BisectRun, 0, "good"}, {BisectRun, 1, "bad"}, {BisectRun, 125, "skip"}, {BisectRun, 128, "stop"},
		{"report", 3, "regression"}, {"report", 4, "claims"}, {"compare", 3, "regression"}, {"merge", 5, "infrastructure"}, {"host", 1, "failed"},
		{HistoryDetect, 0, "none"}, {HistoryDetect, 3, "regression"}, {HistoryDetect, 4, "improvement"}, {"history", 1, "failed"},
	} {
		if e, ok := Lookup(tc.command, tc.code); !ok || e.Name != tc.name {
			t.Errorf("lab %s exit %d: %q (%v), want %q", tc.command, tc.code, e.Name, ok, tc.name)
		}
	}
	if got := Codes("run", Futile); !slices.Equal(got, []Code{Failed, Usage}) {
		t.Errorf("run's futile codes %v, want 1, 2", got)
	}
	if got := Codes("run", MayHelp); !slices.Equal(got, []Code{Infra, Interrupted, Terminated}) {
		t.Errorf("run's retryable codes %v, want 5, 130, 143", got)
	}
	if Signalled(syscall.SIGINT) != Interrupted || Signalled(syscall.SIGTERM) != Terminated {
		t.Errorf("signals: %d %d", Signalled(syscall.SIGINT), Signalled(syscall.SIGTERM))
	}
}

// A code a command does not document becomes its plain failure.
func TestDocumented(t *testing.T) {
	for _, tc := range []struct {
		command  string
		code     Code
		want     Code
		hasEntry bool
	}{
		{"run", Infra, Infra, true},
		{"report", Infra, Failed, false},
		{"table", Regression, Failed, false},
		{"plan", Interrupted, Failed, false},
		{BisectRun, Usage, Stop, false},
		{BisectRun, Infra, Stop, false},
		{BisectRun, Skip, Skip, true},
	} {
		if got := Documented(tc.command, tc.code); got != tc.want {
			t.Errorf("Documented(%s, %d) = %d, want %d", tc.command, tc.code, got, tc.want)
		}
		if _, ok := Lookup(tc.command, tc.code); ok != tc.hasEntry {
			t.Errorf("Lookup(%s, %d): %v", tc.command, tc.code, ok)
		}
	}
}

// lab help prints every entry within 80 columns, and a command's help
// prints its own codes only.
func TestHelp(t *testing.T) {
	h := Help()
	for _, l := range strings.Split(h, "\n") {
		if n := utf8.RuneCountInString(l); n > width {
			t.Errorf("%d columns: %q", n, l)
		}
	}
	for _, e := range Table() {
		if !strings.Contains(h, e.Name) {
			t.Errorf("help lacks %s", e.Name)
		}
	}
	b := CommandHelp("bisect")
	for _, w := range []string{"Exit codes of lab bisect:", "no-change", "Exit codes of lab bisect --run:", "125  skip"} {
		if !strings.Contains(b, w) {
			t.Errorf("bisect's help lacks %q:\n%s", w, b)
		}
	}
	hd := CommandHelp("history")
	for _, w := range []string{"Exit codes of lab history:", "Exit codes of lab history detect:", "4  improvement"} {
		if !strings.Contains(hd, w) {
			t.Errorf("history's help lacks %q:\n%s", w, hd)
		}
	}
	r := CommandHelp("run")
	if !strings.Contains(r, "regression") || strings.Contains(r, "no-change") || strings.Contains(r, "--run") {
		t.Errorf("run's help:\n%s", r)
	}
	if got := List([]Code{5, 130, 143}, "and"); got != "5, 130 and 143" {
		t.Errorf("List: %q", got)
	}
	if got := List([]Code{1, 2}, ""); got != "1, 2" {
		t.Errorf("List: %q", got)
	}
}
