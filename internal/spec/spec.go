// Package spec reads lab files (labs/*.yaml): which kernel, which series, how
// to build it and what to measure. Every error names the file and line.
package spec

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"time"

	"lab/internal/arch"
	"lab/internal/benchmark"
	"lab/internal/flagval"
	"lab/internal/kconfig"
	"lab/internal/results"
	"lab/internal/series"
	"lab/internal/topology"
)

// A lab's mode says which side of the comparison its series is on; the
// series package owns the names of the two sides. ModeAuto lets lab find
// out: it tries the series forward and in reverse on the source (see
// source.Tree.ResolveSeries).
const (
	ModeApply  = series.ModeApply
	ModeRevert = series.ModeRevert
	ModeAuto   = "auto"
)

// Measurement clocks.
const (
	MeasureAuto   = "auto"   // icount for 1-vCPU TCG guests, wall otherwise
	MeasureWall   = "wall"   // the guest's real clock
	MeasureICount = "icount" // QEMU's instruction-count clock (TCG, 1 vCPU)
)

// DefaultTarball is the embedded default kernel source: Debian's linux-source-6.12.
const (
	DefaultTarball = "/usr/src/linux-source-6.12.tar.xz"
	DefaultPackage = "linux-source-6.12"
)

// Version is one series of a lab of several: the name its kernel and its
// report column go by ("v2"), and the series as series: takes it (a name
// under patches/ or a path).
type Version struct {
	Name   string `yaml:"name"`
	Series string `yaml:"series"`
}

// Lab is one lab file.
//
// The yaml tags' options (omitempty, flow) are for YAML, which writes a
// lab back as a file; reading takes only the key.
type Lab struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description,omitempty"`
	Source      Source `yaml:"source"`
	// Series is a folder's name under patches/ ("uprobe-srcu"), or a
	// path, relative to the lab file's folder, of anything series.Open
	// reads: a series folder, an mbox, one mail, a diff ("./series",
	// "../v2.mbx"). A value with a / in it is a path.
	Series string `yaml:"series,omitempty"`
	// Versions are the series of a lab of several (v1 and v2 of a series,
	// or two approaches), instead of Series: a kernel each, named by Name,
	// against one baseline (lab run --series A --series B from a file).
	Versions []Version `yaml:"versions,omitempty"`
	Mode     string    `yaml:"mode"`
	Config   []string  `yaml:"config,flow"`
	Matrix   Matrix    `yaml:"matrix"`
	Claims   []Claim   `yaml:"claims,omitempty"`
	// ConsoleExpect are regular expressions every boot's console must
	// match, e.g. a KUnit test's "ok" line: a boot without them fails.
	ConsoleExpect []string `yaml:"console_expect,omitempty"`
	// Tools are programs put in the guest beside lab's agent (lab
	// benchmarks lists them): bpf-bench, the kernel's own benchmark.
	Tools []string `yaml:"tools,omitempty,flow"`
	// Watch says which series on a mailing list lab watch runs on this
	// lab.
	Watch Watch `yaml:"watch,omitempty"`

	// Path is the file the lab was read from ("" for a lab lab made, see
	// Default); Root is the checkout holding patches/ and kernel-config/
	// (see FindRoot).
	Path string `yaml:"-"`
	Root string `yaml:"-"`
	// BaseNote says which commit a git source builds from when the
	// series names a base-commit, or what lab does with a base-commit a
	// tarball cannot check; "" when the series names none.
	BaseNote string `yaml:"-"`
	// host is what the lab was checked against (memory); Validate checks
	// against it again after the command-line flags.
	host Host
	// doc is what the file gave, and on which lines: Place puts a later
	// error at its key's line.
	doc *doc
}

// Watch is what makes a series posted to a list this lab's to run.
type Watch struct {
	// Paths are files, folders (ending in /) or globs of the tree: a
	// series touching one is run. Left out, the files the lab's own
	// series touches.
	Paths []string `yaml:"paths,omitempty,flow"`
	// Subject is a regular expression: a series whose subject matches is
	// run whatever it touches.
	Subject string `yaml:"subject,omitempty"`
}

// Source is the kernel source: a Debian tarball (the default) or a git tree.
// It converts to source.Origin, which has the same fields: source does not
// read lab files.
type Source struct {
	Tarball string `yaml:"tarball,omitempty"` // path of a linux source tarball
	Package string `yaml:"package,omitempty"` // Debian package that installs Tarball
	Git     string `yaml:"git,omitempty"`     // path of a local git tree
	// Base is the ref in Git to build from; left out, the series'
	// base-commit: line (see Lab.BaseNote).
	Base string `yaml:"base,omitempty"`
}

// Matrix is what to run: every arch × cpus combination, each booting every
// variant Boots times and running every benchmark at every producer count.
type Matrix struct {
	Arch       []string `yaml:"arch,flow"`
	CPUs       []int    `yaml:"cpus,flow"`
	Memory     string   `yaml:"memory,omitempty"`
	Benchmarks []string `yaml:"benchmarks,flow"`
	Producers  []int    `yaml:"producers,flow"`
	// ClipProducers drops producer counts above a guest's vCPUs instead of
	// rejecting them: "1, 2, 4, ... up to the vCPUs" across a cpus matrix.
	ClipProducers bool `yaml:"clip_producers,omitempty"`
	// Boots is how many times each kernel boots on the wall clock, where
	// figures drift from boot to boot and a U test needs several.
	Boots int `yaml:"boots"`
	// Seeds is how many times each kernel boots under icount, each boot
	// with its own random seed (0: DefaultSeeds): the figures are exact,
	// and more seeds only show how far the random stream moves them.
	Seeds     int      `yaml:"seeds,omitempty"`
	Duration  Duration `yaml:"duration"`
	Warmup    Duration `yaml:"warmup"`
	Measure   string   `yaml:"measure"`
	Affinity  *bool    `yaml:"affinity,omitempty"`
	MaxActive int      `yaml:"maxactive,omitempty"` // for tracefs kretprobes; 0: kernel default
	// Controls adds usermode-count and syscall-count to every boot (default
	// true): no kernel series should move them, so they show drift.
	Controls *bool `yaml:"controls,omitempty"`

	// The guest's shape. NUMA is a matrix axis of node counts that split
	// CPUs and memory evenly (default [1]: no NUMA); NUMALayout instead
	// gives the nodes one by one. Sockets, clusters (arm64), cores and
	// threads are optional: lab makes one socket per node by default.
	NUMA       []int            `yaml:"numa,omitempty,flow"`
	NUMALayout *topology.Layout `yaml:"numa_layout,omitempty"`
	Sockets    int              `yaml:"sockets,omitempty"`
	Clusters   int              `yaml:"clusters,omitempty"`
	Cores      int              `yaml:"cores,omitempty"`
	Threads    int              `yaml:"threads,omitempty"`
	// Pin is auto, on or off: pin each vCPU thread to its own host CPU.
	Pin string `yaml:"pin,omitempty"`
}

// Shapes resolves every cpus × numa combination of the matrix for arch.
func (m Matrix) Shapes(arch string) ([]topology.Shape, error) { return m.axes().Shapes(arch) }

// ShapeCount is how many shapes the matrix runs over all its arches: all
// that dealing a run's boots (package shard) needs of it.
func (m Matrix) ShapeCount() (int, error) { return m.axes().Count(m.Arch) }

func (m Matrix) axes() topology.Axes {
	return topology.Axes{CPUs: m.CPUs, NUMA: m.NUMA, Base: topology.Request{
		Sockets: m.Sockets, Clusters: m.Clusters, Cores: m.Cores, Threads: m.Threads,
		Memory: m.Memory, Layout: m.NUMALayout,
	}}
}

// ProducersFor is the producer counts a guest with cpus vCPUs runs.
func (m Matrix) ProducersFor(cpus int) []int {
	if !m.ClipProducers {
		return m.Producers
	}
	var out []int
	for _, p := range m.Producers {
		if p <= cpus {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		out = []int{1}
	}
	return out
}

// JobBenchmarks is what each boot runs: the lab's benchmarks, then the
// controls unless the lab turned them off or lists them itself.
func (m Matrix) JobBenchmarks() []string {
	out := append([]string(nil), m.Benchmarks...)
	if m.Controls != nil && !*m.Controls {
		return out
	}
	for _, c := range benchmark.Controls() {
		if !contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// Claim is what a series' author says it does, checked by reports.
type Claim struct {
	Benchmark string `yaml:"benchmark"`
	Producers []int  `yaml:"producers,omitempty,flow"`
	Direction string `yaml:"direction"`     // "faster" or "slower"
	Min       string `yaml:"min,omitempty"` // optional minimum size, e.g. "2%" (results.MinPct reads it)
	// Scaling judges the within-boot ratio rate(P)/rate(1) instead of the
	// rate itself: what a scalability claim says, and what survives the
	// boot-to-boot drift of an emulated machine.
	Scaling bool   `yaml:"scaling,omitempty"`
	Note    string `yaml:"note,omitempty"`
}

// Duration is a time.Duration written as "5s" in YAML (see doc.duration).
type Duration struct{ time.Duration }

// MarshalYAML writes the duration back in Go syntax.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// Error is a problem at a place in a lab file.
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.File == "" { // a lab lab made (Default), which has no file
		return e.Msg
	}
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// Load reads and checks a lab file against this host (ReadHost).
func Load(path string) (*Lab, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse checks data as the lab file path, against this host.
func Parse(path string, data []byte) (*Lab, error) { return ParseOn(path, data, ReadHost()) }

// ParseOn checks data as the lab file path, against host h.
func ParseOn(path string, data []byte, h Host) (*Lab, error) { return parseLab(path, data, h, nil) }

// parseLab is ParseOn; with, when not nil, is the series the command line
// gives (LoadWith), which replaces the file's.
func parseLab(path string, data []byte, h Host, with *series.Series) (*Lab, error) {
	lab := &Lab{host: h}
	d, err := parseYAML(path, data, lab)
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	lab.Path = path
	lab.Root = FindRoot(filepath.Dir(abs))
	lab.doc = d
	if with != nil {
		lab.Series, lab.Versions = with.Dir, nil // --series replaces the lab's series, one or several
	}
	lab.setDefaults(d)
	if err := lab.validate(d); err != nil {
		return nil, err
	}
	if err := lab.checkFiles(d, with); err != nil {
		return nil, err
	}
	if err := lab.checkClaims(d); err != nil {
		return nil, err
	}
	return lab, nil
}

// setDefaults fills in what the file left out: a key the file gave keeps
// its value, 0 included (warmup: 0 is no warm-up; boots: 0 is an error).
func (l *Lab) setDefaults(d *doc) {
	if l.Source.Git == "" && l.Source.Tarball == "" {
		l.Source.Tarball = DefaultTarball
		if l.Source.Package == "" {
			l.Source.Package = DefaultPackage
		}
	}
	m := &l.Matrix
	for _, def := range []struct {
		key string
		set func()
	}{
		{"mode", func() { l.Mode = ModeApply }},
		{"config", func() { l.Config = []string{"common.config"} }},
		{"matrix.arch", func() { m.Arch = []string{"x86_64"} }},
		{"matrix.cpus", func() { m.CPUs = []int{1} }},
		{"matrix.memory", func() {
			if m.NUMALayout == nil { // a layout's nodes give the memory
				m.Memory = "1G"
			}
		}},
		{"matrix.benchmarks", func() { m.Benchmarks = []string{"uprobe-nop"} }},
		{"matrix.producers", func() { m.Producers = []int{1} }},
		{"matrix.boots", func() { m.Boots = 3 }},
		{"matrix.duration", func() { m.Duration.Duration = 5 * time.Second }},
		{"matrix.warmup", func() { m.Warmup.Duration = time.Second }},
		{"matrix.measure", func() { m.Measure = MeasureAuto }},
	} {
		if !d.given(def.key) {
			def.set()
		}
	}
	// A lab on the instruction clock alone that asks for boots and not
	// seeds means its boots: each kernel boots that often, a seed each;
	// without either, the default, said so that the lab written back
	// reads the same.
	if m.Measure == MeasureICount && !d.given("matrix.seeds") {
		m.Seeds = DefaultSeeds
		if d.given("matrix.boots") {
			m.Seeds = m.Boots
		}
	}
}

// Validate checks the values; it is also run after command-line overrides.
func (l *Lab) Validate() error { return l.validate(nil) }

func (l *Lab) validate(d *doc) error {
	at := func(msg string, keys ...string) error {
		return &Error{File: l.Path, Line: d.at(keys...), Msg: msg}
	}
	if l.Name == "" {
		return at("missing key \"name\" (write e.g. name: uprobe-srcu)")
	}
	if err := checkName("name", l.Name); err != nil {
		return at(err.Error(), "name")
	}
	// source.git without source.base takes the series' base-commit:
	// checkFiles, which reads the series, checks it.
	if l.Source.Git != "" && l.Source.Tarball != "" {
		return at("source: give either git or tarball, not both", "source")
	}
	switch l.Mode {
	case ModeApply, ModeRevert, ModeAuto:
	default:
		return at(fmt.Sprintf("mode %q: want %q, %q or %q (lab tries both)", l.Mode, ModeApply, ModeRevert, ModeAuto), "mode")
	}
	switch {
	case len(l.Versions) > 0:
		if err := l.validateVersions(at); err != nil {
			return err
		}
	case l.Series == "":
		// A lab lab track alone uses measures a branch: it needs no
		// series, and the commands that do say so (OpenSeries).
	case !isPath(l.Series):
		if err := checkName("series", l.Series); err != nil {
			return at(err.Error(), "series")
		}
	}
	for i, c := range l.Config {
		if err := checkName("config fragment", c); err != nil {
			return at(err.Error(), "config", fmt.Sprint(i))
		}
	}
	if err := l.Matrix.validate(at, d, l.host, max(2, 1+len(l.Versions))); err != nil {
		return err
	}
	for i, name := range l.Tools {
		tool, err := benchmark.LookupTool(name)
		if err != nil {
			return at(err.Error(), "tools", fmt.Sprint(i))
		}
		if l.Matrix.Sample() != time.Second {
			return at(fmt.Sprintf("tools: %s samples once a second: give a duration of whole seconds, not %v", name, l.Matrix.Duration.Duration), "matrix", "duration")
		}
		if w := l.Matrix.Warmup.Duration; w < tool.MinWarmup {
			return at(fmt.Sprintf("tools: %s warms up for at least %v: give a warmup of %v or more, not %v", name, tool.MinWarmup, tool.MinWarmup, w), "matrix", "warmup")
		}
	}
	if why := badRegexp(l.Watch.Subject); why != "" {
		return at(fmt.Sprintf("watch: subject %q: not a regular expression: %s", l.Watch.Subject, why), "watch", "subject")
	}
	for i, e := range l.ConsoleExpect {
		if why := badRegexp(e); why != "" {
			return at(fmt.Sprintf("console_expect %q: not a regular expression: %s", e, why), "console_expect", fmt.Sprint(i))
		}
	}
	for i, c := range l.Claims {
		if err := benchmark.Check(c.Benchmark); err != nil {
			return at("claim: "+err.Error(), "claims", fmt.Sprint(i), "benchmark")
		}
		if _, err := results.MinPct(c.Min); err != nil {
			return at("claim: "+err.Error(), "claims", fmt.Sprint(i), "min")
		}
		if c.Scaling && len(c.Producers) > 0 && c.Producers[0] == 1 && len(c.Producers) == 1 {
			return at("claim: scaling compares P producers against 1: give producers above 1", "claims", fmt.Sprint(i), "producers")
		}
		if c.Direction != "faster" && c.Direction != "slower" {
			return at(fmt.Sprintf("claim: direction %q: want faster or slower", c.Direction), "claims", fmt.Sprint(i), "direction")
		}
	}
	return nil
}

// validate checks the matrix; at makes an error at the line of a key path,
// d says which keys the file gave (nil after the command-line flags).
func (m *Matrix) validate(at func(msg string, keys ...string) error, d *doc, h Host, kernels int) error {
	if err := m.validateAxes(at, d); err != nil {
		return err
	}
	if err := m.validateShapes(at, d, h); err != nil {
		return err
	}
	if err := m.validateJob(at); err != nil {
		return err
	}
	if m.Boots < 1 {
		return at(fmt.Sprintf("boots %d: want at least 1 (4 or more for p < 0.05)", m.Boots), "matrix", "boots")
	}
	if m.Seeds < 0 {
		return at(fmt.Sprintf("seeds %d: want at least 1 (or leave it out: %d)", m.Seeds, DefaultSeeds), "matrix", "seeds")
	}
	if err := m.validateTimes(at, kernels); err != nil {
		return err
	}
	switch m.Measure {
	case MeasureAuto, MeasureWall, MeasureICount:
	default:
		return at(fmt.Sprintf("measure %q: want auto, wall or icount", m.Measure), "matrix", "measure")
	}
	if m.Measure == MeasureICount {
		for _, c := range m.CPUs {
			if c > 1 {
				// Measured here: icount with 2 vCPUs stalled in 2 of 8 boots.
				return at(fmt.Sprintf("measure icount with %d vCPUs: icount is only reliable with 1 vCPU (use wall)", c), "matrix", "measure")
			}
		}
	}
	return nil
}

// validateAxes checks the matrix's lists and counts: known arches (their
// aliases made lab's names), no value twice, counts of at least 1, a pin
// lab knows.
func (m *Matrix) validateAxes(at func(msg string, keys ...string) error, d *doc) error {
	for i, name := range m.Arch {
		a, err := arch.Lookup(name)
		if err != nil {
			return at(err.Error(), "matrix", "arch", fmt.Sprint(i))
		}
		m.Arch[i] = a.Name // aliases (aarch64, amd64) become lab's names
	}
	for _, list := range []struct {
		key  string
		dups string
	}{
		{"arch", firstDup(m.Arch)}, {"cpus", firstDup(m.CPUs)}, {"benchmarks", firstDup(m.Benchmarks)},
		{"producers", firstDup(m.Producers)}, {"numa", firstDup(m.NUMA)},
	} {
		if list.dups != "" {
			return at(fmt.Sprintf("%s lists %s twice: give each once", list.key, list.dups), "matrix", list.key)
		}
	}
	for i, c := range m.CPUs {
		if c < 1 {
			return at(fmt.Sprintf("cpus %d: want 1 or more", c), "matrix", "cpus", fmt.Sprint(i))
		}
	}
	for i, n := range m.NUMA {
		if n < 1 {
			return at(fmt.Sprintf("numa %d: want 1 or more nodes (1: no NUMA)", n), "matrix", "numa", fmt.Sprint(i))
		}
	}
	for _, c := range shapeCounts {
		if v := *c.field(m); d.given("matrix."+c.key) && v < 1 {
			return at(countError(c.key, v), "matrix", c.key)
		}
	}
	switch m.Pin {
	case "", topology.PinAuto, topology.PinOn, topology.PinOff:
	default:
		return at(fmt.Sprintf("pin %q: want auto, on or off", m.Pin), "matrix", "pin")
	}
	return nil
}

// validateJob checks what each boot runs: benchmarks lab has, on arches
// they run on, and producer counts the guests can hold.
func (m *Matrix) validateJob(at func(msg string, keys ...string) error) error {
	for i, name := range m.Benchmarks {
		b, ok := benchmark.Lookup(name)
		if !ok {
			return at(benchmark.Check(name).Error(), "matrix", "benchmarks", fmt.Sprint(i))
		}
		for _, a := range m.Arch {
			if why := b.UnsupportedOn(a); why != "" {
				return at(fmt.Sprintf("benchmark %s cannot run on %s: %s", name, a, why), "matrix", "benchmarks", fmt.Sprint(i))
			}
		}
	}
	if m.MaxActive < 0 {
		return at(fmt.Sprintf("maxactive %d: want 0 (kernel default) or more", m.MaxActive), "matrix", "maxactive")
	}
	for i, p := range m.Producers {
		if p < 1 {
			return at(fmt.Sprintf("producers %d: want at least 1", p), "matrix", "producers", fmt.Sprint(i))
		}
		for _, c := range m.CPUs {
			if p > c && !m.ClipProducers {
				return at(fmt.Sprintf("producers %d is more than the %d vCPUs of the guest (set clip_producers: true to drop such counts)", p, c), "matrix", "producers", fmt.Sprint(i))
			}
		}
	}
	return nil
}

// shapeCounts are the guest's topology counts a lab may leave out (lab
// works them out from the vCPUs). Given, in the file or as a flag, each must
// be at least 1: 0 is a value, and no guest has 0 sockets.
var shapeCounts = []struct {
	key   string
	field func(*Matrix) *int
	flag  func(*Flags) *flagval.Int
}{
	{"sockets", func(m *Matrix) *int { return &m.Sockets }, func(f *Flags) *flagval.Int { return &f.Sockets }},
	{"clusters", func(m *Matrix) *int { return &m.Clusters }, func(f *Flags) *flagval.Int { return &f.Clusters }},
	{"cores", func(m *Matrix) *int { return &m.Cores }, func(f *Flags) *flagval.Int { return &f.Cores }},
	{"threads", func(m *Matrix) *int { return &m.Threads }, func(f *Flags) *flagval.Int { return &f.Threads }},
}

func countError(key string, v int) string {
	return fmt.Sprintf("%s %d: want 1 or more (leave %s out and lab works it out from the vCPUs)", key, v, key)
}

// validateShapes resolves every shape, and checks its memory against the
// host's: QEMU would fail to start, or the host would swap.
func (m *Matrix) validateShapes(at func(msg string, keys ...string) error, d *doc, h Host) error {
	keys := []string{"matrix", "cpus"}
	switch {
	case m.NUMALayout != nil:
		keys = []string{"matrix", "numa_layout"}
	case len(m.NUMA) > 0:
		keys = []string{"matrix", "numa"}
	}
	for _, a := range m.Arch {
		shapes, err := m.Shapes(a)
		if err != nil {
			return at(err.Error(), shapeErrorKeys(err, keys, m, d)...)
		}
		for _, s := range shapes {
			if h.MemoryMiB > 0 && s.MemoryMiB > h.MemoryMiB {
				return at(fmt.Sprintf("memory %s is more than this host's RAM (%s, MemTotal in /proc/meminfo): give the guest at most %s", size(s.MemoryMiB), size(h.MemoryMiB), size(h.MemoryMiB)), "matrix", "memory")
			}
		}
	}
	return nil
}

// shapeErrorKeys is where in the file a shape error belongs: the layout's
// node it names, the memory, or the default keys.
func shapeErrorKeys(err error, keys []string, mat *Matrix, d *doc) []string {
	msg := err.Error()
	if _, rest, ok := strings.Cut(msg, ": "); ok {
		msg = rest // without the arch Shapes puts first
	}
	if c := shapeCount.FindStringSubmatch(msg); c != nil {
		return []string{"matrix", c[1]} // "clusters=2: x86_64's machine has no clusters"
	}
	if strings.Contains(msg, " the product must equal the vCPUs") {
		// "4 vCPUs cannot be sockets=3,...": the count the file gave is
		// the odd one out, more likely than a vCPU count of a list.
		for _, c := range shapeCounts {
			if d.given("matrix." + c.key) {
				return []string{"matrix", c.key}
			}
		}
	}
	if c := cpuCount.FindStringSubmatch(msg); c != nil {
		for i, n := range mat.CPUs {
			if fmt.Sprint(n) == c[1] {
				return []string{"matrix", "cpus", fmt.Sprint(i)} // "64 vCPUs: ... at most 8"
			}
		}
	}
	if strings.HasPrefix(msg, "numa ") || strings.Contains(msg, " NUMA nodes") {
		keys = []string{"matrix", "numa"}
	}
	if m := numaNode.FindStringSubmatch(msg); m != nil {
		field := "cpus"
		if strings.HasPrefix(m[2], "memory") {
			field = "memory"
		}
		return []string{"matrix", "numa_layout", "nodes", m[1], field}
	}
	switch {
	case strings.Contains(msg, "numa distances"):
		return []string{"matrix", "numa_layout", "distances"}
	case strings.Contains(msg, "numa layout"):
		return []string{"matrix", "numa_layout"}
	case strings.Contains(msg, "memory"):
		return []string{"matrix", "memory"}
	}
	return keys
}

var (
	numaNode   = regexp.MustCompile(`numa node (\d+): (\w+)`)
	shapeCount = regexp.MustCompile(`^(sockets|clusters|cores|threads)=\d+: `)
	cpuCount   = regexp.MustCompile(`^(\d+) vCPUs: `)
)

// checkFiles checks what the lab names on disk: the series (every file a
// patch; with, when not nil, is one the caller opened and checked) and the
// config fragments (every line an option), so that a bad one fails now and
// not after the kernel source is unpacked. It takes the series'
// base-commit for the source (takeBase).
func (l *Lab) checkFiles(d *doc, with *series.Series) error {
	at := func(msg string, keys ...string) error {
		return &Error{File: l.Path, Line: d.at(keys...), Msg: msg}
	}
	for i, v := range l.Versions {
		s, err := l.OpenVersion(i)
		if err != nil {
			return at(fmt.Sprintf("versions: %s: series %q: %v", v.Name, v.Series, err), "versions", fmt.Sprint(i), "series")
		}
		s.Close()
		if with == nil {
			with = s // the first version's base-commit is the lab's
		}
	}
	if with == nil && l.Series == "" {
		return l.checkFragments(d)
	}
	if with == nil {
		s, err := l.OpenSeries()
		if err != nil {
			return at(fmt.Sprintf("series %q: %v", l.Series, err), "series")
		}
		s.Close()
		with = s
	}
	if err := l.takeBase(with.BaseCommit); err != nil {
		return at(err.Error(), "source", "git")
	}
	return l.checkFragments(d)
}

// checkFragments checks that every config fragment the lab names is a file
// of options.
func (l *Lab) checkFragments(d *doc) error {
	at := func(msg string, keys ...string) error {
		return &Error{File: l.Path, Line: d.at(keys...), Msg: msg}
	}
	for i, c := range l.Config {
		p := filepath.Join(l.Root, "kernel-config", c)
		if _, err := os.Stat(p); err != nil {
			return at(fmt.Sprintf("config fragment %q: no file %s (fragments live in kernel-config/)", c, p), "config", fmt.Sprint(i))
		}
		if _, err := kconfig.ParseFragment(p); err != nil {
			return at(fmt.Sprintf("config fragment %q: %v", c, err), "config", fmt.Sprint(i))
		}
	}
	for _, a := range l.Matrix.Arch {
		p := filepath.Join(l.Root, "kernel-config", a+".config")
		if !exists(p) {
			continue
		}
		if _, err := kconfig.ParseFragment(p); err != nil {
			return at(fmt.Sprintf("the %s config fragment: %v", a, err), "matrix", "arch")
		}
	}
	return nil
}

// checkClaims rejects claims the lab file's matrix can never measure: a
// benchmark no boot runs, or a producer count the producers list lacks.
// It checks against the list before clip_producers, not against what this
// host's vCPUs run: a lab written for a big KVM host (claims at 64
// producers, cpus: [2] for small ones) stays loadable, and measures those
// claims with --cpus 64. It runs on the lab file alone, not after the
// command-line flags, which may narrow the matrix for a quick run (--cpus 1,
// --benchmarks uprobe-nop): claims outside it are then "not measured".
func (l *Lab) checkClaims(d *doc) error {
	m := l.Matrix
	runs := m.JobBenchmarks()
	for i, c := range l.Claims {
		at := func(msg string, keys ...string) error {
			return &Error{File: l.Path, Line: d.at(append([]string{"claims", fmt.Sprint(i)}, keys...)...), Msg: "claim: " + msg}
		}
		if !slices.Contains(runs, c.Benchmark) {
			return at(fmt.Sprintf("benchmark %s is not in the matrix (benchmarks: %s): add it there, or fix the claim", c.Benchmark, strings.Join(runs, ", ")), "benchmark")
		}
		for j, p := range c.Producers {
			if !slices.Contains(m.Producers, p) {
				return at(fmt.Sprintf("producers %d is not in the matrix (producers: %s): add it there, or fix the claim", p, joinInts(m.Producers)), "producers", fmt.Sprint(j))
			}
		}
		if c.Scaling && !slices.Contains(m.Producers, 1) {
			return at(fmt.Sprintf("scaling compares against 1 producer, which the matrix does not run (producers: %s): add 1 there", joinInts(m.Producers)), "scaling")
		}
	}
	return nil
}

// Place puts a problem found after reading (the source's, say) in the lab
// file: at the line of the key err names with a LabKey method
// (source.Error does: source.git), else at the file.
func (l *Lab) Place(err error) error {
	if err == nil || l.Path == "" {
		return err
	}
	var keyed interface{ LabKey() []string }
	var keys []string
	if errors.As(err, &keyed) {
		keys = keyed.LabKey()
	}
	return &Error{File: l.Path, Line: l.doc.line(keys...), Msg: err.Error()}
}

// Fragments lists the config fragments for arch: the lab's, then
// kernel-config/<arch>.config when it exists.
func (l *Lab) Fragments(arch string) []string {
	var f []string
	for _, c := range l.Config {
		f = append(f, filepath.Join(l.Root, "kernel-config", c))
	}
	// What the lab's guest tools need of the kernel (from lab's own
	// kernel-config/, where the tool's fragment lives).
	for _, name := range l.Tools {
		if t, err := benchmark.LookupTool(name); err == nil && t.Fragment != "" && !slices.Contains(l.Config, t.Fragment) {
			f = append(f, filepath.Join(l.Root, "kernel-config", t.Fragment))
		}
	}
	if p := filepath.Join(l.Root, "kernel-config", arch+".config"); exists(p) {
		f = append(f, p)
	}
	return f
}

// AllFragments are the fragments of every arch of the lab's matrix, each
// once, in order.
func (l *Lab) AllFragments() []string {
	var all []string
	for _, a := range l.Matrix.Arch {
		for _, f := range l.Fragments(a) {
			if !slices.Contains(all, f) {
				all = append(all, f)
			}
		}
	}
	return all
}

// size writes MiB as QEMU takes it: 2G, 1536M.
func size(mib int64) string {
	switch {
	case mib%(1<<20) == 0:
		return fmt.Sprintf("%dT", mib>>20)
	case mib%(1<<10) == 0:
		return fmt.Sprintf("%dG", mib>>10)
	}
	return fmt.Sprintf("%dM", mib)
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

func contains[T comparable](s []T, v T) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// badRegexp says why e is not a regular expression, "" when it is one.
func badRegexp(e string) string {
	_, err := regexp.Compile(e)
	if err == nil {
		return ""
	}
	var se *syntax.Error
	if errors.As(err, &se) {
		return string(se.Code) // without Go's "error parsing regexp:"
	}
	return err.Error()
}
