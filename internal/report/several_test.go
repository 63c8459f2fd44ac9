package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"lab/internal/exitcode"
	"lab/internal/results"
	"lab/internal/variant"
)

// severalRun is fakeRun as a run of two series: its patched boots are v1's,
// and v2 boots as often, its uprobe-nop k times v1's.
func severalRun(k float64) *results.Run {
	r := fakeRun()
	r.Series = []results.Series{{Name: "fake", Variant: "v1", Mode: "apply", ModeReason: "apply: no series is in the source", Patches: r.First().Patches},
		{Name: "fake-v2", Variant: "v2", Mode: "apply"}}
	n := len(r.Boots)
	for i := range n {
		if r.Boots[i].Variant != variant.Patched {
			continue
		}
		r.Boots[i].Variant = "v1"
		b := r.Boots[i]
		b.Index, b.Variant = len(r.Boots)+1, "v2"
		b.Results = append(b.Results[:0:0], b.Results...)
		for j := range b.Results {
			res := &b.Results[j]
			res.Samples = append(res.Samples[:0:0], res.Samples...)
			if res.Benchmark == "uprobe-nop" {
				res.Samples[0].Rate *= k
				res.Samples[0].Hits = uint64(res.Samples[0].Rate)
			}
		}
		r.Boots = append(r.Boots, b)
	}
	return r
}

// A run of several series: every series against the baseline and each
// against the one before, a column per kernel, claims per series.
func TestSeveralSeriesReport(t *testing.T) {
	d := Build(severalRun(1.1), "RUN", "test")
	var got []string
	for _, c := range d.Comparisons {
		r := c.Tables[0].Rows[0] // uprobe-nop p=1
		got = append(got, fmt.Sprintf("%s: %s %s %.0f%%", c.Name(), r.Label(), r.Change.Verdict, r.Change.Pct))
	}
	want := "v1 vs baseline: uprobe-nop p=1 faster 10%; v2 vs baseline: uprobe-nop p=1 faster 21%; v2 vs v1: uprobe-nop p=1 faster 10%"
	if strings.Join(got, "; ") != want {
		t.Errorf("comparisons:\n%s\nwant\n%s", strings.Join(got, "; "), want)
	}
	if len(d.Kernels) != 3 || len(d.Tables) != 2 {
		t.Errorf("kernels %v, %d tables against the baseline", d.Kernels, len(d.Tables))
	}
	if len(d.Claims) != 8 || d.Claims[0].Series != "v1" || d.Claims[4].Series != "v2" || d.Claims[0].Verdict != "reproduced" {
		t.Errorf("claims: %d, first %+v", len(d.Claims), d.Claims[0])
	}

	text := Text(d, false)
	md := Markdown(d)
	csv := CSV(d)
	plain := Plain(d)
	js, err := JSON(d)
	if err != nil {
		t.Fatal(err)
	}
	html, err := HTML(d)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		format, text string
		want         []string
	}{
		{"text", text, []string{"v1: fake", "baseline: apply: no series is in the source", "v2 vs v1: x86_64 · 2 vCPUs · TCG · wall: v2 is faster",
			" baseline M/s ", " v1 M/s ", " v2 M/s ", "Δ v1 vs baseline [95% CI]", "Δ v2 vs baseline [95% CI]", "Δ v2 vs v1 [95% CI]",
			"5+5+5 boots", "claim: v2: uprobe-nop, producers 1: patched faster: REPRODUCED"}},
		{"markdown", md, []string{"| benchmark | producers | baseline M/s (mean ± sd) | v1 M/s (mean ± sd) | v2 M/s (mean ± sd) | Δ v1 vs baseline [95% CI] | p |  | Δ v2 vs baseline [95% CI] | p |  | Δ v2 vs v1 [95% CI] | p |  |",
			"| v1: uprobe-nop, producers 1: patched faster | **reproduced** |", "## Provenance", "- series: v1: fake (apply, sha256 ); v2: fake-v2 (apply, sha256 )",
			"-   patch v1 0001-x.patch: x: y (sha256 cdcdcdcdcdcd)"}},
		{"csv", csv, []string{",tool,variant,against\n", ",v2,v1\n"}},
		{"80 columns", plain, []string{"v2 vs v1                    P           v1           v2    change      p"}},
		{"html", html, []string{"<th>Δ v2 vs v1 [95% CI]</th>", "change, v2 against v1, 95 % CI", "● v1</span>", "<th>v1 (mean ± sd)</th>", "<td>v2: uprobe-nop, producers 1: patched faster</td>"}},
		{"job summary", Lead(d), []string{"v2 vs v1: x86_64 · 2 vCPUs · TCG · wall: v2 is faster", "| v2: uprobe-nop, producers 1: patched faster | **reproduced** |"}},
		{"json", string(js), []string{`"kernels": [`, `"comparisons": [`, `"against": "v1"`, `"series": "v2"`}},
	} {
		for _, w := range tc.want {
			if !strings.Contains(tc.text, w) {
				t.Errorf("%s lacks %q:\n%s", tc.format, w, tc.text)
			}
		}
	}
	junit, err := JUnit(d).XML()
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`classname="lab.fake.v2.x86_64`, `name="claim 8: v2: uprobe-nop, producers 64: patched faster"`} {
		if !strings.Contains(string(junit), w) {
			t.Errorf("junit lacks %q:\n%s", w, junit)
		}
	}
	files := BenchFiles(severalRun(1.1))
	if len(files) != 3 || !strings.Contains(files["v2.txt"], "BenchmarkUprobeNop/") || files["baseline.txt"] == files["v1.txt"] {
		t.Errorf("bench files: %d, v2.txt:\n%s", len(files), files["v2.txt"])
	}
	// A line per comparison and row, and the header.
	rows := len(d.Comparisons[0].Tables[0].Rows) + len(d.Comparisons[0].Tables[0].Scaling)
	if n := strings.Count(csv, "\n"); n != 1+3*rows {
		t.Errorf("csv has %d lines, want %d", n, 1+3*rows)
	}
	// Each row of the terminal table has the three kernels' figures.
	seen := 0
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, " uprobe-nop ") && !strings.Contains(line, "scaling") {
			seen++
			if strings.Count(line, "/prod)") != 3 {
				t.Errorf("row without three kernels: %q", line)
			}
		}
	}
	if seen != 2 {
		t.Errorf("%d uprobe-nop rate rows in the table, want 2 (producers 1 and 2)", seen)
	}
	for _, w := range []string{"(baseline column)", "patched M/s"} {
		if strings.Contains(text, w) {
			t.Errorf("text names %q, which a run of several has not", w)
		}
	}
}

// --fail-on-regression judges each series against the baseline, not
// against the one before: v2 slower than v1 but faster than the baseline
// passes; v2 slower than the baseline fails, named.
func TestSeveralSeriesGates(t *testing.T) {
	g := GateFlags{}
	g.FailOnRegression.Set("true")
	if err := g.Check(Build(severalRun(0.95), "RUN", "test")); err != nil {
		t.Errorf("v2 5 %% below v1 (and above the baseline) failed the gate: %v", err)
	}
	err := g.Check(Build(severalRun(0.8), "RUN", "test"))
	var ge *GateError
	if !errors.As(err, &ge) || ge.Code != exitcode.Regression || !strings.Contains(err.Error(), "v2 vs baseline: x86_64 · 2 vCPUs · TCG · wall: uprobe-nop p=1 -12") {
		t.Errorf("v2 12 %% below the baseline: %v", err)
	}
	if strings.Contains(fmt.Sprint(err), "v2 vs v1") {
		t.Errorf("the gate judged v2 against v1: %v", err)
	}
}

// lab compare of three runs: a column per run, named by its run id, each
// against the first.
func TestCompareSeveralRuns(t *testing.T) {
	a, b, c := fakeRun(), fakeRun(), fakeRun()
	b.RunID, c.RunID = "20260102-000000", "20260103-000000"
	for i := range c.Boots {
		for j := range c.Boots[i].Results {
			s := &c.Boots[i].Results[j].Samples[0]
			s.Rate *= 2
			s.Hits = uint64(s.Rate)
		}
	}
	d, err := BuildCompareRuns([]*results.Run{a, b, c}, []string{"A", "B", "C"}, variant.Patched, "test")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, cmp := range d.Comparisons {
		r := cmp.Tables[0].Rows[0]
		got = append(got, fmt.Sprintf("%s %s %.0f%%", cmp.Name(), r.Change.Verdict, r.Change.Pct))
	}
	if want := "20260102-000000 vs 20260101-000000 ~ 0%; 20260103-000000 vs 20260101-000000 faster 100%"; strings.Join(got, "; ") != want {
		t.Errorf("comparisons %q\nwant %q", strings.Join(got, "; "), want)
	}
	text := Text(d, false)
	for _, w := range []string{"20260101-000000 M/s", "20260103-000000 M/s", "Δ 20260103-000000 vs 20260101-000000 [95% CI]"} {
		if !strings.Contains(text, w) {
			t.Errorf("text lacks %q:\n%s", w, text)
		}
	}
	if len(d.Runs) != 3 || d.Runs[2].Role != "column 20260103-000000: patched of this run" {
		t.Errorf("runs %+v", d.Runs)
	}
	if _, err := BuildCompareRuns([]*results.Run{a, b}, []string{"A", "B"}, "nothing", "test"); err == nil {
		t.Error("compared runs without boots of the variant")
	}
	var back Document
	js, _ := JSON(d)
	if err := json.Unmarshal(js, &back); err != nil || len(back.Comparisons) != 2 {
		t.Errorf("json round trip: %v, %d comparisons", err, len(back.Comparisons))
	}
}
