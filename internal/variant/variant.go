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
