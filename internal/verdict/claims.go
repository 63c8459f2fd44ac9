package verdict

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"lab/internal/results"
	"lab/internal/stats"
	"lab/internal/variant"
)

// Claim verdicts.
const (
	Reproduced  = "reproduced"   // significant, in the claimed direction, at least the claimed size
	Contradicts = "contradicted" // significant the other way
	NotShown    = "not shown"    // not significant (or smaller than claimed)
	NotMeasured = "not measured" // no row of this run matches the claim
)

// ClaimCheck is one claim judged on one table row.
type ClaimCheck struct {
	Table   string       `json:"table"` // the table's shape, e.g. "x86_64 · 2 vCPUs · tcg · wall"
	Row     string       `json:"row"`   // "uprobe-nop p=1" or "kretprobe-flock p2/p1"
	Verdict string       `json:"verdict"`
	Change  stats.Change `json:"change"`
}

// ClaimResult is a claim and what this run says about it.
type ClaimResult struct {
	Claim   results.Claim `json:"claim"`
	Verdict string        `json:"verdict"` // overall: contradicted > reproduced > not shown > not measured
	Checks  []ClaimCheck  `json:"checks"`
	// Series is the series judged, in a run of several (each series
	// against the baseline); "" in a run of one.
	Series variant.Variant `json:"series,omitempty"`
}

// Text is the claim as a sentence, with the series it judges in a run of
// several: "v2: uprobe-nop, producers 1: patched faster".
func (c ClaimResult) Text() string {
	if c.Series != "" {
		return string(c.Series) + ": " + ClaimText(c.Claim)
	}
	return ClaimText(c.Claim)
}

// Text is the claim as a sentence: "uprobe-nop, 1 producer: patched faster".
func ClaimText(c results.Claim) string {
	var p []string
	for _, n := range c.Producers {
		p = append(p, fmt.Sprint(n))
	}
	what := c.Benchmark
	if c.Scaling {
		what += " scaling (rate(P)/rate(1))"
	}
	s := fmt.Sprintf("%s, producers %s: patched %s", what, strings.Join(p, ","), c.Direction)
	if len(c.Producers) == 0 {
		s = fmt.Sprintf("%s: patched %s", what, c.Direction)
	}
	if c.Min != "" {
		s += " by at least " + c.Min
	}
	return s
}

// CheckClaims judges every claim against every table.
func CheckClaims(claims []results.Claim, tables []Table) []ClaimResult {
	var out []ClaimResult
	for _, c := range claims {
		res := ClaimResult{Claim: c, Verdict: NotMeasured}
		min, _ := c.MinPct()
		for _, t := range tables {
			rows := t.Rows
			if c.Scaling {
				rows = t.Scaling
			}
			for _, r := range rows {
				if c.Scaling && r.Metric != MetricScaling {
					continue
				}
				if r.Benchmark != c.Benchmark || (len(c.Producers) > 0 && !slices.Contains(c.Producers, r.Producers)) {
					continue
				}
				if r.Change.NoData {
					continue
				}
				v := judge(c.Direction, min, r.Change)
				res.Checks = append(res.Checks, ClaimCheck{Table: t.Name(), Row: r.Label(), Verdict: v, Change: r.Change})
			}
		}
		res.Verdict = overall(res.Checks)
		out = append(out, res)
	}
	return out
}

func judge(direction string, minPct float64, c stats.Change) string {
	switch {
	case c.Verdict == stats.Same:
		return NotShown
	case c.Verdict != direction:
		return Contradicts
	case minPct > 0 && math.Abs(c.Pct) < minPct:
		return NotShown
	}
	return Reproduced
}

func overall(checks []ClaimCheck) string {
	v := NotMeasured
	rank := map[string]int{NotMeasured: 0, NotShown: 1, Reproduced: 2, Contradicts: 3}
	for _, c := range checks {
		if rank[c.Verdict] > rank[v] {
			v = c.Verdict
		}
	}
	return v
}

// Regressions lists the rows where patched is significantly slower, for
// --fail-on-regression. Controls are left out: they measure the host.
func Regressions(tables []Table) []string {
	var out []string
	for _, t := range tables {
		for _, rows := range [][]Row{t.Rows, t.Scaling} {
			for _, r := range rows {
				if !r.Control && r.Change.Verdict == stats.Slower {
					out = append(out, regression(t, r))
				}
			}
		}
	}
	return out
}

// ClaimsOK reports whether every claim was reproduced somewhere.
func ClaimsOK(claims []ClaimResult) (bool, []string) {
	var bad []string
	for _, c := range claims {
		if c.Verdict != Reproduced {
			bad = append(bad, fmt.Sprintf("%s: %s", c.Text(), c.Verdict))
		}
	}
	return len(bad) == 0, bad
}

// TooNoisy gives, when no non-control row of tables moved significantly
// while a control moved by DriftPct or more (the wall clock's witness of
// the host), what the controls did: a "no change" the host's own drift
// could hide is no verdict. Nil when a row moved, or no control drifted
// (icount tables never drift).
func TooNoisy(tables []Table) []string {
	var drift []string
	for _, t := range tables {
		for _, rows := range [][]Row{t.Rows, t.Scaling} {
			for _, r := range rows {
				if !r.Control && (r.Change.Verdict == stats.Slower || r.Change.Verdict == stats.Faster) {
					return nil
				}
			}
		}
		for _, d := range t.Drift {
			drift = append(drift, t.Name()+": "+d)
		}
	}
	return drift
}

// regression says one significantly slower row: "x86_64 · 1 vCPU · TCG ·
// icount: uprobe-nop p=1 slower by 0.021 % (exact; ...)".
func regression(t Table, r Row) string {
	if r.Change.Exact {
		return fmt.Sprintf("%s: %s %s", t.Name(), r.Label(), r.Change.Words())
	}
	return fmt.Sprintf("%s: %s %+.2f %% (p=%.3f)", t.Name(), r.Label(), r.Change.Pct, r.Change.P)
}
