// Package results is the record of one lab run (results.json): every sample
// of every boot, and everything needed to rerun it. Its types are its own,
// not the working types of the packages that fill them (spec, kbuild, vm):
// those convert where they produce a record, so results.json changes only
// with Schema, and what reads it links no QEMU or build code.
package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"lab/initramfs/protocol"
	"lab/internal/stats"
	"lab/internal/topology"
	"lab/internal/variant"
)

// Schema is the version of results.json this lab writes. Load reads every
// older version too (see upgrade).
const Schema = 5

// Run is results.json.
type Run struct {
	Schema int `json:"schema"`
	// Kind is the command that made the record: KindRun (lab run), KindBuild
	// (lab build, no boots), KindBisect, KindTrack or KindMerge (shards
	// folded into one run).
	Kind       string   `json:"kind"`
	Lab        string   `json:"lab"`
	LabFile    string   `json:"lab_file"`
	LabSHA256  string   `json:"lab_sha256,omitempty"` // of the lab file as read
	RunID      string   `json:"run_id"`
	LabVersion string   `json:"lab_version"` // git describe of lab's checkout
	Command    []string `json:"command"`     // the command line that made this run
	// Repeat is the command that repeats the run when Command cannot (it
	// read the series from standard input, or made the lab itself): lab
	// run RUN/lab.yaml, the lab and series lab run --series saved in the
	// run folder.
	Repeat   []string  `json:"repeat,omitempty"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished,omitzero"`
	Complete bool      `json:"complete"` // false while running or after an interruption
	Source   Source    `json:"source"`
	// Series are the series the run measured, each its own kernel (its
	// Variant; Variants.Patched is that kernel's commit) against one
	// baseline (Variants.Baseline, the same in each): one for lab run of a
	// series, several for lab run --series v1.mbx --series v2.mbx. A
	// bisect or a track has one: the series it bisects, or the git range
	// it follows (its ends the two commits).
	Series    []Series      `json:"series"`
	Matrix    Matrix        `json:"matrix"`
	Host      Host          `json:"host"`
	Kernels   []Kernel      `json:"kernels"`
	Initramfs []Initramfs   `json:"initramfs"`
	Boots     []Boot        `json:"boots"`
	Notes     []string      `json:"notes,omitempty"`
	Claims    []Claim       `json:"claims,omitempty"`
	Elapsed   time.Duration `json:"elapsed_ns"`
	// Bisect is set when the run is a lab bisect.
	Bisect *Bisect `json:"bisect,omitempty"`
	// Caveats are notes about the run as a whole that every report shows
	// (a merged run's missing or partial shards).
	Caveats []string `json:"caveats,omitempty"`
	// Shard is set when the run is one shard of a run spread over hosts
	// (lab run --shard K/N): it holds only its share of the boots, and
	// lab merge makes the whole run from the shards.
	Shard *Shard `json:"shard,omitempty"`
	// Merged is set when lab merge made the run from shards' folders.
	Merged *Merged `json:"merged,omitempty"`
	// ShapeBoots are each shape's boots per kernel as the run planned
	// them (the matrix's boots on the wall clock, its seeds under icount),
	// in the matrix's shape order: how lab merge deals a run's shards.
	ShapeBoots []int `json:"shape_boots,omitempty"`
	// Profiles are the profiles of the run's kernels, from the first boot
	// of each: under icount an instruction profile (lab's QEMU plugin),
	// on the wall clock a sampled one (Method): where in the kernel a
	// moved row's path changed.
	Profiles []Profile `json:"profiles,omitempty"`
}

// Profile is one kernel's profile of one boot: under icount its
// instruction profile (lab's QEMU plugin, package insnprof), for each
// benchmark result the guest instructions of its measured samples by
// kernel function; on the wall clock its sampled profile (package
// stackprof), the kernel stacks of one more sample of each result.
type Profile struct {
	// Method is "" for an instruction profile, stackprof.Method for a
	// sampled one (under the wall clock: the kernel stacks a perf_event
	// BPF program sampled in one more sample of each benchmark).
	Method   string          `json:"method,omitempty"`
	Arch     string          `json:"arch"`
	Variant  variant.Variant `json:"variant"`
	Topology string          `json:"topology"` // the shape, as tables name it
	Seed     int             `json:"seed"`     // the boot's, as the measured boot's
	Dir      string          `json:"dir"`      // the profile boot's folder, relative to the run
	QEMU     string          `json:"qemu"`     // QEMU's version
	Plugin   string          `json:"plugin"`   // the plugin's file in the cache (its key)
	// Same says whether the profile boot gave each sample the figure the
	// measured boot of its kernel and seed did: the plugin does not move
	// the guest, so it must.
	Same    bool            `json:"same_figures"`
	Results []ProfileResult `json:"results"`
}

// ProfileResult is one benchmark result's profile: over its measured
// samples, the operations counted and the guest's instructions, all and
// by function.
type ProfileResult struct {
	Benchmark    string          `json:"benchmark"`
	Tool         string          `json:"tool,omitempty"`
	Producers    int             `json:"producers"`
	Ops          uint64          `json:"ops"`          // hits (or calls) in the samples
	Instructions uint64          `json:"instructions"` // every guest instruction in them
	Functions    []FunctionCount `json:"functions"`    // most first
	// Samples, Event and Hz are a sampled profile's: every sample taken,
	// of which perf event, at what rate a CPU.
	Samples uint64 `json:"samples,omitempty"`
	Event   string `json:"event,omitempty"`
	Hz      int    `json:"hz,omitempty"`
}

// FunctionCount is a function's instructions in a profile: a kernel
// function by the kernel's System.map, "[user]" for user space.
type FunctionCount struct {
	Name         string `json:"name"`
	Instructions uint64 `json:"instructions"`
	// Self and Children are a sampled profile's: the samples the function
	// was sampled in itself, and those it was anywhere on the stack in.
	Self     uint64 `json:"self,omitempty"`
	Children uint64 `json:"children,omitempty"`
}

// The kinds of record, as Run.Kind says.
const (
	KindRun    = "run"
	KindBuild  = "build"
	KindBisect = "bisect"
	KindTrack  = "track" // a branch measured commit by commit
	KindMerge  = "merge"
)

// Commit is the commit variant v's kernel was built from: the baseline's,
// or the series' whose kernel v is ("" for a variant the run does not
// have).
func (r *Run) Commit(v variant.Variant) string {
	if len(r.Series) == 0 {
		return ""
	}
	if v == variant.Baseline {
		return r.Series[0].Variants.Baseline
	}
	if s := r.SeriesOf(v); s != nil {
		return s.Variants.Patched
	}
	return ""
}

// SeriesOf is the series whose kernel is v, nil if none is.
func (r *Run) SeriesOf(v variant.Variant) *Series {
	for i := range r.Series {
		if r.Series[i].Variant == v {
			return &r.Series[i]
		}
	}
	return nil
}

// First is the run's first series (its only one, mostly), a zero one for a
// run of none: what names the run where one name is wanted.
func (r *Run) First() Series {
	if len(r.Series) == 0 {
		return Series{}
	}
	return r.Series[0]
}

// SortBoots puts the boots in index order: boots side by side finish in
// any order, and shards are merged one after another.
func (r *Run) SortBoots() {
	sort.SliceStable(r.Boots, func(i, j int) bool { return r.Boots[i].Index < r.Boots[j].Index })
}

// SameImages says, per arch, which of the comparisons are between two
// kernels with one image (builds are reproducible: a series that changes
// no code gives its baseline's image), and whether every comparison on
// every arch is.
func (r *Run) SameImages(comparisons []variant.Comparison) (same []string, all bool) {
	image := map[string]string{}
	var archs []string
	for _, k := range r.Kernels {
		image[k.Arch+"/"+string(k.Variant)] = k.Info.ImageSHA256
		if !slices.Contains(archs, k.Arch) {
			archs = append(archs, k.Arch)
		}
	}
	all = len(archs) > 0 && len(comparisons) > 0
	for _, a := range archs {
		for _, c := range comparisons {
			x, y := image[a+"/"+string(c.Patched)], image[a+"/"+string(c.Against)]
			if x == "" || x != y {
				all = false
				continue
			}
			same = append(same, fmt.Sprintf("the %s %s and %s kernels are one image (sha256 %s)", a, c.Against, c.Patched, x))
		}
	}
	return same, all
}

// ImageOf is the sha256 of the kernel image boot b booted, "" when the run
// does not record it.
func (r *Run) ImageOf(b Boot) string {
	for _, k := range r.Kernels {
		if k.Arch == b.Arch && k.Variant == b.Variant {
			return k.Info.ImageSHA256
		}
	}
	return ""
}

// SeriesVariants are the series' kernels in boot order after the
// baseline.
func (r *Run) SeriesVariants() []variant.Variant {
	var out []variant.Variant
	for _, s := range r.Series {
		out = append(out, s.Variant)
	}
	return out
}

// Merged is where a merged run's boots came from.
type Merged struct {
	Shards []string `json:"shards"` // the shards' run ids, in shard order
}

// Shard is K of N, and how many boots this shard was to make.
type Shard struct {
	K     int `json:"k"`
	N     int `json:"n"`
	Boots int `json:"boots"`
}

// Source is the kernel source.
type Source struct {
	Desc    string `json:"desc"`
	ID      string `json:"id"`
	Version string `json:"kernel_version"`
	Commit  string `json:"base_commit"`
}

// Differs says how two runs' kernel sources differ, or "" when they are the
// same source. Debian moves linux-source-6.12's point release under every
// user: a change between runs built from one point release and the next may be
// Debian's update, not the series, and whoever compares them must be told.
func (s Source) Differs(o Source) string {
	switch {
	case s.Version != o.Version:
		return fmt.Sprintf("different kernel versions: Linux %s against Linux %s (%s; %s): a difference between them may be the source's update, not the series", s.Version, o.Version, s.Desc, o.Desc)
	case s.ID != o.ID:
		return fmt.Sprintf("different kernel sources of the same version, Linux %s (%s; %s): a difference between them may be the source, not the series", s.Version, s.Desc, o.Desc)
	case s.Commit != o.Commit && strings.HasPrefix(s.ID, "git-"):
		return fmt.Sprintf("different base commits of one git tree, %s against %s (Linux %s): a difference between them may be the commits between, not the series", shortHash(s.Commit), shortHash(o.Commit), s.Version)
	}
	return ""
}

func shortHash(h string) string { return h[:min(12, len(h))] }

// Series is the series under test.
type Series struct {
	Name     string               `json:"name"`
	Mode     string               `json:"mode"` // the mode the variants were made in: apply or revert
	Hash     string               `json:"sha256"`
	Patches  []Patch              `json:"patches"`
	Variants variant.Pair[string] `json:"variant_commits"`

	// How lab chose the mode (all optional: older files lack them).
	ModeAsked  string `json:"mode_asked,omitempty"`  // the lab's mode: apply, revert or auto
	ModeReason string `json:"mode_reason,omitempty"` // "revert: every patch applies in reverse ..."

	// What the input was and what the list added (lab run --series, or a
	// lab's series given as a path): all optional.
	Kind        string `json:"kind,omitempty"`  // folder, mbox, mail or diff (series.Open's kinds)
	Input       string `json:"input,omitempty"` // the path given; "-" for standard input
	InputSHA256 string `json:"input_sha256,omitempty"`
	Version     int    `json:"version,omitempty"` // 2 for [PATCH v2 n/m]
	RFC         bool   `json:"rfc,omitempty"`
	Cover       *Cover `json:"cover,omitempty"`       // the cover letter, kept apart, never applied
	BaseCommit  string `json:"base_commit,omitempty"` // the series' base-commit: line
	// Base says what lab did with BaseCommit: the git commit it built
	// from, or why a tarball cannot check it.
	Base  string   `json:"base,omitempty"`
	Notes []string `json:"notes,omitempty"` // what reading the input skipped or found beside it
	// Variant names this series' kernel: "patched" in a run of one, the
	// name given to each in a run of several (its Variants.Patched is that
	// kernel's commit).
	Variant variant.Variant `json:"variant,omitempty"`
}

// Cover is a series' cover letter, patch 0/M.
type Cover struct {
	Subject    string `json:"subject"` // without its [PATCH v2 0/M] tag
	Version    int    `json:"version"`
	Total      int    `json:"total"` // the patches it announces
	Author     string `json:"author,omitempty"`
	BaseCommit string `json:"base_commit,omitempty"`
	Origin     string `json:"origin,omitempty"` // where it was: "FILE mail 1", or b4's .cover
	MailSHA256 string `json:"mail_sha256,omitempty"`
}

// Patch is one patch file.
type Patch struct {
	Name    string `json:"file"`
	Subject string `json:"subject"`
	SHA256  string `json:"sha256"`

	// What the list said of it (optional: older files and series folders
	// read by name lack them).
	Author string `json:"author,omitempty"`
	Number int    `json:"number,omitempty"` // N of [PATCH N/M]
	Total  int    `json:"total,omitempty"`  // M
	// Trailers are recorded, not applied: git am keeps them in the
	// commit message.
	Trailers   []Trailer `json:"trailers,omitempty"`
	MailSHA256 string    `json:"mail_sha256,omitempty"` // of the mail as it was in the input
	Origin     string    `json:"origin,omitempty"`      // where the mail was: "FILE mail 3"
}

// Trailer is one "Key: value" line at the end of a commit message:
// Acked-by, Reviewed-by, Link, ...
type Trailer struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Host is the machine the run happened on.
type Host struct {
	Name     string `json:"name,omitempty"` // hostname
	CPUModel string `json:"cpu_model"`
	CPUs     int    `json:"cpus"`
	Kernel   string `json:"kernel"`
	GOARCH   string `json:"goarch"`
}

// ID names the host in reports: its name, or its CPU when unnamed.
func (h Host) ID() string {
	if h.Name != "" {
		return h.Name
	}
	return fmt.Sprintf("%s ×%d, Linux %s", h.CPUModel, h.CPUs, h.Kernel)
}

// Kernel is one built kernel.
type Kernel struct {
	Arch    string          `json:"arch"`
	Variant variant.Variant `json:"variant"`
	Info    Build           `json:"build"`
	Cached  bool            `json:"cached"` // this run compiled nothing for it
}

// Build is how a kernel was built, as package kbuild reports it.
type Build struct {
	Key          string      `json:"key"` // the build cache's key: a hash of Inputs
	Inputs       BuildInputs `json:"inputs"`
	Image        string      `json:"image"`  // path in the build cache
	Config       string      `json:"config"` // path of its .config
	ConfigSHA256 string      `json:"config_sha256"`
	Release      string      `json:"release"`
	// ImageSHA256 identifies the image: builds are reproducible, so a
	// change that touches no code gives the same image as its parent.
	ImageSHA256 string `json:"image_sha256"`
	// BTF is the path of the kernel's BTF, when it has one.
	BTF      string        `json:"btf,omitempty"`
	Compiled int           `json:"compiled"` // compile steps (CC/AS) this build ran
	Duration time.Duration `json:"duration_ns"`
	// Configure and Make are Duration's two parts: the configuration
	// (kconfig) and make itself.
	Configure time.Duration `json:"configure_ns,omitempty"`
	Make      time.Duration `json:"make_ns,omitempty"`
	BuiltAt   time.Time     `json:"built_at"`
	// Seeded is the build folder of another source tree of the same
	// kernel that this first build here started from (a copy), "" when it
	// started cold or was incremental in its own.
	Seeded string `json:"seeded_from,omitempty"`
	// SameAs is the key of the build whose image this kernel is: its
	// commit changed only files no build reads (documentation), so it
	// was neither checked out nor made.
	SameAs string `json:"same_as,omitempty"`
}

// BuildInputs is everything a kernel image depends on, and where its tree
// came from.
type BuildInputs struct {
	Tree      string   `json:"tree"` // git tree hash of the source as built
	Arch      string   `json:"arch"`
	Fragments []string `json:"fragments"` // config fragment paths, in merge order
	Compiler  string   `json:"compiler"`  // first line of $CC --version
	SourceID  string   `json:"source_id,omitempty"`
	Commit    string   `json:"commit,omitempty"` // the commit built
}

// Initramfs is one guest image.
type Initramfs struct {
	Arch   string `json:"arch"`
	Path   string `json:"path"`
	Key    string `json:"key"`
	Cached bool   `json:"cached"`
	// Tools are the guest tools in the image (lab's tools:), with what
	// they were built from.
	Tools []Tool `json:"tools,omitempty"`
	// Programs are the workloads' programs in the image, copied from the
	// host with the libraries they need.
	Programs []Program `json:"programs,omitempty"`
}

// Program is a workload's program as it went into an image: which Debian
// package and version it came from, and its content.
type Program struct {
	Path    string `json:"path"`
	Package string `json:"package"`
	Version string `json:"version"` // dpkg's, "" when dpkg does not know it
	SHA256  string `json:"sha256"`
	// Files is how many files went in with it: its interpreter and
	// shared libraries, and itself.
	Files int `json:"files"`
}

// Tool is a guest tool built for a run: the kernel's bench, from the
// lab's source tree.
type Tool struct {
	Name     string        `json:"name"`
	Key      string        `json:"key"` // its cache key (bpfbench.Inputs)
	SHA256   string        `json:"sha256"`
	Size     int64         `json:"size"`
	Commit   string        `json:"commit"`   // the source commit it was built from
	Set      string        `json:"set"`      // which of its benchmarks were built
	LeftOut  string        `json:"left_out"` // what was not, and why
	Duration time.Duration `json:"build_duration_ns"`
	Cached   bool          `json:"cached"`
}

// Boot is one boot of one variant.
type Boot struct {
	Index int `json:"index"` // 1-based, in boot order
	// Round is the i-th boot (from 0) of this variant in this shape: the
	// baseline and patched boots of a round ran back to back on one host,
	// a pair.
	Round int `json:"round"`
	// Seed is an icount boot's random seed (QEMU's -seed): each boot of a
	// kernel draws its own stream, and the spread across seeds is what
	// the figure's random part can move it. 0 for a wall-clock boot; runs
	// from before per-boot seeds had 1 in every icount boot.
	Seed int `json:"seed,omitempty"`
	// Host is set in runs merged from shards: the host this boot ran on.
	Host    *Host             `json:"host,omitempty"`
	Arch    string            `json:"arch"`
	CPUs    int               `json:"cpus"`
	Variant variant.Variant   `json:"variant"`
	Accel   Accel             `json:"accel"`
	Clock   string            `json:"clock"` // ClockWall or ClockICount
	Outcome *Outcome          `json:"qemu,omitempty"`
	Hello   *protocol.Hello   `json:"guest,omitempty"`
	Results []protocol.Result `json:"results"`
	// Failure says why the boot did not deliver, nil when it did.
	Failure *Failure     `json:"failure,omitempty"`
	Console string       `json:"console_log"` // relative to the run directory
	Job     protocol.Job `json:"job"`
	// Shape is the guest's topology as asked for; QEMU's view of it is in
	// qemu.vcpus and qemu.memdevs, the guest's in guest.nodes.
	Shape        *topology.Shape `json:"shape,omitempty"`
	HostTopology *topology.Host  `json:"host_topology,omitempty"`
	// Caveats are what the host makes of the figures (oversubscription,
	// emulated NUMA, TCG), shown in table headers.
	Caveats []string `json:"caveats,omitempty"`
	Pinning string   `json:"pinning,omitempty"` // whether and how vCPU threads were pinned
	// Retried are the tries of this boot discarded before the one recorded,
	// and why: the host starved the guest's boot-time calibration
	// (FailStarved). Their consoles are kept beside this boot's.
	Retried []string `json:"retried,omitempty"`
}

// Ratio is a within-boot scaling ratio: rate(P producers)/rate(1 producer)
// of one benchmark. It survives the boot-to-boot drift of emulated machines.
type Ratio struct {
	Benchmark string
	Tool      string // "" for the agent's own figures
	Producers int
	Value     float64
}

// Ratios computes the boot's scaling ratios from its results.
func (b Boot) Ratios() []Ratio { return ScalingRatios(b.Results) }

// Method is how the boot's agent measured (protocol.Method): "" for agents
// with goroutine producers, which named none, and for boots that never
// heard from their agent.
func (b Boot) Method() string {
	if b.Hello == nil {
		return ""
	}
	return b.Hello.Method
}

// ScalingRatios computes each benchmark's ratios against its own
// 1-producer rate, in the order of the results.
func ScalingRatios(res []protocol.Result) []Ratio {
	type key struct{ bench, tool string }
	one := map[key]float64{}
	for _, r := range res {
		if r.Producers == 1 && r.OK() {
			one[key{r.Benchmark, r.Tool}] = protocol.Rate(r.Samples)
		}
	}
	var out []Ratio
	for _, r := range res {
		base, ok := one[key{r.Benchmark, r.Tool}]
		if r.Producers > 1 && ok && base > 0 && r.OK() {
			out = append(out, Ratio{Benchmark: r.Benchmark, Tool: r.Tool, Producers: r.Producers, Value: protocol.Rate(r.Samples) / base})
		}
	}
	return out
}

// Save writes the run to path atomically (a temporary file renamed over
// it): a reader never sees half a file, and a run killed mid-write leaves
// the last whole one.
func (r *Run) Save(path string) error {
	r.Schema = Schema
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Load reads a results.json, refusing versions this lab does not know and
// files that are not a lab run's: another tool's JSON, a truncated copy, a
// run stopped before its first boot, figures no run can have.
func Load(path string) (*Run, error) {
	data, err := os.ReadFile(path)
	var pe *fs.PathError
	if errors.Is(err, fs.ErrNotExist) && errors.As(err, &pe) {
		return nil, fmt.Errorf("%s: not a lab run folder (no results.json: %w)", filepath.Dir(path), pe.Err)
	}
	if errors.As(err, &pe) {
		return nil, fmt.Errorf("%s: cannot read it: %w", path, pe.Err)
	}
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse is Load of a file already read (path names it in errors): for a
// reader that opens files its own way, as lab serve does inside its
// results folder.
func Parse(path string, data []byte) (*Run, error) {
	r, err := decode(path, data)
	if err != nil {
		return nil, err
	}
	if err := upgrade(path, data, r); err != nil {
		return nil, err
	}
	if len(r.Boots) == 0 {
		// A run saves results.json before its first boot: while it runs
		// (no finish time yet) that file is what there is. A complete
		// run with no boots had none to make: a build (lab build), or
		// kernels of one image (no code change).
		if r.Finished.IsZero() || r.Complete {
			return r, nil
		}
		return nil, fmt.Errorf("%s: run %s of lab %s has no boots: it stopped before its first boot; its logs are in %s", path, r.RunID, r.Lab, filepath.Dir(path))
	}
	if err := validate(path, r); err != nil {
		return nil, err
	}
	return r, nil
}

// decode parses a results file, saying without Go types where a file that
// is not one stops looking like one.
func decode(path string, data []byte) (*Run, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("%s: empty file: not a lab results file", path)
	}
	var w wire
	err := json.Unmarshal(data, &w)
	w.plain.Series = w.Series
	if len(w.OldList) > 0 {
		w.plain.Series = w.OldList
	}
	r := Run(w.plain)
	if err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		var pe *time.ParseError
		switch {
		case errors.As(err, &se) && se.Error() != "unexpected end of JSON input":
			return nil, fmt.Errorf("%s: not JSON (at byte %d: %v): not a lab results file", path, se.Offset, se)
		case errors.As(err, &se):
			return nil, fmt.Errorf("%s: cut off after %d bytes: not a whole results file (a copy that did not finish?)", path, len(data))
		case errors.As(err, &te) && te.Field == "":
			return nil, fmt.Errorf("%s: not a lab results file: the file is %s, not an object of lab's fields", path, jsonValue(te.Value))
		case errors.As(err, &te):
			// (wire embeds the record as "plain".)
			return nil, fmt.Errorf("%s: not a lab results file: %s holds %s, which lab never writes there", path, strings.TrimPrefix(te.Field, "plain."), jsonValue(te.Value))
		case errors.As(err, &pe):
			return nil, fmt.Errorf("%s: not a lab results file: %q is not a time as lab writes one (e.g. 2026-01-01T14:18:05Z)", path, pe.Value)
		}
		return nil, fmt.Errorf("%s: not a lab results file: %w", path, err)
	}
	if r.Lab == "" {
		return nil, fmt.Errorf("%s: not a lab results file: it has no \"lab\" field (another tool's JSON?)", path)
	}
	return &r, nil
}

// plain is Run without its methods, for decoding.
type plain Run

// wire is a record as any schema wrote it: before schema 5 "series" was
// one object, and a run of several had its series in "series_list"
// ("series" its first).
type wire struct {
	plain
	Series  seriesJSON `json:"series"`
	OldList []Series   `json:"series_list"`
}

// seriesJSON reads "series": a list, or the one object of a record before
// schema 5.
type seriesJSON []Series

func (l *seriesJSON) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return json.Unmarshal(data, (*[]Series)(l))
	}
	var one Series
	if err := json.Unmarshal(data, &one); err != nil {
		return err
	}
	if one.Name == "" && len(one.Patches) == 0 && one.Variants == (variant.Pair[string]{}) {
		return nil // a record without a series
	}
	if one.Variant == "" {
		one.Variant = variant.Patched // the kernel of a run's one series
	}
	*l = seriesJSON{one}
	return nil
}

// Figure is the one number a bisect follows: a benchmark's rate at some
// producer count, or its within-boot scaling ratio rate(P)/rate(1).
type Figure struct {
	Benchmark string `json:"benchmark"`
	Producers int    `json:"producers"`
	Scaling   bool   `json:"scaling,omitempty"`
}

func (f Figure) String() string {
	if f.Scaling {
		return fmt.Sprintf("%s p%d/p1", f.Benchmark, f.Producers)
	}
	return fmt.Sprintf("%s p=%d", f.Benchmark, f.Producers)
}

// Of reads the figure from a boot's results: false when the boot did not
// measure it.
func (f Figure) Of(b Boot) (float64, bool) {
	if f.Scaling {
		for _, r := range b.Ratios() {
			if r.Benchmark == f.Benchmark && r.Tool == "" && r.Producers == f.Producers {
				return r.Value, true
			}
		}
		return 0, false
	}
	for _, r := range b.Results {
		if r.Benchmark == f.Benchmark && r.Tool == "" && r.Producers == f.Producers && r.OK() {
			if v := protocol.Rate(r.Samples); v > 0 {
				return v, true
			}
		}
	}
	return 0, false
}

// Bisect is the record of a lab bisect: the figure it followed, what it
// learnt of every step, and its answer. The boots are the run's Boots.
type Bisect struct {
	Range    string  `json:"range"` // what was bisected: a series and its mode, or a git range
	Each     bool    `json:"each,omitempty"`
	Figure   Figure  `json:"figure"`
	Chosen   string  `json:"chosen"`             // why this figure
	Clock    string  `json:"clock"`              // icount or wall: how steps were judged
	Parallel int     `json:"parallel,omitempty"` // boots at once (icount); 0 or 1: one at a time
	FloorPct float64 `json:"floor_pct,omitempty"`
	// MinFloorPct is the least FloorPct could be: 0.01 % for 1 s samples,
	// more for shorter ones (0 in records from before it: 0.01 %).
	MinFloorPct float64      `json:"min_floor_pct,omitempty"`
	LikePct     float64      `json:"like_pct,omitempty"` // icount: a step this near an end is like it
	Steps       []BisectStep `json:"steps"`
	Outcome     string       `json:"outcome"` // culprit, no change, range, unclear, attributed; Tracked for a track
	Culprit     int          `json:"culprit"` // the step; First..Culprit when a range
	First       int          `json:"first"`
	Change      stats.Change `json:"change"`   // bad end against good end
	Own         stats.Change `json:"own"`      // the culprit against the step before it
	Explains    float64      `json:"explains"` // the culprit's share of the change
	Notes       []string     `json:"notes,omitempty"`
	Boots       int          `json:"boots"` // boots spent
	// Earlier counts the figures of the ends taken from boots before this
	// bisect (the history's, or an earlier lab bisect --run's): not spent.
	Earlier int `json:"earlier,omitempty"`
}

// Found is the Outcome of a bisect that named one step (or a range
// around skipped steps: Culprit is the last of it); Attributed that of one
// that measured every step and shared the change out (--each).
const (
	Found      = "culprit"
	Attributed = "attributed"
)

// StepVariant is the variant a bisect's step k takes in its run's
// profiles (and the kernels a bisect's report names): "step03".
func StepVariant(k int) variant.Variant { return variant.Variant(fmt.Sprintf("step%02d", k)) }

// CulpritCommit is the commit a bisect over a git range named, "" when it
// named none or its steps are not commits of a branch.
func (b *Bisect) CulpritCommit() string {
	if b == nil || b.Outcome != Found || b.Culprit < 0 || b.Culprit >= len(b.Steps) {
		return ""
	}
	return b.Steps[b.Culprit].Commit
}

// Tracked is the Outcome of a lab track's record: its steps are the
// commits it measured, each with its place along the branch.
const Tracked = "tracked"

// BisectStep is one step: the source with the first k patches (or the k-th
// commit of a range).
type BisectStep struct {
	Index   int     `json:"index"`
	Name    string  `json:"name"` // patch file or commit
	Subject string  `json:"subject"`
	Commit  string  `json:"commit"`
	Kernel  *Kernel `json:"kernel,omitempty"`
	// BuildSeconds is what this bisect spent getting the kernel (0 when
	// cached).
	BuildSeconds float64   `json:"build_s"`
	Boots        []int     `json:"boots,omitempty"` // indexes of its boots in the run
	Values       []float64 `json:"values,omitempty"`
	Verdict      string    `json:"verdict"`
	Skip         string    `json:"skip,omitempty"`
	SameAs       int       `json:"same_as"` // the step with the same image, -1 when none
	// Seq is a commit step's place along its branch (git rev-list --count
	// --first-parent): the history orders a bisect's steps among a
	// track's commits by it. 0: unknown (a series' patches).
	Seq int `json:"seq,omitempty"`
}
