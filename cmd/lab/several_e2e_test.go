package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lab/internal/report"
	"lab/internal/runfolder"
	"lab/internal/series"
	"lab/internal/testbed"
	"lab/internal/testenv"
	"lab/internal/variant"
)

// Several versions of a series in one run: the lazy-buffer seed series as
// v1 (its first patch) and v2 (both), on Debian's tarball, which carries
// v2: the baseline is the source without v2, each version is applied on
// it, the boots go round all three kernels, and the report judges each
// against the baseline and v2 against v1.
func TestSeveralSeriesInOneRun(t *testing.T) {
	testenv.E2E(t, "lab run --series v1 --series v2 builds and boots three real kernels")
	t.Parallel() // see TestTrackAStream
	ctx := context.Background()
	cache := testbed.DefaultCache()
	seed, err := filepath.Glob(filepath.Join("..", "..", "patches", "uprobe-lazy-buffer", "*.patch"))
	if err != nil || len(seed) != 2 {
		t.Fatalf("the lazy-buffer series: %v %v", seed, err)
	}
	dirs := t.TempDir()
	versions := map[string][]string{"v1": seed[:1], "v2": seed}
	for name, patches := range versions {
		for _, p := range patches {
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(dirs, name, filepath.Base(p)), string(data))
		}
	}

	results := t.TempDir()
	// lab build of the two series, then lab run with --no-build: the boots
	// come from what the build left in the cache, every kernel and series.
	lab := func(command string, more ...string) string {
		t.Helper()
		var stdout, stderr strings.Builder
		args := append([]string{command, "--series", filepath.Join(dirs, "v1"), "--series", filepath.Join(dirs, "v2"),
			"--accel", "tcg", "--arch", "x86_64", "--cpus", "1", "--producers", "1", "--measure", "wall",
			"--benchmarks", "uprobe-nop,syscall-count", "--no-controls", "--boots", "2", "--duration", "250ms",
			// No warm-up: the test reads that every row has figures, not how
			// they compare, and a warm-up second would be a third of each boot.
			"--warmup", "0s", "--cache", cache, "--results", results}, more...)
		code := runMainIn(ctx, args, nil, &stdout, &stderr)
		t.Logf("lab %s:\nstdout:\n%s\nstderr:\n%s", command, stdout.String(), stderr.String())
		if code != 0 {
			t.Fatalf("lab %s: exit %d", command, code)
		}
		return stdout.String() + stderr.String()
	}
	built := lab("build")
	out := lab("run", "--no-build")
	if !strings.Contains(out, "--no-build: 3 kernels and 1 initramfs images from "+cache) {
		t.Errorf("lab run --no-build did not boot the build's three kernels")
	}
	var stdout, stderr strings.Builder
	stdout.WriteString(built + out)
	for _, w := range []string{"lab: 2 series, a kernel each against one baseline:\n  v1: ", "\n  v2: ",
		"baseline: revert: series v2 is in the source (2 patches"} {
		if !strings.Contains(stdout.String()+stderr.String(), w) {
			t.Errorf("output lacks %q", w)
		}
	}
	found, _ := filepath.Glob(filepath.Join(results, "*", "2*", runfolder.ResultsFile))
	if len(found) != 1 {
		t.Fatalf("run folders (besides the build's): %v", found)
	}
	dir := filepath.Dir(found[0])
	_, res, err := runfolder.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Series) != 2 || res.Series[0].Variant != "v1" || res.Series[1].Variant != "v2" ||
		res.Series[0].Mode != series.ModeRevert || len(res.Series[0].Patches) != 1 || len(res.Series[1].Patches) != 2 {
		t.Errorf("series list %+v", res.Series)
	}
	if len(res.Kernels) != 3 {
		t.Fatalf("kernels %+v", res.Kernels)
	}
	// v2 is what the source carries: its tree is the source's.
	byVariant := map[variant.Variant]string{}
	for _, k := range res.Kernels {
		byVariant[k.Variant] = k.Info.Inputs.Tree
	}
	if byVariant["v1"] == byVariant["baseline"] || byVariant["v1"] == byVariant["v2"] || byVariant["v2"] == byVariant["baseline"] {
		t.Errorf("kernel trees %v: want three different ones", byVariant)
	}
	var order []string
	for _, b := range res.Boots {
		order = append(order, string(b.Variant))
	}
	if got := strings.Join(order, " "); got != "baseline v1 v2 baseline v1 v2" {
		t.Errorf("boot order %s", got)
	}
	d := report.Build(res, dir, "test")
	var names []string
	for _, c := range d.Comparisons {
		names = append(names, c.Name())
		if len(c.Tables) != 1 {
			t.Errorf("%s: %d tables", c.Name(), len(c.Tables))
			continue
		}
		rows := map[string]bool{}
		for _, r := range c.Tables[0].Rows {
			rows[r.Benchmark] = !r.Change.NoData
		}
		for _, b := range []string{"uprobe-nop", "syscall-count"} {
			if !rows[b] {
				t.Errorf("%s: no figures of %s on both sides (rows %v)", c.Name(), b, rows)
			}
		}
	}
	if got := strings.Join(names, ", "); got != "v1 vs baseline, v2 vs baseline, v2 vs v1" {
		t.Errorf("comparisons %s", got)
	}
	text, err := os.ReadFile(filepath.Join(dir, "report", "report.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"baseline M/s", "v1 M/s", "v2 M/s", "Δ v1 vs baseline [95% CI]", "Δ v2 vs baseline [95% CI]", "Δ v2 vs v1 [95% CI]", "2+2+2 boots"} {
		if !strings.Contains(string(text), w) {
			t.Errorf("report.txt lacks %q:\n%s", w, text)
		}
	}
}
