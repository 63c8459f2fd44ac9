package run

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"lab/internal/runfolder"
	"lab/internal/series"
	"lab/internal/variant"
	"lab/internal/vm"
)

// rateOf is a fake boot's rate by its kernel: v1 1 % faster than the
// baseline, v2 1 % faster than v1.
func rateOf(c vm.Config) float64 {
	switch {
	case strings.HasSuffix(c.Kernel, "-v1"):
		return 1.01e6
	case strings.HasSuffix(c.Kernel, "-v2"):
		return 1.0201e6
	}
	return 1e6
}

func severalOptions(t *testing.T, names ...variant.Variant) Options {
	opt := Options{Lab: fakeLab(3, 1), ResultsDir: t.TempDir(), Out: &bytes.Buffer{}, Command: []string{"lab", "run"}, Parallel: 1}
	for _, n := range names {
		opt.Several = append(opt.Several, NamedSeries{Variant: n, Series: &series.Series{Name: "series-" + string(n)}})
	}
	return opt
}

// A run of several series boots the baseline and every series' kernel in
// turn, round after round, and records each series with its variant.
func TestRunSeveralSeries(t *testing.T) {
	env := &fakeEnv{boot: func(ctx context.Context, n int, c vm.Config) (*vm.Outcome, error) {
		return goodOutcome(c, rateOf(c)), nil
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
	if len(res.SeriesList) != 2 || res.SeriesList[0].Variant != "v1" || res.SeriesList[1].Variant != "v2" || res.Series.Name != "series-v1" {
		t.Errorf("series %+v, list %+v", res.Series, res.SeriesList)
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
		{"one series", func(o *Options) { o.Several = o.Several[:1] }, "needs two or more, got 1"},
		{"a name twice", func(o *Options) { o.Several[1].Variant = "v1" }, "two series are named v1"},
		{"named baseline", func(o *Options) { o.Several[0].Variant = "baseline" }, `series series-v1: variant name "baseline"`},
		{"a path as a name", func(o *Options) { o.Several[0].Variant = "../x" }, "letters, digits"},
		{"--only", func(o *Options) { o.Only = variant.Patched }, "--only: a run of several series boots every kernel"},
		{"--no-build", func(o *Options) { o.NoBuild = true }, "--no-build take one series"},
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
