// Package variant names the two sides of every comparison lab makes, and
// holds one value per side.
package variant

import "fmt"

// Variant is a side of the comparison.
type Variant string

const (
	// Baseline is the kernel without the series.
	Baseline Variant = "baseline"
	// Patched is the kernel with the series.
	Patched Variant = "patched"
)

// Both lists the variants in boot order: baseline first.
var Both = []Variant{Baseline, Patched}

// Parse checks a variant name given by a user (e.g. --only).
func Parse(s string) (Variant, error) {
	switch Variant(s) {
	case Baseline, Patched:
		return Variant(s), nil
	}
	return "", fmt.Errorf("variant %q: want %s or %s", s, Baseline, Patched)
}

// Pair holds one value per variant. Its JSON form is
// {"baseline": …, "patched": …}.
type Pair[T any] struct {
	Baseline T `json:"baseline"`
	Patched  T `json:"patched"`
}

// Get returns v's value.
func (p Pair[T]) Get(v Variant) T {
	if v == Patched {
		return p.Patched
	}
	return p.Baseline
}

// Ptr returns a pointer to v's value, to update it in place.
func (p *Pair[T]) Ptr(v Variant) *T {
	if v == Patched {
		return &p.Patched
	}
	return &p.Baseline
}

// Set sets v's value.
func (p *Pair[T]) Set(v Variant, x T) { *p.Ptr(v) = x }

// Kernels lists a run's variants in boot order: baseline, then the one
// patched kernel of a single series, or the kernel of each series of a run
// of several (named by Name).
func Kernels(series []Variant) []Variant {
	if len(series) == 0 {
		return Both
	}
	return append([]Variant{Baseline}, series...)
}

// Name checks the variant name of one series of a run of several: it names
// files (build-ARCH-NAME.log) and report columns, so it is a short
// path-safe word, and "baseline" is the kernel without any series.
func Name(s string) (Variant, error) {
	switch {
	case s == "":
		return "", fmt.Errorf("a series' variant name is empty")
	case Variant(s) == Baseline:
		return "", fmt.Errorf("variant name %q is the kernel without any series: name the series otherwise", s)
	case len(s) > 40:
		return "", fmt.Errorf("variant name %q: at most 40 characters", s)
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') || s[0] == '.' {
			return "", fmt.Errorf("variant name %q: letters, digits, '-', '_' and '.' only (not first), as it names files", s)
		}
	}
	return Variant(s), nil
}

// Comparison is one judgement of a run of several series: Patched's boots
// against Against's, relabelled as patched and baseline.
type Comparison struct {
	Patched Variant `json:"patched"`
	Against Variant `json:"against"`
}

// Name is the comparison in column heads and lines: "v2 vs v1".
func (c Comparison) Name() string { return fmt.Sprintf("%s vs %s", c.Patched, c.Against) }

// Comparisons are what a run of several series judges: each series against
// the baseline, then each against the one before it (v2 against v1).
func Comparisons(series []Variant) []Comparison {
	var out []Comparison
	for _, s := range series {
		out = append(out, Comparison{Patched: s, Against: Baseline})
	}
	for i := 1; i < len(series); i++ {
		out = append(out, Comparison{Patched: series[i], Against: series[i-1]})
	}
	return out
}
