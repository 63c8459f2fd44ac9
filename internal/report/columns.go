package report

import (
	"fmt"
	"slices"
	"strings"

	"lab/internal/results"
	"lab/internal/variant"
	"lab/internal/verdict"
)

// A report judges each comparison as a run of two is: its two kernels'
// boots relabelled baseline and patched, so every rule of package verdict
// holds unchanged.

// Judged is one comparison of a report (Patched's boots against
// Against's) with its tables.
type Judged struct {
	variant.Comparison
	Tables []verdict.Table `json:"tables"`
	// Where are the moved rows' where-blocks, from the run's instruction
	// profiles (a run's report only); Profiled says both kernels had
	// profiles, whether or not a row moved.
	Where    []WhereMoved `json:"where,omitempty"`
	Profiled bool         `json:"profiled,omitempty"`
}

// buildColumns judges every comparison of kernels' boots with judge (by
// shape for a run, across runs for lab compare). Tables holds the tables
// of the comparisons against Kernels[0] (the baseline): the CI gates and
// the claims judge those, each series against the baseline.
func buildColumns(d *Document, kernels []variant.Variant, boots []results.Boot, comps []variant.Comparison, judge func([]results.Boot) []verdict.Table) {
	d.Kernels = kernels
	for _, c := range comps {
		tables := judge(verdict.Relabel(boots, c))
		d.Comparisons = append(d.Comparisons, Judged{Comparison: c, Tables: tables})
		if c.Against == kernels[0] {
			d.Tables = append(d.Tables, tables...)
		}
	}
}

// BuildCompareRuns sets variant v of two or more runs side by side, a
// column per run named by its run id, each judged against the first.
func BuildCompareRuns(runs []*results.Run, dirs []string, v variant.Variant, generator string) (*Document, error) {
	if err := sameMethod(runs, dirs); err != nil {
		return nil, err
	}
	var kernels []variant.Variant
	var boots []results.Boot
	labs := map[string]bool{}
	var ids, labNames []string
	for i, r := range runs {
		k, err := variant.Name(r.RunID)
		if err != nil || slices.Contains(kernels, k) {
			k = variant.Variant(fmt.Sprintf("run%d", i+1)) // a run id lab did not make
		}
		kernels = append(kernels, k)
		ids = append(ids, r.RunID)
		if !labs[r.Lab] {
			labs[r.Lab] = true
			labNames = append(labNames, r.Lab)
		}
		for _, b := range r.Boots {
			if b.Variant == v {
				b.Variant = k
				boots = append(boots, b)
			}
		}
	}
	var comps []variant.Comparison
	for _, k := range kernels[1:] {
		comps = append(comps, variant.Comparison{Patched: k, Against: kernels[0]})
	}
	d := &Document{Title: fmt.Sprintf("%s: %s kernels of runs %s", strings.Join(labNames, ", "), v, strings.Join(ids, ", ")),
		Lab: strings.Join(labNames, " vs "), Compare: true, Generator: generator}
	for i, r := range runs {
		d.Runs = append(d.Runs, runInfo(r, dirs[i], fmt.Sprintf("column %s: %s of this run", kernels[i], v)))
	}
	buildColumns(d, kernels, boots, comps, verdict.Across)
	var all []verdict.Table
	for _, c := range d.Comparisons {
		all = append(all, c.Tables...)
	}
	d.Caveats = caveats(all)
	for i, r := range runs[1:] {
		if diff := runs[0].Source.Differs(r.Source); diff != "" {
			d.Caveats = append([]string{fmt.Sprintf("%s against %s: %s", kernels[i+1], kernels[0], diff)}, d.Caveats...)
		}
	}
	if len(labs) > 1 {
		d.Caveats = append([]string{fmt.Sprintf("different labs (%s): their kernels, series and benchmarks may differ", strings.Join(labNames, ", "))}, d.Caveats...)
	}
	if len(d.Tables) == 0 {
		return d, fmt.Errorf("no %s boots to compare in %s", v, strings.Join(dirs, ", "))
	}
	return d, nil
}

// sameMethod refuses runs whose agents measured in different ways: the
// producer program alone moved usermode-count from 57 to 198 M/s, so a
// comparison across methods would judge the agents, not the kernels.
func sameMethod(runs []*results.Run, dirs []string) error {
	method := func(r *results.Run) string {
		for _, b := range r.Boots {
			if b.OK() {
				return b.Method()
			}
		}
		return ""
	}
	name := func(m string) string {
		if m == "" {
			return "goroutine producers (an agent that named no method)"
		}
		return m
	}
	first := method(runs[0])
	for i, r := range runs[1:] {
		if m := method(r); m != first {
			return fmt.Errorf("%s and %s were measured by different agent methods (%s; %s): their figures are not comparable; measure both with one lab version",
				dirs[0], dirs[i+1], name(first), name(m))
		}
	}
	return nil
}
