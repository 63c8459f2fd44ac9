// Package merge makes one run of the shards of a run spread over hosts (lab
// run --shard K/N on each): it refuses shards that are not of the same run
// (lab file, lab version, kernels, initramfs), keeps each boot's host, and
// says which shards are missing or partial, so that a resubmitted shard
// fills the hole on the next merge.
package merge

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"lab/internal/results"
	"lab/internal/runfolder"
	"lab/internal/shard"
	"lab/internal/variant"
)

// Shard is one shard's run folder.
type Shard struct {
	Dir string
	Run *results.Run
}

// Load reads the run folders. An argument that is not a path but a pattern
// (shards/uprobe-srcu/*) is expanded, so that engines without a shell can
// pass one.
func Load(args []string) ([]Shard, error) {
	dirs, err := expand(args)
	if err != nil {
		return nil, err
	}
	var out []Shard
	for _, d := range dirs {
		r, err := loadShard(d)
		if err != nil {
			return nil, fmt.Errorf("shard %s: %w", d, err)
		}
		out = append(out, Shard{Dir: d, Run: r})
	}
	return out, nil
}

// loadShard reads a shard's results.json. results.Load refuses a run that
// ended before its first boot; for a shard that is what a task cancelled
// early leaves, a partial shard of 0 boots, which the merge reports.
func loadShard(dir string) (*results.Run, error) {
	path := runfolder.Folder{Dir: dir}.Results()
	r, err := results.Load(path)
	if err == nil {
		return r, nil
	}
	data, rerr := os.ReadFile(path)
	if rerr != nil {
		return nil, err
	}
	var raw results.Run
	if json.Unmarshal(data, &raw) != nil || raw.Lab == "" || raw.Shard == nil || len(raw.Boots) > 0 || raw.Schema != results.Schema {
		return nil, err
	}
	return &raw, nil
}

func expand(args []string) ([]string, error) {
	var dirs []string
	for _, a := range args {
		if _, err := os.Stat(a); err == nil || !strings.ContainsAny(a, "*?[") {
			dirs = append(dirs, a)
			continue
		}
		m, err := filepath.Glob(a)
		if err != nil {
			return nil, fmt.Errorf("pattern %s: %w", a, err)
		}
		if len(m) == 0 {
			return nil, fmt.Errorf("%s: no shard folder matches", a)
		}
		dirs = append(dirs, m...)
	}
	if len(dirs) == 0 {
		return nil, errors.New("no shard folders given")
	}
	return dirs, nil
}

// Options are how to merge.
type Options struct {
	// Complete refuses the merge when a shard is missing or partial.
	Complete bool
	// Command is the command line, recorded as the merged run's.
	Command []string
	// RunID names the merged run.
	RunID string
}

// Result is the merged run and what went into it.
type Result struct {
	Run *results.Run
	// From are the folders whose boots are in the run, by boot index.
	From map[int]string
	// Caveats say which shards are missing or partial (also in Run.Notes).
	Caveats []string
}

// IncompleteError is a merge refused by Options.Complete.
type IncompleteError struct{ Shards []string }

func (e *IncompleteError) Error() string {
	return "--complete: " + strings.Join(e.Shards, "; ")
}

// Merge makes one run of the shards.
func Merge(shards []Shard, opt Options) (*Result, error) {
	if err := check(shards); err != nil {
		return nil, err
	}
	n := shards[0].Run.Shard.N
	expected, err := expectedBoots(shards, n)
	if err != nil {
		return nil, err
	}
	for _, s := range shards {
		if want := len(expected[s.Run.Shard.K]); s.Run.Shard.Boots != want {
			return nil, fmt.Errorf("%s: shard %d/%d was to make %d boots, but the lab's matrix deals it %d", s.Dir, s.Run.Shard.K, n, s.Run.Shard.Boots, want)
		}
	}
	byK := groupByShard(shards)
	res := &Result{From: map[int]string{}}
	merged := base(shards, opt)
	var notes, bad []string
	complete := true
	for k := 0; k < n; k++ {
		got := byK[k]
		want := expected[k]
		if len(got) == 0 {
			c := fmt.Sprintf("shard %d/%d is missing: boots %s (%d of the run's) were not run; resubmit that shard and merge again", k, n, intList(want), len(want))
			res.Caveats, bad, complete = append(res.Caveats, c), append(bad, c), false
			continue
		}
		kept, from := pick(got)
		for _, b := range kept {
			merged.Boots = append(merged.Boots, b)
			res.From[b.Index] = from[b.Index]
		}
		notes = append(notes, shardNote(k, n, got, kept))
		if c := partial(k, n, got[0], kept, want); c != "" {
			res.Caveats, bad, complete = append(res.Caveats, c), append(bad, c), false
		}
	}
	if opt.Complete && len(bad) > 0 {
		return nil, &IncompleteError{Shards: bad}
	}
	merged.SortBoots()
	merged.Complete = complete && allComplete(byK)
	merged.Notes = append(append(append([]string(nil), res.Caveats...), notes...), shardNotes(shards)...)
	merged.Caveats = res.Caveats
	res.Run = merged
	return res, nil
}

// base is the merged run without boots: what every shard shares, the
// span of their times, and the hosts.
func base(shards []Shard, opt Options) *results.Run {
	first := *shards[0].Run
	r := first
	r.Boots, r.Notes, r.Shard, r.Bisect, r.Caveats = nil, nil, nil, nil, nil
	r.RunID, r.Command = opt.RunID, opt.Command
	r.Merged, r.Kind = &results.Merged{}, results.KindMerge
	for _, s := range shards {
		r.Merged.Shards = append(r.Merged.Shards, s.Run.RunID)
		if s.Run.Started.Before(r.Started) {
			r.Started = s.Run.Started
		}
		if s.Run.Finished.After(r.Finished) {
			r.Finished = s.Run.Finished
		}
	}
	r.Elapsed = r.Finished.Sub(r.Started)
	if r.Finished.IsZero() {
		r.Elapsed = 0
	}
	r.Host = hosts(shards)
	return &r
}

// hosts is the merged run's host: the one host, or all of them named.
func hosts(shards []Shard) results.Host {
	var names, models, kernels []string
	h := shards[0].Run.Host
	for _, s := range shards {
		sh := s.Run.Host
		names, models, kernels = addOnce(names, sh.ID()), addOnce(models, sh.CPUModel), addOnce(kernels, sh.Kernel)
		h.CPUs = min(h.CPUs, sh.CPUs)
	}
	if len(names) == 1 {
		return h
	}
	h.Name = fmt.Sprintf("%d hosts: %s", len(names), strings.Join(names, ", "))
	h.CPUModel, h.Kernel = strings.Join(models, " / "), strings.Join(kernels, " / ")
	return h
}

func addOnce(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// groupByShard puts each shard's folders best first: a complete folder
// before a partial one (a resubmission that finished before the attempt
// that did not), then the one with more boots, then the later.
func groupByShard(shards []Shard) map[int][]Shard {
	out := map[int][]Shard{}
	for _, s := range shards {
		out[s.Run.Shard.K] = append(out[s.Run.Shard.K], s)
	}
	for _, list := range out {
		sort.SliceStable(list, func(i, j int) bool { return better(list[i], list[j]) })
	}
	return out
}

func better(a, b Shard) bool {
	if wa, wb := whole(a), whole(b); wa != wb {
		return wa
	}
	if oa, ob := okBoots(a.Run), okBoots(b.Run); oa != ob {
		return oa > ob
	}
	return a.Run.Started.After(b.Run.Started)
}

// whole is a shard that ran to its end and recorded all its boots.
func whole(s Shard) bool { return s.Run.Complete && len(s.Run.Boots) >= s.Run.Shard.Boots }

func okBoots(r *results.Run) int {
	n := 0
	for _, b := range r.Boots {
		if b.OK() {
			n++
		}
	}
	return n
}

// pick takes each boot index from the best folder that has it, with the
// host of that folder's run on the boot; from names the folder. A boot
// that failed through no fault of its kernel (interrupted when the task was
// cancelled, QEMU killed with it: see hole) is left out, so that the shard
// shows as partial and a resubmission fills it.
func pick(list []Shard) ([]results.Boot, map[int]string) {
	from := map[int]string{}
	var out []results.Boot
	for _, s := range list {
		host := s.Run.Host
		for _, b := range s.Run.Boots {
			if _, ok := from[b.Index]; ok || hole(b) {
				continue
			}
			from[b.Index] = s.Dir
			if b.Host == nil {
				h := host
				b.Host = &h
			}
			out = append(out, b)
		}
	}
	return out, from
}

// hole is a boot that did not measure the kernel: interrupted, or stopped
// by the host (infrastructure: when Slurm cancels a task, QEMU may get the
// signal before lab does). A kernel's own failure (panic, hang) is data.
func hole(b results.Boot) bool { return b.Failure != nil && !b.Failure.KernelFault() }

// partial says what a shard lacks, "" when nothing.
func partial(k, n int, best Shard, kept []results.Boot, want []int) string {
	have := map[int]bool{}
	for _, b := range kept {
		have[b.Index] = true
	}
	var lost []int
	for _, i := range want {
		if !have[i] {
			lost = append(lost, i)
		}
	}
	switch {
	case len(lost) > 0:
		return fmt.Sprintf("shard %d/%d is partial: %d of %d boots (%s: the run did not finish, e.g. a cancelled task or a lost node); boots %s were not run or were stopped by the host, and are not in this run: resubmit the shard and merge again",
			k, n, len(want)-len(lost), len(want), best.Dir, intList(lost))
	case !best.Run.Complete:
		return fmt.Sprintf("shard %d/%d did not end cleanly: all %d boots recorded, %d of them failed (%s)", k, n, len(want), len(want)-okCount(kept), best.Dir)
	}
	return ""
}

func okCount(boots []results.Boot) int {
	n := 0
	for _, b := range boots {
		if b.OK() {
			n++
		}
	}
	return n
}

func allComplete(byK map[int][]Shard) bool {
	for _, list := range byK {
		if !list[0].Run.Complete {
			return false
		}
	}
	return true
}

// shardNote says where a shard's boots come from, and which folders a
// better one superseded.
func shardNote(k, n int, got []Shard, kept []results.Boot) string {
	s := fmt.Sprintf("shard %d/%d: %d boots from %s (host %s)", k, n, len(kept), got[0].Dir, got[0].Run.Host.ID())
	for _, o := range got[1:] {
		s += fmt.Sprintf("; superseded %s (%d of %d boots, complete %v)", o.Dir, len(o.Run.Boots), o.Run.Shard.Boots, o.Run.Complete)
	}
	return s
}

// shardNotes are the shards' own notes, once each.
func shardNotes(shards []Shard) []string {
	var out []string
	for _, s := range shards {
		for _, n := range s.Run.Notes {
			out = addOnce(out, n)
		}
	}
	return out
}

// expectedBoots is every shard's boot numbers, worked out from the lab's
// matrix as lab run --shard deals them; the variants are those the shards
// booted (a run with --only boots one).
func expectedBoots(shards []Shard, n int) ([][]int, error) {
	// The run's kernels, as lab run deals them: the baseline and each
	// series' kernel; a run of one of them (--only) boots it alone.
	kernels := variant.Kernels(shards[0].Run.SeriesVariants())
	var vs []variant.Variant
	for _, v := range kernels {
		for _, s := range shards {
			if slices.ContainsFunc(s.Run.Boots, func(b results.Boot) bool { return b.Variant == v }) {
				vs = append(vs, v)
				break
			}
		}
	}
	if len(vs) != 1 {
		vs = kernels
	}
	m := shards[0].Run.Matrix
	boots := shards[0].Run.ShapeBoots
	if len(boots) == 0 { // shards from before per-shape boots: the same on every shape
		shapes, err := m.ShapeCount()
		if err != nil {
			return nil, fmt.Errorf("the shards' matrix: %w", err)
		}
		boots = shard.Same(shapes, m.Boots)
	}
	out, _ := shard.Deal(boots, vs, n)
	return out, nil
}

func intList(xs []int) string {
	var s []string
	for _, x := range xs {
		s = append(s, fmt.Sprint(x))
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// Identity is what every shard of one run must share: name and value.
type Identity struct{ Field, Value string }

// identities lists a run's identity fields in a fixed order.
func identities(r *results.Run) []Identity {
	out := []Identity{
		{"lab", r.Lab},
		{"lab file sha256", r.LabSHA256},
		{"lab version", r.LabVersion},
		{"kernel source", r.Source.ID},
		{"claims", jsonText(r.Claims)},
	}
	out = append(out, matrixFields(r)...)
	for _, s := range r.Series {
		out = append(out, Identity{"series sha256 of " + string(s.Variant), s.Hash}, Identity{"series mode of " + string(s.Variant), s.Mode})
	}
	for _, k := range r.Kernels {
		out = append(out, Identity{fmt.Sprintf("kernel key %s/%s", k.Arch, k.Variant), k.Info.Key})
	}
	for _, i := range r.Initramfs {
		out = append(out, Identity{"initramfs key " + i.Arch, i.Key})
	}
	return out
}

// matrixFields is the matrix (lab file and flags) field by field, so that
// a refusal names the field that differs.
func matrixFields(r *results.Run) []Identity {
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(jsonText(r.Matrix)), &m); err != nil {
		return []Identity{{"matrix", jsonText(r.Matrix)}}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []Identity
	for _, k := range keys {
		out = append(out, Identity{"matrix " + strings.ToLower(k), string(m[k])})
	}
	return out
}

func jsonText(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return string(data)
}

// DiffError is two shards that are not of the same run.
type DiffError struct {
	Field      string
	A, B       string // the values
	DirA, DirB string
}

func (e *DiffError) Error() string {
	return fmt.Sprintf("%s and %s are not shards of the same run: %s differs: %s against %s", e.DirA, e.DirB, e.Field, e.A, e.B)
}

// check refuses folders that are not shards, or not of the same run.
func check(shards []Shard) error {
	if len(shards) == 0 {
		return errors.New("no shards to merge")
	}
	for _, s := range shards {
		switch {
		case s.Run.Bisect != nil:
			return fmt.Errorf("%s is a lab bisect, not a shard of a run", s.Dir)
		case s.Run.Shard == nil:
			return fmt.Errorf("%s is not a shard (lab run --shard K/N makes shards; this is a whole run)", s.Dir)
		}
	}
	first := shards[0]
	ref := fieldMap(identities(first.Run))
	for _, s := range shards[1:] {
		if s.Run.Shard.N != first.Run.Shard.N {
			return &DiffError{Field: "shard count", A: fmt.Sprint(first.Run.Shard.N), B: fmt.Sprint(s.Run.Shard.N), DirA: first.Dir, DirB: s.Dir}
		}
		if err := sameIdentity(first, s, ref); err != nil {
			return err
		}
	}
	return nil
}

func fieldMap(ids []Identity) map[string]string {
	m := map[string]string{}
	for _, id := range ids {
		m[id.Field] = id.Value
	}
	return m
}

// sameIdentity compares s with the first shard, field by field in a fixed
// order, fields either lacks included.
func sameIdentity(first, s Shard, ref map[string]string) error {
	got := fieldMap(identities(s.Run))
	var fields []string
	for _, id := range append(identities(first.Run), identities(s.Run)...) {
		fields = addOnce(fields, id.Field)
	}
	for _, f := range fields {
		a, okA := ref[f]
		b, okB := got[f]
		if !okA {
			a = "none"
		}
		if !okB {
			b = "none"
		}
		if a != b {
			return &DiffError{Field: f, A: a, B: b, DirA: first.Dir, DirB: s.Dir}
		}
	}
	return nil
}

// Write saves the merged run in dir: results.json, and each kept boot's
// folder (console log, QEMU's and the guest's views) copied from its
// shard, so that the run folder stands alone. A folder lab merge wrote
// before is replaced; any other run folder is refused.
func Write(res *Result, dir string, shards []Shard) error {
	if err := prepareDir(dir, shards); err != nil {
		return err
	}
	for _, b := range res.Run.Boots {
		if err := copyBoot(res.From[b.Index], dir, b.Console); err != nil {
			return fmt.Errorf("boot %d: %w", b.Index, err)
		}
	}
	if err := (runfolder.Folder{Dir: dir}).Save(res.Run); err != nil {
		return fmt.Errorf("write the merged run: %w", err)
	}
	return nil
}

// prepareDir makes dir, or empties a merge made there before.
func prepareDir(dir string, shards []Shard) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	for _, s := range shards {
		if sa, _ := filepath.Abs(s.Dir); sa == abs {
			return fmt.Errorf("-o %s is one of the shards", dir)
		}
	}
	folder := runfolder.Folder{Dir: dir}
	prev := folder.Results()
	_, err = os.Stat(prev)
	if errors.Is(err, os.ErrNotExist) {
		return os.MkdirAll(dir, 0o755)
	}
	old, err := results.Load(prev)
	switch {
	case err != nil:
		return fmt.Errorf("-o %s: %w", dir, err)
	case !IsMerged(old):
		return fmt.Errorf("-o %s holds a run lab merge did not make: give an empty or new folder", dir)
	default:
		if err := folder.Clear(); err != nil {
			return fmt.Errorf("replace the merge in %s: %w", dir, err)
		}
	}
	return os.MkdirAll(dir, 0o755)
}

// IsMerged reports whether lab merge made r.
func IsMerged(r *results.Run) bool { return r.Kind == results.KindMerge }

// copyBoot copies a boot's folder (the console log's) from a shard folder.
func copyBoot(from, to, console string) error {
	if console == "" {
		return nil
	}
	rel := filepath.Dir(console)
	src := filepath.Join(from, rel)
	if _, err := os.Stat(src); errors.Is(err, os.ErrNotExist) {
		return nil // the boot failed before it had a folder
	}
	dst := filepath.Join(to, rel)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	return os.CopyFS(dst, os.DirFS(src))
}
