package history

import (
	"context"
	"io/fs"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"lab/initramfs/protocol"
	"lab/internal/results"
	"lab/internal/topology"
)

// examples loads every committed run under results/examples.
func examples(t *testing.T) map[string]*results.Run {
	t.Helper()
	runs := map[string]*results.Run{}
	root := filepath.Join("..", "..", "results", "examples")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.Name() != "results.json" {
			return err
		}
		r, err := results.Load(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		runs[rel] = r
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) < 10 {
		t.Fatalf("%d runs under %s: the examples are missing", len(runs), root)
	}
	return runs
}

func TestFromRunExamples(t *testing.T) {
	runs := examples(t)
	var dirs []string
	for d := range runs {
		dirs = append(dirs, d)
	}
	slices.Sort(dirs)
	var recs []*Run
	boots := 0
	for _, d := range dirs {
		r := runs[d]
		h, err := FromRun(r)
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		want := KindRun
		switch {
		case r.Bisect != nil && r.Bisect.Outcome == results.Tracked:
			want = KindTrack
		case r.Bisect != nil:
			want = KindBisect
		}
		if h.Kind != want {
			t.Errorf("%s: kind %s, want %s", d, h.Kind, want)
		}
		wantCulprits := 0
		if bi := r.Bisect; h.Kind == KindBisect && len(bi.Steps) > 1 && bi.Steps[0].Seq > 0 {
			wantCulprits = 1 // a bisect over a git range
		}
		if len(h.Culprits) != wantCulprits {
			t.Errorf("%s: %d culprits, want %d", d, len(h.Culprits), wantCulprits)
		} else if wantCulprits == 1 && h.Culprits[0].Culprit != r.Bisect.CulpritCommit() {
			t.Errorf("%s: culprit %s, want %s", d, h.Culprits[0].Culprit, r.Bisect.CulpritCommit())
		}
		if len(h.Boots) != len(r.Boots) {
			t.Errorf("%s: %d boots, want %d", d, len(h.Boots), len(r.Boots))
		}
		for i, b := range h.Boots {
			if r.Boots[i].OK() && (len(b.Figures) == 0 || b.Digest == "") {
				t.Errorf("%s boot %d: %d figures, digest %q", d, b.Index, len(b.Figures), b.Digest)
			}
		}
		recs = append(recs, h)
		boots += len(h.Boots)
	}
	for _, d := range drivers(t) {
		t.Run(d.name, func(t *testing.T) {
			s := mustOpen(t, d.new(t))
			began := time.Now()
			added := 0
			for _, h := range recs {
				n, err := s.Add(context.Background(), h)
				if err != nil {
					t.Fatal(err)
				}
				added += n
			}
			t.Logf("%d runs, %d boots added in %v", len(recs), added, time.Since(began).Round(time.Millisecond))
			if added != boots {
				t.Errorf("added %d boots, want %d", added, boots)
			}
			before := stats(t, s)
			for _, h := range recs {
				mustAdd(t, s, h, 0)
			}
			// A merge of a run's boots under another id adds nothing
			// either: they are known by their samples.
			merged := *recs[0]
			merged.RunID, merged.Kind = "merged-"+merged.RunID, KindMerge
			mustAdd(t, s, &merged, 0)
			if after := stats(t, s); after.Boots != before.Boots || after.Figures != before.Figures || after.Runs != before.Runs+1 {
				t.Errorf("adding again: %+v, was %+v", after, before)
			}

			// The icount example's baseline uprobe-nop: every baseline
			// boot's rate, in boot order.
			r := runs["uprobe-srcu/x86_64-1cpu-icount"]
			var want []float64
			for _, b := range r.Boots {
				if b.Variant == "baseline" {
					want = append(want, protocol.Rate(b.Results[0].Samples))
				}
			}
			k := LineKey{Lab: "uprobe-srcu", Variant: "baseline", Benchmark: r.Boots[0].Results[0].Benchmark, Producers: 1, Metric: MetricRate,
				Arch: "x86_64", CPUs: 1, Topology: "sockets=1,clusters=1,cores=1,threads=1", Clock: ClockICount, Accel: "tcg",
				HostClass: Host{CPUModel: r.Host.CPUModel, CPUs: r.Host.CPUs, QEMUVersion: r.Boots[0].Outcome.QEMUVersion}.Class()}
			if h := r.Boots[0].Hello; h != nil {
				k.Method = h.Method
			}
			pts, err := s.Points(context.Background(), k)
			if err != nil {
				t.Fatal(err)
			}
			var got []float64
			for _, p := range pts {
				if p.RunID == r.RunID {
					got = append(got, p.Value)
				}
			}
			if len(want) < 2 || !slices.Equal(got, want) {
				t.Errorf("series %v of run %s: %v, want %v", k, r.RunID, got, want)
			}
		})
	}
}

func TestFromRunBisect(t *testing.T) {
	r := examples(t)["uprobe-lazy-buffer/bisect-x86_64-1cpu-icount"]
	if r == nil || r.Bisect == nil {
		t.Fatal("the bisect example is missing")
	}
	h, err := FromRun(r)
	if err != nil {
		t.Fatal(err)
	}
	measured := 0
	for _, step := range r.Bisect.Steps {
		for _, i := range step.Boots {
			b := h.Boots[slices.IndexFunc(h.Boots, func(b Boot) bool { return b.Index == i })]
			if b.Commit != step.Commit || step.Kernel == nil || b.KernelKey != step.Kernel.Info.Key || b.ImageSHA256 != step.Kernel.Info.ImageSHA256 {
				t.Errorf("boot %d: commit %s kernel %s, want step %d's %s", i, b.Commit, b.KernelKey, step.Index, step.Commit)
			}
			measured++
		}
	}
	if measured != len(h.Boots) {
		t.Errorf("%d of %d boots belong to a step", measured, len(h.Boots))
	}
}

func TestFromRunFields(t *testing.T) {
	t.Run("a boot recorded before shapes has the shape lab booted", func(t *testing.T) {
		old := results.Boot{CPUs: 2}
		shaped := results.Boot{CPUs: 2, Shape: &topology.Shape{CPUs: 2, Sockets: 1, Clusters: 1, Cores: 2, Threads: 1, MemoryMiB: 1024}}
		if a, b := topologyOf(old), topologyOf(shaped); a != b || a != "sockets=1,clusters=1,cores=2,threads=1" {
			t.Errorf("without a shape %q, with one %q", a, b)
		}
		numa := results.Boot{CPUs: 4, Shape: &topology.Shape{CPUs: 4, Sockets: 2, Clusters: 1, Cores: 2, Threads: 1,
			Nodes: []topology.Node{{CPUs: []int{0, 1}}, {CPUs: []int{2, 3}}}}}
		if got := topologyOf(numa); got != "sockets=2,clusters=1,cores=2,threads=1,nodes=0-1/2-3" {
			t.Errorf("NUMA: %q", got)
		}
	})
	t.Run("a tarball's whole sha256 from its description", func(t *testing.T) {
		sum := "585a4a074597aefa2b1a68ada83a3184ba351c127544dea80618bbcceaa3961f"
		for _, c := range []struct {
			src  results.Source
			want string
		}{
			{results.Source{ID: "tarball-585a4a074597", Desc: "Debian linux-source-6.12 6.12.117-1~deb12u1, /usr/src/linux-source-6.12.tar.xz (sha256 " + sum + ")"}, sum},
			{results.Source{ID: "tarball-000000000000", Desc: "x.tar.xz (sha256 " + sum + ")"}, ""},
			{results.Source{ID: "git-abc", Desc: "git /src at v6.12 (" + sum + ")"}, ""},
		} {
			if got := tarballSHA256(c.src); got != c.want {
				t.Errorf("%+v: %q, want %q", c.src, got, c.want)
			}
		}
	})
	t.Run("a boot keeps the method its agent named, and none when it named none", func(t *testing.T) {
		r := examples(t)["uprobe-lazy-buffer/bisect-x86_64-1cpu-icount"]
		if r == nil || len(r.Boots) < 2 {
			t.Fatal("the bisect example is missing")
		}
		r.Boots[0].Hello = &protocol.Hello{Method: protocol.Method}
		r.Boots[1].Hello = nil
		h, err := FromRun(r)
		if err != nil {
			t.Fatal(err)
		}
		if h.Boots[0].Method != protocol.Method || h.Boots[1].Method != "" {
			t.Errorf("methods %q and %q", h.Boots[0].Method, h.Boots[1].Method)
		}
	})
	t.Run("a boot without samples has no digest", func(t *testing.T) {
		if d := digest(results.Boot{Results: []protocol.Result{{Benchmark: "x", Error: "no"}}}); d != "" {
			t.Errorf("digest %q", d)
		}
	})
}
