package merge

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"lab/initramfs/protocol"
	"lab/internal/results"
	"lab/internal/runfolder"
	"lab/internal/variant"
	"lab/internal/verdict"
)

// fixture writes synthetic shard folders of one run: pairs boot pairs of a
// one-shape lab dealt to n shards as lab run --shard deals them, every
// figure a function of the boot number, so that any mix-up shows.
type fixture struct {
	t     *testing.T
	root  string
	pairs int
	n     int
	start time.Time
}

func newFixture(t *testing.T, pairs, n int) fixture {
	return fixture{t: t, root: t.TempDir(), pairs: pairs, n: n, start: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
}

func (f fixture) matrix() results.Matrix {
	return results.Matrix{Arch: []string{"x86_64"}, CPUs: []int{1}, Memory: "1G", Benchmarks: []string{"uprobe-nop"},
		Producers: []int{1}, Boots: f.pairs, Measure: "auto", Duration: time.Second}
}

// indexes is what shard k boots: pair p (boots 2p+1, 2p+2) goes to shard
// p mod n.
func (f fixture) indexes(k int) []int {
	var out []int
	for p := k; p < f.pairs; p += f.n {
		out = append(out, 2*p+1, 2*p+2)
	}
	return out
}

// rate is boot i's figure: patched 1 % faster than its baseline, each
// host's speed factored in.
func rate(i int, hostSpeed float64) float64 {
	r := (100 + float64((i-1)/2)) * hostSpeed
	if i%2 == 0 {
		r *= 1.01
	}
	return r
}

// run is shard k's run as lab run --shard k/n records it, boots included.
func (f fixture) run(k int, host string, speed float64) *results.Run {
	idx := f.indexes(k)
	r := &results.Run{
		Lab: "fake", LabFile: "labs/fake.yaml", LabVersion: "abc1234", RunID: fmt.Sprintf("x-shard%d-of-%d", k, f.n),
		Command: []string{"lab", "run", "labs/fake.yaml", "--shard", fmt.Sprintf("%d/%d", k, f.n)},
		Started: f.start, Finished: f.start.Add(time.Duration(len(idx)) * time.Minute), Complete: true,
		Source: results.Source{ID: "linux-6.12"}, Series: []results.Series{{Name: "fake", Mode: "apply", Hash: "s1", Variant: variant.Patched}},
		Matrix: f.matrix(), Host: results.Host{Name: host, CPUModel: "Test CPU", CPUs: 2, Kernel: "6.1.0"},
		Kernels: []results.Kernel{
			{Arch: "x86_64", Variant: variant.Baseline, Info: results.Build{Key: "kb"}},
			{Arch: "x86_64", Variant: variant.Patched, Info: results.Build{Key: "kp"}},
		},
		Initramfs: []results.Initramfs{{Arch: "x86_64", Key: "i1"}},
		Shard:     &results.Shard{K: k, N: f.n, Boots: len(idx)},
	}
	for _, i := range idx {
		v := variant.Baseline
		if i%2 == 0 {
			v = variant.Patched
		}
		hits := uint64(rate(i, speed) * 1e6)
		r.Boots = append(r.Boots, results.Boot{
			Index: i, Round: (i - 1) / 2, Arch: "x86_64", CPUs: 1, Variant: v, Clock: "icount",
			Console: filepath.Join("boots", fmt.Sprintf("%02d-x86_64-1cpu-%s", i, v), "console.log"),
			Results: []protocol.Result{{Benchmark: "uprobe-nop", Producers: 1,
				Samples: []protocol.Sample{{IntervalNS: 1e9, Hits: hits, Rate: float64(hits)}}}},
		})
	}
	return r
}

// write saves r as a shard folder named name, console logs included.
func (f fixture) write(name string, r *results.Run) Shard {
	f.t.Helper()
	dir := filepath.Join(f.root, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		f.t.Fatal(err)
	}
	for _, b := range r.Boots {
		p := filepath.Join(dir, b.Console)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(fmt.Sprintf("console of boot %d on %s\n", b.Index, r.Host.Name)), 0o644); err != nil {
			f.t.Fatal(err)
		}
	}
	if err := (runfolder.Folder{Dir: dir}).Save(r); err != nil {
		f.t.Fatal(err)
	}
	loaded, err := Load([]string{dir})
	if err != nil {
		f.t.Fatal(err)
	}
	return loaded[0]
}

// all writes every shard, shard k on host hosts[k % len(hosts)].
func (f fixture) all(hosts ...string) []Shard {
	var out []Shard
	for k := 0; k < f.n; k++ {
		h := hosts[k%len(hosts)]
		out = append(out, f.write(fmt.Sprintf("%s-%d", h, k), f.run(k, h, 1+0.2*float64(k%len(hosts)))))
	}
	return out
}

// The merged run is the union of the shards' boots, in boot order, each
// with its shard's host; written out it is a normal run that reports as a
// single-host run does.
func TestMergeIsTheUnion(t *testing.T) {
	for _, tc := range []struct {
		name     string
		pairs, n int
		hosts    []string
	}{
		{"3 pairs over 2 shards, one host", 3, 2, []string{"node1"}},
		{"4 pairs over 4 hosts", 4, 4, []string{"a", "b", "c", "d"}},
		{"5 pairs over 3 shards, 2 hosts", 5, 3, []string{"a", "b"}},
		{"one shard", 2, 1, []string{"a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.pairs, tc.n)
			shards := f.all(tc.hosts...)
			res, err := Merge(shards, Options{Command: []string{"lab", "merge"}, RunID: "m"})
			if err != nil {
				t.Fatal(err)
			}
			m := res.Run
			if m.Shard != nil || !m.Complete || len(res.Caveats) != 0 {
				t.Errorf("shard %v, complete %v, caveats %v", m.Shard, m.Complete, res.Caveats)
			}
			if !IsMerged(m) || len(m.Merged.Shards) != len(shards) || m.Merged.Shards[0] != shards[0].Run.RunID {
				t.Errorf("merged %+v: want the %d shards' run ids", m.Merged, len(shards))
			}
			want := map[int]results.Boot{}
			for _, s := range shards {
				for _, b := range s.Run.Boots {
					b.Host = &s.Run.Host
					want[b.Index] = b
				}
			}
			if len(m.Boots) != 2*tc.pairs || len(want) != 2*tc.pairs {
				t.Fatalf("%d boots merged, %d in the shards, want %d", len(m.Boots), len(want), 2*tc.pairs)
			}
			for i, b := range m.Boots {
				if b.Index != i+1 {
					t.Errorf("boot %d has index %d: not in boot order", i, b.Index)
				}
				if !reflect.DeepEqual(b, want[b.Index]) {
					t.Errorf("boot %d: merged %+v\nshard %+v", b.Index, b, want[b.Index])
				}
			}
			out := filepath.Join(t.TempDir(), "merged")
			if err := Write(res, out, shards); err != nil {
				t.Fatal(err)
			}
			back, err := results.Load(filepath.Join(out, "results.json"))
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range back.Boots {
				data, err := os.ReadFile(filepath.Join(out, b.Console))
				if err != nil || !strings.Contains(string(data), fmt.Sprintf("boot %d on %s", b.Index, b.Host.Name)) {
					t.Errorf("boot %d console: %q %v", b.Index, data, err)
				}
			}
			tables := verdict.Tables(back)
			if len(tables) != 1 || tables[0].Boots.Baseline != tc.pairs || tables[0].Boots.Patched != tc.pairs {
				t.Fatalf("tables %+v", tables)
			}
			if paired := len(tc.hosts) > 1 && tc.n > 1; tables[0].Paired != paired {
				t.Errorf("paired %v with hosts %v", tables[0].Paired, tables[0].Hosts)
			}
		})
	}
}

// Shards of different runs are refused, naming the field and both values.
func TestMergeRefusesOtherRuns(t *testing.T) {
	for _, tc := range []struct {
		field  string
		change func(r *results.Run)
		a, b   string
	}{
		{"lab", func(r *results.Run) { r.Lab = "other" }, "fake", "other"},
		{"lab version", func(r *results.Run) { r.LabVersion = "def5678" }, "abc1234", "def5678"},
		{"series sha256 of patched", func(r *results.Run) { r.Series[0].Hash = "s2" }, "s1", "s2"},
		{"matrix cpus", func(r *results.Run) { r.Matrix.CPUs = []int{2} }, "[1]", "[2]"},
		{"matrix duration_ns", func(r *results.Run) { r.Matrix.Duration = 5 * time.Second }, "1000000000", "5000000000"},
		{"kernel key x86_64/patched", func(r *results.Run) { r.Kernels[1].Info.Key = "kp2" }, "kp", "kp2"},
		{"kernel key arm64/baseline", func(r *results.Run) {
			r.Kernels = append(r.Kernels, results.Kernel{Arch: "arm64", Variant: variant.Baseline, Info: results.Build{Key: "ka"}})
		}, "none", "ka"},
		{"initramfs key x86_64", func(r *results.Run) { r.Initramfs[0].Key = "i2" }, "i1", "i2"},
		{"claims", func(r *results.Run) { r.Claims = []results.Claim{{Benchmark: "uprobe-nop", Direction: "faster"}} }, "null", ""},
		{"shard count", func(r *results.Run) { r.Shard.N = 3 }, "2", "3"},
	} {
		t.Run(tc.field, func(t *testing.T) {
			f := newFixture(t, 2, 2)
			a := f.write("a", f.run(0, "h", 1))
			r := f.run(1, "h", 1)
			tc.change(r)
			b := f.write("b", r)
			_, err := Merge([]Shard{a, b}, Options{})
			var de *DiffError
			if !errors.As(err, &de) {
				t.Fatalf("merged, or not a DiffError: %v", err)
			}
			if de.Field != tc.field || (tc.a != "" && de.A != tc.a) || (tc.b != "" && de.B != tc.b) || de.A == de.B {
				t.Errorf("field %q (%s against %s), want %q (%s against %s)", de.Field, de.A, de.B, tc.field, tc.a, tc.b)
			}
			if !strings.Contains(err.Error(), tc.field) || !strings.Contains(err.Error(), a.Dir) || !strings.Contains(err.Error(), b.Dir) {
				t.Errorf("message %q names neither the field nor the folders", err)
			}
		})
	}
}

// Only shards merge: not a whole run, not a bisect.
func TestMergeRefusesNonShards(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(r *results.Run)
		want   string
	}{
		{"whole run", func(r *results.Run) { r.Shard = nil }, "not a shard"},
		{"bisect", func(r *results.Run) { r.Bisect = &results.Bisect{} }, "bisect"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, 2, 2)
			r := f.run(0, "h", 1)
			tc.change(r)
			_, err := Merge([]Shard{f.write("a", r)}, Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want %q", err, tc.want)
			}
		})
	}
}

// A missing or partial shard is merged with a caveat saying which and how
// many boots, or refused with Complete.
func TestMergeMissingAndPartialShards(t *testing.T) {
	for _, tc := range []struct {
		name   string
		shard1 func(f fixture) []Shard // shard 1's folders
		boots  []int                   // boot numbers merged
		caveat string
	}{
		{"missing", func(f fixture) []Shard { return nil }, []int{1, 2, 5, 6}, "shard 1/2 is missing: boots 3, 4 (2 of the run's) were not run"},
		{"cancelled after one boot", func(f fixture) []Shard {
			r := f.run(1, "h", 1)
			r.Boots, r.Complete = r.Boots[:1], false
			return []Shard{f.write("b", r)}
		}, []int{1, 2, 3, 5, 6}, "shard 1/2 is partial: 1 of 2 boots"},
		{"cancelled during its second boot", func(f fixture) []Shard {
			r := f.run(1, "h", 1)
			r.Boots[1].Failure, r.Complete = &results.Failure{Kind: results.FailInterrupt, Message: "interrupted"}, false
			return []Shard{f.write("b", r)}
		}, []int{1, 2, 3, 5, 6}, "shard 1/2 is partial: 1 of 2 boots"},
		{"QEMU killed with the task", func(f fixture) []Shard {
			r := f.run(1, "h", 1)
			r.Boots[1].Failure, r.Complete = &results.Failure{Kind: results.FailInfra, Message: "qemu-system-x86_64 exited: signal: terminated"}, false
			return []Shard{f.write("b", r)}
		}, []int{1, 2, 3, 5, 6}, "shard 1/2 is partial: 1 of 2 boots"},
		{"node died before a boot was saved", func(f fixture) []Shard {
			r := f.run(1, "h", 1)
			r.Boots, r.Complete = nil, false
			return []Shard{f.write("b", r)}
		}, []int{1, 2, 5, 6}, "shard 1/2 is partial: 0 of 2 boots"},
		{"a boot failed", func(f fixture) []Shard {
			r := f.run(1, "h", 1)
			r.Boots[1].Failure, r.Complete = &results.Failure{Kind: results.FailPanic, Message: "Kernel panic"}, false
			return []Shard{f.write("b", r)}
		}, []int{1, 2, 3, 4, 5, 6}, "shard 1/2 did not end cleanly: all 2 boots recorded, 1 of them failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, 3, 2)
			shards := append([]Shard{f.write("a", f.run(0, "h", 1))}, tc.shard1(f)...)
			res, err := Merge(shards, Options{})
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			for _, b := range res.Run.Boots {
				got = append(got, b.Index)
			}
			if !reflect.DeepEqual(got, tc.boots) {
				t.Errorf("boots %v, want %v", got, tc.boots)
			}
			if res.Run.Complete || len(res.Caveats) != 1 || !strings.Contains(res.Caveats[0], tc.caveat) {
				t.Errorf("complete %v, caveats %q, want %q", res.Run.Complete, res.Caveats, tc.caveat)
			}
			if !strings.Contains(strings.Join(res.Run.Notes, "\n"), tc.caveat) {
				t.Errorf("notes %q lack the caveat", res.Run.Notes)
			}
			_, err = Merge(shards, Options{Complete: true})
			var ie *IncompleteError
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), tc.caveat) {
				t.Errorf("--complete: %v, want a refusal naming %q", err, tc.caveat)
			}
		})
	}
}

// A resubmitted shard fills the hole: the complete folder wins, whichever
// came first, and merging again into the same folder replaces the merge.
func TestMergeResubmittedShard(t *testing.T) {
	for _, tc := range []struct {
		name         string
		partialFirst bool
	}{
		{"partial, then resubmitted", true},
		{"complete, then a cancelled duplicate", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, 3, 2)
			a := f.write("a", f.run(0, "h1", 1))
			cut := f.run(1, "h2", 1.5)
			cut.Boots, cut.Complete = cut.Boots[:1], false
			redo := f.run(1, "h3", 1.2)
			if tc.partialFirst {
				redo.Started = cut.Started.Add(time.Hour)
			} else {
				cut.Started = redo.Started.Add(time.Hour)
			}
			partial, whole := f.write("b-first", cut), f.write("b-again", redo)
			out := filepath.Join(t.TempDir(), "merged")
			first, err := Merge([]Shard{a, partial}, Options{Command: []string{"lab", "merge"}})
			if err != nil || first.Run.Complete {
				t.Fatalf("first merge: %v, complete %v", err, first.Run.Complete)
			}
			if err := Write(first, out, []Shard{a, partial}); err != nil {
				t.Fatal(err)
			}
			shards := []Shard{a, partial, whole}
			res, err := Merge(shards, Options{Command: []string{"lab", "merge"}, Complete: true})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Run.Complete || len(res.Caveats) != 0 || len(res.Run.Boots) != 6 {
				t.Fatalf("complete %v, caveats %v, %d boots", res.Run.Complete, res.Caveats, len(res.Run.Boots))
			}
			for _, b := range res.Run.Boots {
				if b.Index == 3 || b.Index == 4 {
					if b.Host.Name != "h3" || res.From[b.Index] != whole.Dir {
						t.Errorf("boot %d from %s (%s), want the complete folder", b.Index, b.Host.Name, res.From[b.Index])
					}
				}
			}
			if !strings.Contains(strings.Join(res.Run.Notes, "\n"), "superseded "+partial.Dir) {
				t.Errorf("notes %q do not say the partial folder was superseded", res.Run.Notes)
			}
			if err := Write(res, out, shards); err != nil {
				t.Fatalf("merge again into %s: %v", out, err)
			}
			back, err := results.Load(filepath.Join(out, "results.json"))
			if err != nil || len(back.Boots) != 6 || !back.Complete {
				t.Fatalf("merged again: %v", err)
			}
			console, _ := os.ReadFile(filepath.Join(out, back.Boots[2].Console))
			if !strings.Contains(string(console), "on h3") {
				t.Errorf("boot 3's console %q is not the resubmitted shard's", console)
			}
		})
	}
}

// Write refuses to overwrite a run lab merge did not make, or a shard.
func TestWriteRefuses(t *testing.T) {
	f := newFixture(t, 2, 2)
	shards := f.all("h")
	res, err := Merge(shards, Options{Command: []string{"lab", "merge"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := Write(res, shards[0].Dir, shards); err == nil || !strings.Contains(err.Error(), "is one of the shards") {
		t.Errorf("into a shard: %v", err)
	}
	other := filepath.Join(t.TempDir(), "run")
	os.MkdirAll(other, 0o755)
	whole := f.run(0, "h", 1)
	whole.Shard, whole.Command = nil, []string{"lab", "run"}
	if err := (runfolder.Folder{Dir: other}).Save(whole); err != nil {
		t.Fatal(err)
	}
	if err := Write(res, other, shards); err == nil || !strings.Contains(err.Error(), "did not make") {
		t.Errorf("into a run folder: %v", err)
	}
}

// Patterns are expanded (for engines that run lab without a shell), and a
// pattern that matches nothing is an error.
func TestLoadExpandsPatterns(t *testing.T) {
	f := newFixture(t, 2, 2)
	f.all("h")
	got, err := Load([]string{filepath.Join(f.root, "h-*")})
	if err != nil || len(got) != 2 {
		t.Fatalf("%d shards, %v", len(got), err)
	}
	if _, err := Load([]string{filepath.Join(f.root, "none-*")}); err == nil || !strings.Contains(err.Error(), "no shard folder matches") {
		t.Errorf("empty pattern: %v", err)
	}
	if _, err := Load([]string{filepath.Join(f.root, "nothing")}); err == nil {
		t.Error("a folder without results.json loaded")
	}
}
