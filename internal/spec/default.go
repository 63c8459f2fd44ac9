package spec

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/goccy/go-yaml"

	"lab/internal/arch"
	"lab/internal/series"
)

// A lab without a file: what lab run --series and lab new make from a
// series alone, and how any lab is written back as a file.

// DefaultBenchmarks are what a lab made from a series runs: the probe
// suite (every probe a series of the probes subsystems may move); the
// controls come with every boot (Matrix.JobBenchmarks).
var DefaultBenchmarks = []string{"uprobe-nop", "uprobe-push", "uprobe-ret", "uretprobe-nop", "uretprobe-push", "uretprobe-ret", "kprobe", "kretprobe"}

// Boots of a lab made from a series: under KVM's wall clock the figures
// drift between boots, and 8 per variant separate a change of a few per
// cent; under icount a kernel's one boot gives its exact figure
// (DefaultSeeds).
const (
	DefaultBootsICount = DefaultSeeds
	DefaultBootsWall   = 8
)

// DefaultSeeds is how many times each kernel boots under icount. Boots of
// one image and seed repeat to the last digit; boots of other seeds (other
// random streams, as another image of the same code draws) agreed within
// 0.0076 % in 16 seeds of two uprobe-srcu kernels, 1 s samples, within the
// 0.01 % floor that judges a change (docs/validation.md, "How many
// boots"). A second seed would not change a verdict, and its spread,
// larger than the floor now and then, would only hide small changes.
const DefaultSeeds = 1

// BootsFor is how many times each kernel boots on the clock given: Seeds
// (or DefaultSeeds) under icount, Boots on the wall clock. A lab file that
// says measure: icount and boots: N, and no seeds:, has N seeds.
func (m Matrix) BootsFor(icount bool) int {
	switch {
	case !icount:
		return m.Boots
	case m.Seeds > 0:
		return m.Seeds
	}
	return DefaultSeeds
}

// Default is the lab for series s when there is no lab file: the probe
// suite with its controls, on the shape this host can judge, and mode
// auto. Without KVM (h.KVMArch "") that is x86_64 at 1 vCPU under QEMU's
// instruction counter, one producer; with KVM, the host's arch at 1, 2, 4,
// ... vCPUs up to the host's CPUs, each with 1, 2, 4, ... producers up to
// its vCPUs (the contention matrix), on the wall clock. Boots are short
// (3s measured after 1s of warm-up). The series is s's folder, the kernel
// source Debian's tarball, and Root the checkout FindRoot finds from the
// working folder: name becomes the results' folder.
func Default(name string, s *series.Series, h Host) (*Lab, error) {
	if err := checkName("name", name); err != nil {
		return nil, err
	}
	m := Matrix{
		Arch: []string{"x86_64"}, CPUs: []int{1}, Memory: "1G",
		Benchmarks: append([]string(nil), DefaultBenchmarks...), Producers: []int{1},
		Boots: DefaultBootsICount, Seeds: DefaultSeeds, Duration: Duration{3 * time.Second}, Warmup: Duration{time.Second},
		Measure: MeasureICount,
	}
	if h.KVMArch != "" {
		a, err := arch.Lookup(h.KVMArch)
		if err != nil {
			return nil, err
		}
		top := min(max(h.CPUs, 1), a.MaxCPUs)
		m.Arch, m.CPUs, m.Producers = []string{a.Name}, powersUpTo(top), powersUpTo(top)
		m.ClipProducers, m.Boots, m.Measure = true, DefaultBootsWall, MeasureWall
	}
	root := FindRoot("")
	if !exists(filepath.Join(root, "kernel-config")) {
		return nil, errors.New("no lab checkout (a folder with kernel-config/) at or above $LAB_ROOT, the working folder or the lab binary: run lab from its checkout, or set LAB_ROOT")
	}
	l := &Lab{
		Name: name, Description: subjectOf(s), Series: s.Dir, Mode: ModeAuto, Config: []string{"common.config"},
		Source: Source{Tarball: DefaultTarball, Package: DefaultPackage},
		Matrix: m, Root: root, host: h,
	}
	if err := l.Validate(); err != nil {
		return nil, err
	}
	if err := l.checkFiles(nil, s); err != nil {
		return nil, err
	}
	return l, nil
}

// subjectOf is what the series is about: its cover letter's subject, else
// its first patch's.
func subjectOf(s *series.Series) string {
	if s.Cover != nil && s.Cover.Subject != "" {
		return s.Cover.Subject
	}
	if len(s.Patches) > 0 {
		return s.Patches[0].Subject
	}
	return ""
}

// powersUpTo is 1, 2, 4, ... up to n, and n itself when it is not a power
// of two (a 6-CPU host runs 6 vCPUs too).
func powersUpTo(n int) []int {
	var out []int
	for p := 1; p <= n; p *= 2 {
		out = append(out, p)
	}
	if out[len(out)-1] != n {
		out = append(out, n)
	}
	return out
}

// LoadWith reads a lab file whose series the command line replaces (lab
// run --series): s, which the caller opened, is the lab's series, and the
// file's series: is neither read nor needed.
func LoadWith(path string, s *series.Series) (*Lab, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseLab(path, data, ReadHost(), s)
}

// OpenSeries opens the lab's series: for a name, the folder under
// patches/ (which must be a folder); for a path, anything series.Open
// reads. The caller closes it (series.Series.Close), which removes what
// Open wrote for an mbox.
func (l *Lab) OpenSeries() (*series.Series, error) {
	if l.Series == "" && len(l.Versions) > 0 {
		return nil, fmt.Errorf("lab %s has %d series (versions:), and this takes one: lab run measures several; to bisect or build one, give it as --series or in a lab with series:", l.Name, len(l.Versions))
	}
	if l.Series == "" {
		return nil, fmt.Errorf("lab %s names no series: this compares a kernel with and without one (series: in the lab, or --series PATH); lab track measures a branch without one", l.Name)
	}
	p := l.SeriesPath()
	if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
		return nil, l.noSeries(p)
	}
	if !isPath(l.Series) {
		if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
			_, err := series.Load(p) // says what the folder is not
			return nil, err
		}
	}
	return series.Open(p, nil, "")
}

// OpenVersion opens the series of the lab's version i (see OpenSeries).
func (l *Lab) OpenVersion(i int) (*series.Series, error) {
	one := *l
	one.Series, one.Versions = l.Versions[i].Series, nil
	return one.OpenSeries()
}

// noSeries says that the lab's series is not at p: the absolute path
// looked at, how a relative one was taken, and the other reading of
// series: when it finds something (a path whose last name is a folder
// under patches/, a name that is a file beside the lab file).
func (l *Lab) noSeries(p string) error {
	abs, err := filepath.Abs(p)
	if err != nil {
		abs = p
	}
	var msg string
	if isPath(l.Series) {
		msg = "no such file or folder: " + abs
		if !filepath.IsAbs(l.Series) && l.Path != "" {
			from, _ := filepath.Abs(filepath.Dir(l.Path))
			msg += fmt.Sprintf(" (a relative path is taken from the lab file's folder, %s)", from)
		}
	} else {
		msg = fmt.Sprintf("no folder %s (a name is a folder under patches/", abs)
		if names := seriesNames(filepath.Dir(p)); len(names) > 0 {
			msg += ", which holds " + strings.Join(names, ", ")
		}
		msg += ")"
	}
	return errors.New(msg + l.otherReading())
}

// otherReading is "; did you mean ..." when series: read the other way (a
// name as a path beside the lab file, a path's last name as a name)
// finds a series.
func (l *Lab) otherReading() string {
	base := filepath.Base(filepath.Clean(l.Series))
	if isPath(l.Series) {
		if fi, err := os.Stat(filepath.Join(l.Root, "patches", base)); err == nil && fi.IsDir() {
			return fmt.Sprintf("; did you mean series: %s, the folder patches/%s?", base, base)
		}
		return ""
	}
	if l.Path != "" && exists(filepath.Join(filepath.Dir(l.Path), l.Series)) {
		return fmt.Sprintf("; did you mean series: ./%s, beside the lab file? (a value without a / is a name under patches/)", l.Series)
	}
	return ""
}

// seriesNames lists the folders of patches/ (dir), for a message.
func seriesNames(dir string) []string {
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			names = append(names, e.Name())
		}
	}
	return names
}

// SeriesPath is where the series is: patches/NAME under Root for a name,
// the path (from the lab file's folder when relative) for a path.
func (l *Lab) SeriesPath() string {
	switch {
	case !isPath(l.Series):
		return filepath.Join(l.Root, "patches", l.Series)
	case filepath.IsAbs(l.Series) || l.Path == "":
		return l.Series
	}
	return filepath.Join(filepath.Dir(l.Path), l.Series)
}

// isPath reports whether a lab's series: is a path, not a name.
func isPath(ref string) bool { return strings.ContainsRune(ref, '/') }

// takeBase decides the base of a git source from the series' base-commit
// (base, "" when it names none) and says what it did in BaseNote: a git
// source without source.base builds from the base-commit; one with it
// keeps its own, and the note says which; a tarball has no history to
// check a commit against, and the note says so.
func (l *Lab) takeBase(base string) error {
	l.BaseNote = ""
	git, given := l.Source.Git != "", l.Source.Base
	switch {
	case git && given == "" && base == "":
		return errors.New("source.git needs source.base (the ref to build from): the series names no base-commit")
	case git && given == "":
		l.Source.Base = base
		l.BaseNote = fmt.Sprintf("the series' base-commit %s: the git source builds from it (the lab gives no source.base)", base)
	case base == "":
	case git && (strings.HasPrefix(given, base) || strings.HasPrefix(base, given)):
		l.BaseNote = fmt.Sprintf("the series' base-commit %s: the lab's source.base names it", base)
	case git:
		l.BaseNote = fmt.Sprintf("the series' base-commit %s: not used: the lab gives source.base %s, which wins", base, given)
	default:
		l.BaseNote = fmt.Sprintf("the series' base-commit %s: cannot be checked against the tarball %s (a tarball has no history); the series goes on the source as the tarball ships it", base[:min(12, len(base))], filepath.Base(l.Source.Tarball))
	}
	return nil
}

// FindRoot is the checkout a lab belongs to, the folder holding
// kernel-config/ (and patches/): the first such folder at or above dir
// (a lab file's folder: labs/, or a run folder inside the checkout's
// results/); else $LAB_ROOT; else lab's own checkout, at or above the
// working folder or the lab binary. When none holds kernel-config/, it is
// dir's parent (a lab file's parent's parent), where the errors about
// fragments then point. dir "" starts at $LAB_ROOT.
func FindRoot(dir string) string {
	starts := []string{dir, os.Getenv("LAB_ROOT"), "."}
	if exe, err := os.Executable(); err == nil {
		starts = append(starts, filepath.Dir(exe))
	}
	for _, s := range starts {
		if s == "" {
			continue
		}
		if root, ok := holding(s, "kernel-config"); ok {
			return root
		}
	}
	if dir == "" {
		dir, _ = os.Getwd()
		return dir
	}
	abs, _ := filepath.Abs(dir)
	return filepath.Dir(abs)
}

// holding finds the first folder at or above dir that has a folder name.
func holding(dir, name string) (string, bool) {
	d, err := filepath.Abs(dir)
	if err != nil {
		return "", false
	}
	for {
		if fi, err := os.Stat(filepath.Join(d, name)); err == nil && fi.IsDir() {
			return d, true
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", false
		}
		d = parent
	}
}

// YAML writes the lab as a lab file that Load reads back as the same lab,
// with header (one or more lines, without "#") as a comment on top. A
// series given by path is written as given: the caller sets Series to
// what it means from the file's folder.
func (l *Lab) YAML(header string) ([]byte, error) {
	data, err := yaml.MarshalWithOptions(l, yaml.IndentSequence(true))
	if err != nil {
		return nil, fmt.Errorf("write the lab %s as YAML: %w", l.Name, err)
	}
	var b bytes.Buffer
	for _, line := range strings.Split(strings.TrimRight(header, "\n"), "\n") {
		if header == "" {
			break
		}
		b.WriteString(strings.TrimRight("# "+line, " ") + "\n")
	}
	b.Write(data)
	return b.Bytes(), nil
}
