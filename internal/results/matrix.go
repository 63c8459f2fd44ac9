package results

import (
	"fmt"
	"strings"
	"time"

	"lab/internal/topology"
)

// Matrix is what the run measured: the lab file's matrix after the command
// line's flags (package spec reads it; package run records it).
type Matrix struct {
	Arch          []string `json:"arch"`
	CPUs          []int    `json:"cpus"`
	Memory        string   `json:"memory"`
	Benchmarks    []string `json:"benchmarks"`
	Producers     []int    `json:"producers"`
	ClipProducers bool     `json:"clip_producers"`
	Boots         int      `json:"boots"`
	// Seeds is the lab's boots per kernel under icount (0: the default).
	Seeds int `json:"seeds,omitempty"`

	Duration  time.Duration `json:"duration_ns"`
	Warmup    time.Duration `json:"warmup_ns"`
	Measure   string        `json:"measure"`
	Affinity  *bool         `json:"affinity"`
	MaxActive int           `json:"maxactive"`
	Controls  *bool         `json:"controls"`
	// The guest's shape: NUMA node counts (an axis) or an explicit
	// layout, and the optional topology.
	NUMA       []int            `json:"numa"`
	NUMALayout *topology.Layout `json:"numa_layout"`
	Sockets    int              `json:"sockets"`
	Clusters   int              `json:"clusters"`
	Cores      int              `json:"cores"`
	Threads    int              `json:"threads"`
	Pin        string           `json:"pin"`
}

// ShapeCount is how many shapes the matrix ran over all its arches: all
// that dealing a run's boots to shards needs of it.
func (m Matrix) ShapeCount() (int, error) {
	return topology.Axes{CPUs: m.CPUs, NUMA: m.NUMA, Base: topology.Request{
		Sockets: m.Sockets, Clusters: m.Clusters, Cores: m.Cores, Threads: m.Threads,
		Memory: m.Memory, Layout: m.NUMALayout,
	}}.Count(m.Arch)
}

// Claim is what a series' author says it does, as the lab file states it:
// patched faster (or slower) on a benchmark at some producer counts.
type Claim struct {
	Benchmark string `json:"benchmark"`
	Producers []int  `json:"producers"`
	Direction string `json:"direction"` // "faster" or "slower"
	Min       string `json:"min"`       // minimum size, e.g. "2%"; "" for any
	// Scaling judges the within-boot ratio rate(P)/rate(1) instead of the
	// rate itself.
	Scaling bool   `json:"scaling"`
	Note    string `json:"note"`
}

// MinPct is the claim's minimum size in percent (0 when none).
func (c Claim) MinPct() (float64, error) { return MinPct(c.Min) }

// MinPct reads a claim's minimum size, "2%" or "2", in percent: 0 when
// min is empty. The lab file's check (package spec) and the verdict both
// read it here.
func MinPct(min string) (float64, error) {
	if min == "" {
		return 0, nil
	}
	var v float64
	if _, err := fmt.Sscanf(strings.TrimSuffix(strings.TrimSpace(min), "%"), "%g", &v); err != nil || v < 0 {
		return 0, fmt.Errorf("min %q: want a percentage like 2%%", min)
	}
	return v, nil
}
