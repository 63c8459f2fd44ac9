// Package history is lab's store of every boot it measured, across runs: a
// run's provenance, and per boot what was measured (kernel, variant or
// commit), where (arch, guest shape, clock, accelerator, host) and every
// benchmark row's figure. It reads back series of points for change-point
// detection, one per benchmark row, shape, arch, clock, accelerator and
// host class, so that figures that cannot be compared never meet in one
// series.
//
// Two drivers pass the same tests: SQLite (modernc.org/sqlite, pure Go, one
// file, the default) and PostgreSQL (pgx), for a fleet whose hosts write at
// once. The schema is versioned and migrated by ordered SQL steps.
package history

import (
	"fmt"
	"lab/internal/results"
	"math"
	"slices"
	"strings"
	"time"
)

// Kinds of run: which lab command measured the boots.
const (
	KindRun    = results.KindRun
	KindMerge  = results.KindMerge
	KindBisect = results.KindBisect
	KindTrack  = results.KindTrack
)

var kinds = []string{KindRun, KindMerge, KindBisect, KindTrack}

// Clocks a figure can be measured against. An icount figure is a path
// length, a wall-clock figure a time: they never share a series.
const (
	ClockICount = "icount"
	ClockWall   = "wall"
)

// Metrics of a figure.
const (
	// MetricRate is the boot's mean rate of a benchmark row (hits per
	// second over its samples).
	MetricRate = "rate"
	// MetricScaling is the within-boot ratio rate(P producers)/rate(1).
	MetricScaling = "scaling"
)

// Run is one lab run as the history keeps it: its provenance and its boots.
type Run struct {
	Lab        string
	RunID      string
	Kind       string // KindRun, KindMerge, KindBisect or KindTrack
	LabVersion string
	Command    []string
	Started    time.Time
	Source     Source
	// Series are the run's series, each with its kernel's variant: one
	// (patched), several (v1, v2) against one baseline, or none.
	Series []Series
	Boots  []Boot
	// Culprits are what a bisect over a git range found, written with its
	// boots (FromRun makes them from a bisect's record).
	Culprits []Culprit
}

// Source is the kernel source the run built from.
type Source struct {
	Desc          string
	ID            string // lab's source id: tarball-<sha256 prefix> or git-...
	TarballSHA256 string // "" for a git source
	Commit        string // the base commit
	KernelVersion string
}

// Series is a patch series under test, and the kernel it made.
type Series struct {
	Variant string
	Name    string
	Mode    string
	SHA256  string
}

// first is the run's first series (its one, mostly): the runs table keeps
// it, as it did before the history kept every kernel's.
func (r *Run) first() Series {
	if len(r.Series) == 0 {
		return Series{}
	}
	return r.Series[0]
}

// Boot is one boot and every figure it measured.
type Boot struct {
	Index int // 1-based, unique within the run
	// Digest identifies the measurement itself (its raw samples), so that
	// a boot reaching the history under two runs (a shard's and the
	// merged run's) is kept once. "": only the run's key dedupes.
	Digest      string
	Variant     string // baseline or patched; "" for a commit of a branch or a bisect step
	Commit      string // the commit measured
	CommitSeq   int    // its place along its branch (git rev-list --count --first-parent); 0: unknown
	KernelKey   string // lab's cache key of the kernel
	ImageSHA256 string
	Arch        string
	CPUs        int
	Topology    string // the guest's topology, e.g. sockets=1,cores=2,threads=1
	Clock       string // ClockICount or ClockWall
	Accel       string // kvm or tcg
	Host        Host
	Failure     string // the failure kind; "" when the boot delivered
	// Method is how the agent measured (protocol.Method); "" for agents
	// that did not say. Figures of two methods never share a series.
	Method  string
	Figures []Figure
}

// Host is the fingerprint of the machine a boot ran on.
type Host struct {
	Name        string // informative only: the class does not use it
	CPUModel    string
	CPUs        int
	Kernel      string
	QEMUVersion string
}

// Class is which hosts' figures may share a series: the same CPU model and
// count (what a wall-clock figure measures) and the same QEMU release (its
// TCG translation and instruction counting; a point release, as Debian
// ships for security, keeps the class). The host kernel is recorded but not
// part of the class: a point update of it would otherwise split every
// series, and the guest's measured loop does not run host kernel code.
func (h Host) Class() string {
	model := strings.Join(strings.Fields(h.CPUModel), " ")
	qemu := h.QEMUVersion
	if parts := strings.SplitN(qemu, ".", 3); len(parts) == 3 {
		qemu = parts[0] + "." + parts[1]
	}
	if qemu == "" {
		qemu = "unknown"
	}
	return fmt.Sprintf("%s ×%d, QEMU %s", model, h.CPUs, qemu)
}

// Figure is one benchmark row's figure in one boot.
type Figure struct {
	Benchmark string
	Tool      string // the guest tool that measured it; "" for lab's agent
	Producers int
	Metric    string // MetricRate or MetricScaling
	Value     float64
}

// LineKey names one series of points: everything that must be equal for
// two figures to be compared. Every field is required except Tool and
// Variant, whose "" is a value (lab's agent; a branch's commits).
type LineKey struct {
	Lab       string
	Variant   string // baseline, patched, or "" for a branch's commits and bisect steps
	Benchmark string
	Tool      string
	Producers int
	Metric    string
	Arch      string
	CPUs      int
	Topology  string
	Clock     string
	Accel     string
	HostClass string
	Method    string // the agent's measuring method; "" before agents named it
}

// LineVariant is the variant of the line a boot's figure belongs to: a
// bisect's ends (its baseline and patched boots) are commits of the line
// it bisects, like its steps.
func LineVariant(kind, variant string) string {
	if kind == KindBisect {
		return ""
	}
	return variant
}

func (k LineKey) String() string {
	s := fmt.Sprintf("%s %s", k.Lab, k.Benchmark)
	if k.Tool != "" {
		s += " (" + k.Tool + ")"
	}
	s += fmt.Sprintf(" p%d %s", k.Producers, k.Metric)
	if k.Variant != "" {
		s += " " + k.Variant
	}
	s += fmt.Sprintf(" · %s %d vCPUs %s · %s %s · %s", k.Arch, k.CPUs, k.Topology, k.Accel, k.Clock, k.HostClass)
	if k.Method != "" {
		s += " · " + k.Method
	}
	return s
}

// Check says which required fields a series key lacks: a series without
// its clock or host class would mix figures that cannot be compared.
func (k LineKey) Check() error {
	var missing []string
	for _, f := range []struct {
		name string
		ok   bool
	}{
		{"lab", k.Lab != ""}, {"benchmark", k.Benchmark != ""}, {"producers", k.Producers > 0},
		{"metric", k.Metric != ""}, {"arch", k.Arch != ""}, {"vCPUs", k.CPUs > 0},
		{"topology", k.Topology != ""}, {"clock", k.Clock != ""}, {"accelerator", k.Accel != ""},
		{"host class", k.HostClass != ""},
	} {
		if !f.ok {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("a series is one lab, benchmark, producers, metric, arch, shape, clock, accelerator and host class; this one has no %s", strings.Join(missing, ", "))
	}
	return nil
}

// Point is one boot's figure in a series, with where it came from.
type Point struct {
	Lab, RunID, Kind string
	LabVersion       string
	Started          time.Time
	Boot             int
	Variant, Commit  string
	CommitSeq        int // 0: unknown
	KernelKey        string
	ImageSHA256      string
	SourceID         string
	KernelVersion    string
	SeriesSHA256     string // the series of the boot's kernel; the run's first for a baseline boot
	HostName         string
	Value            float64
}

// check refuses a run the history must not keep: what it lacks is named,
// with the boot it is in.
func (r *Run) check() error {
	what := fmt.Sprintf("run %q of lab %q", r.RunID, r.Lab)
	switch {
	case r.Lab == "":
		return fmt.Errorf("%s: no lab name", what)
	case r.RunID == "":
		return fmt.Errorf("%s: no run id", what)
	case !slices.Contains(kinds, r.Kind):
		return fmt.Errorf("%s: kind %q is none of %s", what, r.Kind, strings.Join(kinds, ", "))
	case r.Started.IsZero():
		return fmt.Errorf("%s: no start time", what)
	}
	for _, c := range r.Culprits {
		if err := c.check(); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	seen := map[int]bool{}
	for _, b := range r.Boots {
		if err := b.check(); err != nil {
			return fmt.Errorf("%s, boot %d: %w", what, b.Index, err)
		}
		if seen[b.Index] {
			return fmt.Errorf("%s: boot %d twice", what, b.Index)
		}
		seen[b.Index] = true
	}
	return nil
}

func (b *Boot) check() error {
	switch {
	case b.Index < 1:
		return fmt.Errorf("index %d: boots count from 1", b.Index)
	case b.KernelKey == "":
		return fmt.Errorf("no kernel cache key")
	case b.Arch == "":
		return fmt.Errorf("no arch")
	case b.CPUs < 1:
		return fmt.Errorf("%d vCPUs", b.CPUs)
	case b.Topology == "":
		return fmt.Errorf("no guest topology")
	case b.Clock != ClockICount && b.Clock != ClockWall:
		return fmt.Errorf("clock %q is neither %s nor %s", b.Clock, ClockICount, ClockWall)
	case b.Accel == "":
		return fmt.Errorf("no accelerator")
	case b.Host.CPUModel == "" || b.Host.CPUs < 1:
		return fmt.Errorf("no host fingerprint (CPU model %q, %d CPUs)", b.Host.CPUModel, b.Host.CPUs)
	case b.CommitSeq < 0:
		return fmt.Errorf("commit place %d", b.CommitSeq)
	case b.CommitSeq > 0 && b.Commit == "":
		return fmt.Errorf("a commit place (%d) without a commit", b.CommitSeq)
	}
	type rowKey struct {
		bench, tool string
		producers   int
		metric      string
	}
	seen := map[rowKey]bool{}
	for _, f := range b.Figures {
		switch {
		case f.Benchmark == "":
			return fmt.Errorf("a figure without a benchmark")
		case f.Producers < 1:
			return fmt.Errorf("%s: %d producers", f.Benchmark, f.Producers)
		case f.Metric != MetricRate && f.Metric != MetricScaling:
			return fmt.Errorf("%s: metric %q is neither %s nor %s", f.Benchmark, f.Metric, MetricRate, MetricScaling)
		case math.IsNaN(f.Value) || math.IsInf(f.Value, 0) || f.Value <= 0:
			return fmt.Errorf("%s p%d %s: value %v is not a positive number", f.Benchmark, f.Producers, f.Metric, f.Value)
		}
		k := rowKey{f.Benchmark, f.Tool, f.Producers, f.Metric}
		if seen[k] {
			return fmt.Errorf("%s p%d %s (tool %q) twice", f.Benchmark, f.Producers, f.Metric, f.Tool)
		}
		seen[k] = true
	}
	return nil
}
