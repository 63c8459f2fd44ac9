// Package spec reads lab files (labs/*.yaml): which kernel, which series, how
// to build it and what to measure. Every error names the file and line.
package spec

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"lab/internal/arch"
	"lab/internal/benchmark"
	"lab/internal/topology"
)

// Mode says which side of the comparison the series is on.
const (
	// ModeApply: baseline is the source, patched is source + series.
	ModeApply = "apply"
	// ModeRevert: patched is the source (which already has the series),
	// baseline is the source with the series reverse-applied, last patch first.
	ModeRevert = "revert"
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

// Lab is one lab file.
type Lab struct {
	Name        string   `yaml:"name"`
	Description string   `yaml:"description"`
	Source      Source   `yaml:"source"`
	Series      string   `yaml:"series"`
	Mode        string   `yaml:"mode"`
	Config      []string `yaml:"config"`
	Matrix      Matrix   `yaml:"matrix"`
	Claims      []Claim  `yaml:"claims"`
	// ConsoleExpect are regular expressions every boot's console must
	// match, e.g. a KUnit test's "ok" line: a boot without them fails.
	ConsoleExpect []string `yaml:"console_expect"`

	// Path is the file the lab was read from; Root is the checkout holding
	// patches/ and kernel-config/ (the lab file's parent's parent).
	Path string `yaml:"-"`
	Root string `yaml:"-"`
}

// Source is the kernel source: a Debian tarball (the default) or a git tree.
type Source struct {
	Tarball string `yaml:"tarball"` // path of a linux source tarball
	Package string `yaml:"package"` // Debian package that installs Tarball
	Git     string `yaml:"git"`     // path of a local git tree
	Base    string `yaml:"base"`    // ref in Git to build from
}

// Matrix is what to run: every arch × cpus combination, each booting every
// variant Boots times and running every benchmark at every producer count.
type Matrix struct {
	Arch       []string `yaml:"arch"`
	CPUs       []int    `yaml:"cpus"`
	Memory     string   `yaml:"memory"`
	Benchmarks []string `yaml:"benchmarks"`
	Producers  []int    `yaml:"producers"`
	// ClipProducers drops producer counts above a guest's vCPUs instead of
	// rejecting them: "1, 2, 4, ... up to the vCPUs" across a cpus matrix.
	ClipProducers bool     `yaml:"clip_producers"`
	Boots         int      `yaml:"boots"`
	Duration      Duration `yaml:"duration"`
	Warmup        Duration `yaml:"warmup"`
	Measure       string   `yaml:"measure"`
	Affinity      *bool    `yaml:"affinity"`
	MaxActive     int      `yaml:"maxactive"` // for tracefs kretprobes; 0: kernel default
	// Controls adds usermode-count and syscall-count to every boot (default
	// true): no kernel series should move them, so they show drift.
	Controls *bool `yaml:"controls"`

	// The guest's shape. NUMA is a matrix axis of node counts that split
	// CPUs and memory evenly (default [1]: no NUMA); NUMALayout instead
	// gives the nodes one by one. Sockets, clusters (arm64), cores and
	// threads are optional: lab makes one socket per node by default.
	NUMA       []int            `yaml:"numa"`
	NUMALayout *topology.Layout `yaml:"numa_layout"`
	Sockets    int              `yaml:"sockets"`
	Clusters   int              `yaml:"clusters"`
	Cores      int              `yaml:"cores"`
	Threads    int              `yaml:"threads"`
	// Pin is auto, on or off: pin each vCPU thread to its own host CPU.
	Pin string `yaml:"pin"`
}

// Shapes resolves every cpus × numa combination of the matrix for arch.
func (m Matrix) Shapes(arch string) ([]topology.Shape, error) {
	var out []topology.Shape
	for _, cpus := range m.CPUs {
		numa := m.NUMA
		if len(numa) == 0 || m.NUMALayout != nil {
			numa = []int{0}
		}
		for _, n := range numa {
			s, err := topology.Resolve(arch, topology.Request{
				CPUs: cpus, Sockets: m.Sockets, Clusters: m.Clusters, Cores: m.Cores, Threads: m.Threads,
				Memory: m.Memory, NUMA: n, Layout: m.NUMALayout,
			})
			if err != nil {
				return nil, fmt.Errorf("%s: %w", arch, err)
			}
			out = append(out, s)
		}
	}
	return out, nil
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
	Producers []int  `yaml:"producers"`
	Direction string `yaml:"direction"` // "faster" or "slower"
	Min       string `yaml:"min"`       // optional minimum size, e.g. "2%"
	// Scaling judges the within-boot ratio rate(P)/rate(1) instead of the
	// rate itself: what a scalability claim says, and what survives the
	// boot-to-boot drift of an emulated machine.
	Scaling bool   `yaml:"scaling"`
	Note    string `yaml:"note"`
}

// MinPct is the claim's minimum size in percent (0 when none).
func (c Claim) MinPct() (float64, error) {
	if c.Min == "" {
		return 0, nil
	}
	var v float64
	if _, err := fmt.Sscanf(strings.TrimSuffix(strings.TrimSpace(c.Min), "%"), "%g", &v); err != nil || v < 0 {
		return 0, fmt.Errorf("min %q: want a percentage like 2%%", c.Min)
	}
	return v, nil
}

// Duration is a time.Duration written as "5s" in YAML.
type Duration struct{ time.Duration }

// UnmarshalYAML parses Go duration syntax, or a bare number of seconds.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		var secs float64
		if _, serr := fmt.Sscanf(s, "%g", &secs); serr != nil || fmt.Sprint(secs) != s {
			return fmt.Errorf("line %d: %q is not a duration (write e.g. 5s or 500ms)", n.Line, s)
		}
		v = time.Duration(secs * float64(time.Second))
	}
	d.Duration = v
	return nil
}

// MarshalYAML writes the duration back in Go syntax.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// Error is a problem at a place in a lab file.
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// Load reads and checks a lab file.
func Load(path string) (*Lab, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse checks data as the lab file path.
func Parse(path string, data []byte) (*Lab, error) {
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		return nil, &Error{File: path, Line: yamlErrLine(err), Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	if len(root.Content) == 0 {
		return nil, &Error{File: path, Msg: "empty lab file"}
	}
	doc := root.Content[0]
	if err := checkKeys(path, doc, reflect.TypeOf(Lab{}), ""); err != nil {
		return nil, err
	}
	lab := &Lab{}
	if err := doc.Decode(lab); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) && len(te.Errors) > 0 {
			return nil, &Error{File: path, Line: yamlErrLine(errors.New(te.Errors[0])), Msg: stripLine(te.Errors[0])}
		}
		return nil, &Error{File: path, Line: yamlErrLine(err), Msg: stripLine(err.Error())}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	lab.Path = path
	lab.Root = filepath.Dir(filepath.Dir(abs))
	lab.setDefaults()
	if err := lab.validate(doc); err != nil {
		return nil, err
	}
	return lab, nil
}

func (l *Lab) setDefaults() {
	if l.Source.Git == "" && l.Source.Tarball == "" {
		l.Source.Tarball = DefaultTarball
		if l.Source.Package == "" {
			l.Source.Package = DefaultPackage
		}
	}
	if l.Mode == "" {
		l.Mode = ModeApply
	}
	if len(l.Config) == 0 {
		l.Config = []string{"common.config"}
	}
	m := &l.Matrix
	if len(m.Arch) == 0 {
		m.Arch = []string{"x86_64"}
	}
	if len(m.CPUs) == 0 {
		m.CPUs = []int{1}
	}
	if m.Memory == "" {
		m.Memory = "1G"
	}
	if len(m.Benchmarks) == 0 {
		m.Benchmarks = []string{"uprobe-nop"}
	}
	if len(m.Producers) == 0 {
		m.Producers = []int{1}
	}
	if m.Boots == 0 {
		m.Boots = 3
	}
	if m.Duration.Duration == 0 {
		m.Duration.Duration = 5 * time.Second
	}
	if m.Warmup.Duration == 0 {
		m.Warmup.Duration = time.Second
	}
	if m.Measure == "" {
		m.Measure = MeasureAuto
	}
}

// Validate checks the values; it is also run after command-line overrides.
func (l *Lab) Validate() error { return l.validate(nil) }

func (l *Lab) validate(doc *yaml.Node) error {
	at := func(msg string, keys ...string) error {
		return &Error{File: l.Path, Line: lineOf(doc, keys...), Msg: msg}
	}
	if l.Name == "" {
		return at("missing key \"name\"")
	}
	if l.Source.Git != "" && l.Source.Base == "" {
		return at("source.git needs source.base (the ref to build from)", "source", "git")
	}
	if l.Source.Git != "" && l.Source.Tarball != "" {
		return at("source: give either git or tarball, not both", "source")
	}
	switch l.Mode {
	case ModeApply, ModeRevert:
	default:
		return at(fmt.Sprintf("mode %q: want %q or %q", l.Mode, ModeApply, ModeRevert), "mode")
	}
	if l.Series == "" {
		return at("missing key \"series\" (a folder under patches/)")
	}
	if fi, err := os.Stat(l.SeriesDir()); err != nil || !fi.IsDir() {
		return at(fmt.Sprintf("series %q: no folder %s", l.Series, l.SeriesDir()), "series")
	}
	for i, c := range l.Config {
		if _, err := os.Stat(filepath.Join(l.Root, "kernel-config", c)); err != nil {
			return at(fmt.Sprintf("config fragment %q: %v", c, err), "config", fmt.Sprint(i))
		}
	}
	m := l.Matrix
	for i, name := range m.Arch {
		a, err := arch.Lookup(name)
		if err != nil {
			return at(err.Error(), "matrix", "arch", fmt.Sprint(i))
		}
		l.Matrix.Arch[i] = a.Name // aliases (aarch64, amd64) become lab's names
	}
	for i, c := range m.CPUs {
		if c < 1 {
			return at(fmt.Sprintf("cpus %d: want 1 or more", c), "matrix", "cpus", fmt.Sprint(i))
		}
	}
	switch m.Pin {
	case "", topology.PinAuto, topology.PinOn, topology.PinOff:
	default:
		return at(fmt.Sprintf("pin %q: want auto, on or off", m.Pin), "matrix", "pin")
	}
	for _, a := range m.Arch {
		if _, err := m.Shapes(a); err != nil {
			keys := []string{"matrix", "cpus"}
			switch {
			case m.NUMALayout != nil:
				keys = []string{"matrix", "numa_layout"}
			case len(m.NUMA) > 0:
				keys = []string{"matrix", "numa"}
			}
			return at(err.Error(), keys...)
		}
	}
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
				return at(fmt.Sprintf("producers %d is more than the %d vCPUs of the guest (set clip_producers to drop such counts)", p, c), "matrix", "producers", fmt.Sprint(i))
			}
		}
	}
	if m.Boots < 1 {
		return at(fmt.Sprintf("boots %d: want at least 1", m.Boots), "matrix", "boots")
	}
	if m.Duration.Duration < time.Second {
		return at(fmt.Sprintf("duration %v: want at least 1s (one sample a second)", m.Duration), "matrix", "duration")
	}
	if m.Warmup.Duration < 0 {
		return at(fmt.Sprintf("warmup %v: want 0 or more", m.Warmup), "matrix", "warmup")
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
	for i, e := range l.ConsoleExpect {
		if _, err := regexp.Compile(e); err != nil {
			return at(fmt.Sprintf("console_expect %q: %v", e, err), "console_expect", fmt.Sprint(i))
		}
	}
	for i, c := range l.Claims {
		if err := benchmark.Check(c.Benchmark); err != nil {
			return at("claim: "+err.Error(), "claims", fmt.Sprint(i), "benchmark")
		}
		if _, err := c.MinPct(); err != nil {
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

// SeriesDir is the folder holding the series' patches.
func (l *Lab) SeriesDir() string { return filepath.Join(l.Root, "patches", l.Series) }

// Fragments lists the config fragments for arch: the lab's, then
// kernel-config/<arch>.config when it exists.
func (l *Lab) Fragments(arch string) []string {
	var f []string
	for _, c := range l.Config {
		f = append(f, filepath.Join(l.Root, "kernel-config", c))
	}
	if p := filepath.Join(l.Root, "kernel-config", arch+".config"); exists(p) {
		f = append(f, p)
	}
	return f
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

// checkKeys rejects keys that no field of t takes, naming the line and the
// keys that would have been accepted.
func checkKeys(file string, n *yaml.Node, t reflect.Type, where string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t.Kind() == reflect.Struct && t != reflect.TypeOf(Duration{}):
		if n.Kind != yaml.MappingNode {
			return &Error{File: file, Line: n.Line, Msg: fmt.Sprintf("%s: want a mapping of keys", strings.TrimPrefix(where, "."))}
		}
		fields := map[string]reflect.Type{}
		var names []string
		for i := 0; i < t.NumField(); i++ {
			tag := strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]
			if tag == "" || tag == "-" {
				continue
			}
			fields[tag] = t.Field(i).Type
			names = append(names, tag)
		}
		sort.Strings(names)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			ft, ok := fields[k.Value]
			if !ok {
				in := ""
				if where != "" {
					in = " in " + strings.TrimPrefix(where, ".")
				}
				return &Error{File: file, Line: k.Line, Msg: fmt.Sprintf("unknown key %q%s (known: %s)", k.Value, in, strings.Join(names, ", "))}
			}
			if err := checkKeys(file, v, ft, where+"."+k.Value); err != nil {
				return err
			}
		}
	case t.Kind() == reflect.Slice && n.Kind == yaml.SequenceNode:
		for _, c := range n.Content {
			if err := checkKeys(file, c, t.Elem(), where); err != nil {
				return err
			}
		}
	}
	return nil
}

// lineOf finds the line of a key path (mapping keys, or sequence indexes) in doc.
// It returns the deepest line found, 0 without a document.
func lineOf(doc *yaml.Node, path ...string) int {
	if doc == nil {
		return 0
	}
	line, n := doc.Line, doc
	for _, p := range path {
		var next *yaml.Node
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == p {
					line, next = n.Content[i].Line, n.Content[i+1]
				}
			}
		case yaml.SequenceNode:
			var idx int
			if _, err := fmt.Sscan(p, &idx); err == nil && idx < len(n.Content) {
				next = n.Content[idx]
				line = next.Line
			}
		}
		if next == nil {
			return line
		}
		n = next
	}
	return line
}

func yamlErrLine(err error) int {
	var line int
	s := err.Error()
	if i := strings.Index(s, "line "); i >= 0 {
		fmt.Sscanf(s[i:], "line %d", &line)
	}
	return line
}

func stripLine(s string) string {
	if i := strings.Index(s, ": "); strings.HasPrefix(s, "line ") && i > 0 {
		return s[i+2:]
	}
	return s
}
