package report

import (
	"flag"
	"strings"

	"lab/internal/flagval"
	"lab/internal/verdict"
)

// Exit codes of the CI gates.
const (
	ExitRegression = 3 // --fail-on-regression: a non-control row is significantly slower
	ExitClaims     = 4 // --require-claims: a claim of the lab is not reproduced
)

// GateFlags are the CI gates of lab run, report and compare.
type GateFlags struct {
	FailOnRegression flagval.Bool
	RequireClaims    flagval.Bool
}

// RegisterFlags adds the gates to fs.
func (g *GateFlags) RegisterFlags(fs *flag.FlagSet) {
	fs.Var(&g.FailOnRegression, "fail-on-regression", "exit 3 when a non-control row is significantly slower")
	fs.Var(&g.RequireClaims, "require-claims", "exit 4 unless every claim of the lab is reproduced")
}

// GateError is a run or report that CI should fail, with its exit code.
type GateError struct {
	Code int
	Msg  string
}

func (e *GateError) Error() string { return e.Msg }

// Check applies the gates that were asked for to a report.
func (g *GateFlags) Check(d *Document) error {
	if g.FailOnRegression.V {
		if reg := verdict.Regressions(d.Tables); len(reg) > 0 {
			return &GateError{ExitRegression, "significant regressions:\n  " + strings.Join(reg, "\n  ")}
		}
	}
	if g.RequireClaims.V {
		if ok, bad := verdict.ClaimsOK(d.Claims); !ok {
			return &GateError{ExitClaims, "claims not reproduced:\n  " + strings.Join(bad, "\n  ")}
		}
	}
	return nil
}
