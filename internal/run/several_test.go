package run

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"lab/internal/merge"
	"lab/internal/report"
	"lab/internal/runfolder"
	"lab/internal/series"
	"lab/internal/shard"
	"lab/internal/spec"
	"lab/internal/variant"
	"lab/internal/vm"
)

// severalOutcome is a fake boot whose uprobe-nop rate depends on its
// kernel: v1 1 % faster than the baseline, v2 1 % faster than v1; the
// controls do not move.
func severalOutcome(c vm.Config) *vm.Outcome {
	out := goodOutcome(c, 1e6)
	speed := 1.0
	switch {
	case strings.HasSuffix(c.Kernel, "-v1"):
		speed = 1.01
	case strings.HasSuffix(c.Kernel, "-v2"):
		speed = 1.0201
	}
	for _, rec := range out.Records {
		if rec.Result != nil && rec.Result.Benchmark == "uprobe-nop" {
			for i := range rec.Result.Samples {
				s := &rec.Result.Samples[i]
				s.Rate *= speed
				s.Hits = uint64(s.Rate)
			}
		}
	}
	return out
}

func severalOptions(t *testing.T, names ...variant.Variant) Options {
	opt := Options{Lab: fakeLab(3, 1), ResultsDir: t.TempDir(), Out: &bytes.Buffer{}, Command: []string{"lab", "run"}, Parallel: 1}
	for _, n := range names {
		opt.Series = append(opt.Series, NamedSeries{Variant: n, Series: &series.Series{Name: "series-" + string(n)}})
	}
	return opt
}

// A run of several series boots the baseline and every series' kernel in
// turn, round after round, and records each series with its variant.
func TestRunSeveralSeries(t *testing.T) {
	env := &fakeEnv{boot: func(ctx context.Context, n int, c vm.Config) (*vm.Outcome, error) {
		return severalOutcome(c), nil
	}}
	res, dir, err := runImpl(context.Background(), severalOptions(t, "v1", "v2"), tcgHost(), env)
	if err != nil {
		t.Fatal(err)
	}
	want := "baseline/1cpu v1/1cpu v2/1cpu baseline/1cpu v1/1cpu v2/1cpu baseline/1cpu v1/1cpu v2/1cpu"
	if got := variantsOf(res.Boots); got != want {
		t.Errorf("order %s\nwant  %s", got, want)
	}
	for i, c := range env.booted[:3] {
		if want := "/fake/x86_64-" + []string{"baseline", "v1", "v2"}[i]; c.Kernel != want {
			t.Errorf("boot %d booted %s, want %s", i+1, c.Kernel, want)
		}
	}
	if len(res.Series) != 2 || res.Series[0].Variant != "v1" || res.Series[1].Variant != "v2" || res.First().Name != "series-v1" {
		t.Errorf("series %+v", res.Series)
	}
	// What was saved loads back, every kernel's boots valid.
	_, saved, err := runfolder.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := saved.SeriesVariants(); len(got) != 2 || got[1] != "v2" {
		t.Errorf("saved series variants %v", got)
	}
}

// What a run of several series refuses, before it has a folder.
func TestRunSeveralRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(o *Options)
		want string
	}{
		{"one series, not patched", func(o *Options) { o.Series = o.Series[:1] }, "series series-v1: the one series of a run is its patched kernel, not v1"},
		{"a name twice", func(o *Options) { o.Series[1].Variant = "v1" }, "two series are named v1"},
		{"named baseline", func(o *Options) { o.Series[0].Variant = "baseline" }, `series series-v1: variant name "baseline"`},
		{"a path as a name", func(o *Options) { o.Series[0].Variant = "../x" }, "letters, digits"},
		{"--only a kernel it lacks", func(o *Options) { o.Only = variant.Patched }, "--only patched: this run's kernels are baseline, v1, v2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opt := severalOptions(t, "v1", "v2")
			tc.edit(&opt)
			res, dir, err := runImpl(context.Background(), opt, tcgHost(), &fakeEnv{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if res != nil || dir != "" {
				t.Errorf("a refused run made %s", dir)
			}
		})
	}
}

// The report of a run of several series judges each series against the
// baseline and each against the one before, with the lab's claims per
// series: v1 and v2 are faster than the baseline, and v2 than v1.
func TestRunSeveralReport(t *testing.T) {
	env := &fakeEnv{boot: func(ctx context.Context, n int, c vm.Config) (*vm.Outcome, error) { return severalOutcome(c), nil }}
	opt := severalOptions(t, "v1", "v2")
	opt.Lab.Matrix.Boots, opt.Lab.Matrix.Seeds = 4, 4
	opt.Lab.Claims = []spec.Claim{{Benchmark: "uprobe-nop", Producers: []int{1}, Direction: "faster"}}
	res, dir, err := runImpl(context.Background(), opt, tcgHost(), env)
	if err != nil {
		t.Fatal(err)
	}
	d := report.Build(res, dir, "test")
	var comps []string
	for _, c := range d.Comparisons {
		row := c.Tables[0].Rows[0]
		comps = append(comps, fmt.Sprintf("%s %s %+.2f%%", c.Name(), row.Change.Verdict, row.Change.Pct))
	}
	if got, want := strings.Join(comps, "; "), "v1 vs baseline faster +1.00%; v2 vs baseline faster +2.01%; v2 vs v1 faster +1.00%"; got != want {
		t.Errorf("comparisons %s\nwant        %s", got, want)
	}
	var claims []string
	for _, c := range d.Claims {
		claims = append(claims, c.Text()+": "+c.Verdict)
	}
	if got, want := strings.Join(claims, "; "), "v1: uprobe-nop, producers 1: patched faster: reproduced; v2: uprobe-nop, producers 1: patched faster: reproduced"; got != want {
		t.Errorf("claims %s\nwant   %s", got, want)
	}
	text := report.Text(d, false)
	t.Logf("\n%s", text)
	for _, want := range []string{"baseline M/s", "v1 M/s", "v2 M/s", "Δ v1 vs baseline  p", "Δ v2 vs v1  p", "faster by 2.010 % (exact", "4+4+4 boots", "v2 vs v1: "} {
		if !strings.Contains(text, want) {
			t.Errorf("the table lacks %q", want)
		}
	}
}

// A run of several series given on the command line keeps its lab (with
// versions:) and each series' files in its folder: lab run RUN/lab.yaml
// repeats it.
func TestRunSeveralKeepsItsLabAndSeries(t *testing.T) {
	s := listSeries(t)
	lab, err := spec.Default("v2_x", s, spec.Host{MemoryMiB: 4096, CPUs: 2})
	if err != nil {
		t.Fatal(err)
	}
	lab.Matrix.Benchmarks = []string{"uprobe-nop"}
	var out bytes.Buffer
	opt := Options{Lab: lab, ResultsDir: t.TempDir(), Out: &out, Command: []string{"lab", "run"}, Parallel: 1,
		Series: []NamedSeries{{"v1", s}, {"v2", s}}, SaveLab: true, LabHeader: "made by a test"}
	res, dir, err := runImpl(context.Background(), opt, tcgHost(), &fakeEnv{})
	t.Logf("%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
	f := runfolder.Folder{Dir: dir}
	if res.LabFile != f.Lab() || len(res.Repeat) != 3 || res.Repeat[2] != f.Lab() {
		t.Errorf("lab file %s, repeat %q", res.LabFile, res.Repeat)
	}
	again, err := spec.Load(f.Lab())
	if err != nil {
		t.Fatal(err)
	}
	if again.Series != "" || len(again.Versions) != 2 || again.Versions[1] != (spec.Version{Name: "v2", Series: "./series-v2"}) {
		t.Fatalf("saved lab: series %q, versions %+v", again.Series, again.Versions)
	}
	for i := range again.Versions {
		ser, err := again.OpenVersion(i)
		if err != nil {
			t.Fatal(err)
		}
		if ser.Hash() != s.Hash() {
			t.Errorf("version %d kept as %s, a series other than the one run", i, ser.Dir)
		}
		ser.Close()
	}
}

// --sandbox auto for a run of several: one series from outside lab's
// checkout is enough for a sandbox.
func TestSandboxAutoForSeveral(t *testing.T) {
	root := t.TempDir()
	inside := &series.Series{Input: filepath.Join(root, "patches", "x")}
	outside := &series.Series{Input: "/home/dev/Downloads/v2.mbx"}
	for _, tc := range []struct {
		several []*series.Series
		want    bool
	}{
		{[]*series.Series{inside, inside}, false},
		{[]*series.Series{inside, outside}, true},
		{[]*series.Series{outside, inside}, true},
	} {
		var f Flags
		opt := Options{Lab: &spec.Lab{Root: root, Series: "x"}}
		for i, s := range tc.several {
			opt.Series = append(opt.Series, NamedSeries{Variant: variant.Variant(fmt.Sprintf("v%d", i+1)), Series: s})
		}
		if err := f.Apply(&opt, root); err != nil {
			t.Fatal(err)
		}
		if opt.Sandbox != tc.want {
			t.Errorf("series %v and %v: sandbox %v, want %v", tc.several[0].Input, tc.several[1].Input, opt.Sandbox, tc.want)
		}
	}
}

// The shards of a run of several series merge into the run: lab merge
// deals the boots over the same kernels as lab run (the baseline, v1, v2),
// and a run given --shard 0/1 (lab submit slurm --shards 1) is a shard of
// one, which merges alone.
func TestShardsOfSeveralSeriesMerge(t *testing.T) {
	env := &fakeEnv{boot: func(ctx context.Context, n int, c vm.Config) (*vm.Outcome, error) { return severalOutcome(c), nil }}
	for _, n := range []int{2, 1} {
		opt := severalOptions(t, "v1", "v2")
		for k := range n {
			opt.Shard = shard.Shard{K: k, N: n}
			res, _, err := runImpl(context.Background(), opt, tcgHost(), env)
			if err != nil || res.Shard == nil || res.Shard.N != n {
				t.Fatalf("shard %d/%d: %+v, %v", k, n, res.Shard, err)
			}
		}
		shards, err := merge.Load([]string{filepath.Join(opt.ResultsDir, opt.Lab.Name, "*")})
		if err != nil {
			t.Fatal(err)
		}
		m, err := merge.Merge(shards, merge.Options{RunID: "merged"})
		if err != nil {
			t.Fatalf("%d shards: %v", n, err)
		}
		if got := variantsOf(m.Run.Boots); len(m.Run.Boots) != 9 || !m.Run.Complete {
			t.Errorf("%d shards merged: %v, complete %v", n, got, m.Run.Complete)
		}
	}
}
