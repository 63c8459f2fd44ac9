package bisect

import (
	"lab/internal/exitcode"
	"lab/internal/results"
)

// RunExitCode is the git bisect run exit code of a --run bisect.
func RunExitCode(bi *results.Bisect) exitcode.Code {
	if bi == nil || bi.Outcome != Probed || bi.Culprit <= 0 || bi.Culprit >= len(bi.Steps) {
		return exitcode.Stop
	}
	switch bi.Steps[bi.Culprit].Verdict {
	case LikeGood, NoCode:
		return exitcode.Good
	case LikeBad:
		return exitcode.Bad
	}
	return exitcode.Skip
}

// ExitCode is the exit code for a bisect's outcome.
func ExitCode(outcome string) exitcode.Code {
	switch outcome {
	case Found, Attributed:
		return exitcode.Found
	case NoChange:
		return exitcode.NoChange
	case Range, Doubt:
		return exitcode.Unclear
	}
	return exitcode.Failed
}
