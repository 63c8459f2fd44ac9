package report

import (
	"flag"
	"fmt"
	"strings"

	"lab/internal/exitcode"
	"lab/internal/flagval"
	"lab/internal/verdict"
)

// GateFlags are the CI gates of lab run, merge, report and compare; their
// exit codes are exitcode.Regression and exitcode.Claims.
type GateFlags struct {
	FailOnRegression flagval.Bool
	RequireClaims    flagval.Bool
}

// RegisterFlags adds the gates to fs.
func (g *GateFlags) RegisterFlags(fs *flag.FlagSet) {
	fs.Var(&g.FailOnRegression, "fail-on-regression", fmt.Sprintf("exit %d when a non-control row is significantly slower", exitcode.Regression))
	fs.Var(&g.RequireClaims, "require-claims", fmt.Sprintf("exit %d unless every claim of the lab is reproduced", exitcode.Claims))
}

// GateError is a run or report that CI should fail, with its exit code.
type GateError struct {
	Code exitcode.Code
	Msg  string
}

func (e *GateError) Error() string { return e.Msg }

// Check applies the gates that were asked for to a report.
func (g *GateFlags) Check(d *Document) error {
	if g.FailOnRegression.V {
		reg := d.regressions()
		if len(reg) > 0 {
			return &GateError{exitcode.Regression, "significant regressions:\n  " + strings.Join(reg, "\n  ")}
		}
	}
	if g.RequireClaims.V {
		if ok, bad := verdict.ClaimsOK(d.Claims); !ok {
			return &GateError{exitcode.Claims, "claims not reproduced:\n  " + strings.Join(bad, "\n  ")}
		}
	}
	return nil
}

// regressions are --fail-on-regression's rows: each kernel's against the
// first, named by its comparison when the report names them.
func (d *Document) regressions() []string {
	var out []string
	for _, c := range d.Comparisons {
		if c.Against != d.Kernels[0] {
			continue
		}
		for _, r := range verdict.Regressions(c.Tables) {
			if d.named() {
				r = c.Name() + ": " + r
			}
			out = append(out, r)
		}
	}
	return out
}
