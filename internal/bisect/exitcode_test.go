package bisect

import (
	"testing"

	"lab/internal/exitcode"
	"lab/internal/results"
)

// Every outcome of lab bisect has the code the exit-code table gives it.
func TestExitCode(t *testing.T) {
	for _, tc := range []struct {
		outcome string
		want    exitcode.Code
		name    string
	}{
		{Found, exitcode.Found, "found"},
		{Attributed, exitcode.Found, "found"},
		{NoChange, exitcode.NoChange, "no-change"},
		{Range, exitcode.Unclear, "unclear"},
		{Doubt, exitcode.Unclear, "unclear"},
		{"", exitcode.Failed, "failed"},
	} {
		got := ExitCode(tc.outcome)
		e, ok := exitcode.Lookup("bisect", got)
		if got != tc.want || !ok || e.Name != tc.name {
			t.Errorf("outcome %q: exit %d (%s), want %d (%s)", tc.outcome, got, e.Name, tc.want, tc.name)
		}
	}
}

// lab bisect --run answers git bisect run by HEAD's verdict: good, bad,
// skip, or stop when there is no verdict to give.
func TestRunExitCode(t *testing.T) {
	probed := func(verdict string) *results.Bisect {
		return &results.Bisect{Outcome: Probed, Culprit: 1, Steps: []results.BisectStep{{}, {Verdict: verdict}, {}}}
	}
	for _, tc := range []struct {
		name string
		bi   *results.Bisect
		want exitcode.Code
	}{
		{"like good", probed(LikeGood), exitcode.Good},
		{"no code change", probed(NoCode), exitcode.Good},
		{"like bad", probed(LikeBad), exitcode.Bad},
		{"neither", probed(Neither), exitcode.Skip},
		{"no bisect", nil, exitcode.Stop},
		{"ends do not differ", &results.Bisect{Outcome: NoChange}, exitcode.Stop},
	} {
		got := RunExitCode(tc.bi)
		if _, ok := exitcode.Lookup(exitcode.BisectRun, got); got != tc.want || !ok {
			t.Errorf("%s: exit %d, want %d", tc.name, got, tc.want)
		}
	}
}
