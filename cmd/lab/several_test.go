package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lab/internal/flagval"
	"lab/internal/run"
	"lab/internal/series"
	"lab/internal/spec"
	"lab/internal/variant"
)

// v3Of copies the b4 series mbx as version 3 into dir.
func v3Of(t *testing.T, mbx, dir string) string {
	t.Helper()
	base := strings.TrimSuffix(mbx, ".mbx")
	out := filepath.Join(dir, "v3_20261202_author_corpus_two_steps")
	for _, ext := range []string{".mbx", ".cover"} {
		data, err := os.ReadFile(base + ext)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, out+ext, strings.ReplaceAll(string(data), "[PATCH v2", "[PATCH v3"))
	}
	return out + ".mbx"
}

// lab run --series A --series B: a kernel per series, named by version,
// against one baseline.
func TestRunSeveralSeriesOptions(t *testing.T) {
	root, _ := newCheckout(t)
	t.Setenv("LAB_ROOT", root)
	v2 := b4Series(t, t.TempDir())
	v3 := v3Of(t, v2, t.TempDir())
	fs := flag.NewFlagSet("lab run", flag.ContinueOnError)
	var labFlags spec.Flags
	var runFlags run.Flags
	var ser flagval.Repeated
	labFlags.RegisterFlags(fs)
	runFlags.RegisterFlags(fs)
	registerSeries(fs, &ser)
	raw := []string{"run", "--series", v2, "--boots", "2", "--series", v3}
	args, err := parseInterleaved(fs, raw[1:])
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	opt, done, err := runOptions(invocation{args: args, raw: raw, out: &out}, fs, &labFlags, &runFlags, &ser)
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	if len(opt.Series) != 2 || opt.Series[0].Variant != "v2" || opt.Series[1].Variant != "v3" {
		t.Fatalf("series %+v", opt.Series)
	}
	if opt.Lab.Matrix.Boots != 2 || !opt.SaveLab || len(opt.RepeatFlags) != 0 {
		t.Errorf("boots %d, save lab %v, repeat flags %q", opt.Lab.Matrix.Boots, opt.SaveLab, opt.RepeatFlags)
	}
	for _, want := range []string{"lab: 2 series, a kernel each against one baseline:\n  v2: [PATCH v2 0/2] corpus: two steps", "  v3: [PATCH v3 0/2]"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// The names of several series: versions that tell them apart, else their
// names, else their places; never "baseline".
func TestSeveralNames(t *testing.T) {
	s := func(name string, version int) *series.Series { return &series.Series{Name: name, Version: version} }
	for _, tc := range []struct {
		name string
		list []*series.Series
		want string
	}{
		{"versions", []*series.Series{s("a", 1), s("a", 2)}, "v1 v2"},
		{"untagged versions", []*series.Series{s("srcu", 0), s("lazy", 0)}, "srcu lazy"},
		{"one version twice", []*series.Series{s("one", 2), s("two", 2)}, "one two"},
		{"names made path-safe", []*series.Series{s("a b", 1), s("a/c", 1)}, "a-b a-c"},
		{"one name twice", []*series.Series{s("x", 1), s("x", 1)}, "series1 series2"},
		{"a series named baseline", []*series.Series{s("baseline", 1), s("x", 1)}, "series1 series2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := strings.Join(seriesNames(tc.list), " "); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// What several --series refuse, before anything is built or written.
func TestRunSeveralSeriesRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
		code int
	}{
		{"a series twice", []string{"run", "--series", "MBX", "--series", "MBX"}, "given twice: each series of a run is a kernel of its own", 2},
		{"standard input among several", []string{"run", "--series", "-", "--series", "MBX"}, "--series -: standard input holds one series", 2},
		{"new", []string{"new", "x", "--series", "MBX", "--series", "V3"}, "for flag -series: given twice", 2},
		{"two lab files", []string{"run", "ROOT/labs/t.yaml", "ROOT/labs/t.yaml", "--series", "MBX", "--series", "V3"}, "at most one lab file, got 2", 2},
		{"a cover letter only among several", []string{"run", "--series", "MBX", "--series", "COVER"}, "only a cover letter", 1},
		{"--only", []string{"run", "--series", "MBX", "--series", "V3", "--only", "patched"}, "--only patched: this run's kernels are baseline, v2, v3", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, tmp := newCheckout(t)
			writeFile(t, filepath.Join(root, "labs", "t.yaml"), good)
			mbx := b4Series(t, t.TempDir())
			v3 := v3Of(t, mbx, t.TempDir())
			blocker := filepath.Join(t.TempDir(), "blocker")
			writeFile(t, blocker, "not a folder\n")
			var args []string
			for _, a := range tc.args {
				a = strings.ReplaceAll(a, "MBX", mbx)
				a = strings.ReplaceAll(a, "V3", v3)
				a = strings.ReplaceAll(a, "COVER", strings.TrimSuffix(mbx, ".mbx")+".cover")
				args = append(args, strings.ReplaceAll(a, "ROOT", root))
			}
			args = append(args, "--cache", filepath.Join(blocker, "cache"), "--results", filepath.Join(blocker, "results"))
			code, stdout, stderr := labIn(t, root, strings.NewReader(""), args...)
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, want %d; stderr does not say %q:\n%s%s", code, tc.code, tc.want, stdout, stderr)
			}
			if strings.Contains(stderr, blocker) || strings.Contains(stderr, "missing tools") {
				t.Errorf("went on to a heavy step:\n%s", stderr)
			}
			if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
				t.Errorf("left in TMPDIR: %v", ents)
			}
		})
	}
}

// A lab file of several series (versions:) runs as lab run --series A
// --series B does; --series replaces them; lab build refuses them.
func TestLabFileVersions(t *testing.T) {
	root, _ := newCheckout(t)
	t.Setenv("LAB_ROOT", root)
	lab := filepath.Join(root, "labs", "v.yaml")
	writeFile(t, lab, strings.Replace(good, "series: ok\n", "versions:\n  - {name: first, series: ok}\n  - {name: second, series: ../patches/ok}\n", 1))
	options := func(command string, extra ...string) (run.Options, func(), error) {
		fs := flag.NewFlagSet("lab "+command, flag.ContinueOnError)
		var labFlags spec.Flags
		var runFlags run.Flags
		var ser flagval.Repeated
		labFlags.RegisterFlags(fs)
		runFlags.RegisterFlags(fs)
		registerSeries(fs, &ser)
		raw := append([]string{command, lab}, extra...)
		args, err := parseInterleaved(fs, raw[1:])
		if err != nil {
			t.Fatal(err)
		}
		return runOptions(invocation{args: args, raw: raw, out: &strings.Builder{}}, fs, &labFlags, &runFlags, &ser)
	}
	opt, done, err := options("run")
	if err != nil {
		t.Fatal(err)
	}
	done()
	if len(opt.Series) != 2 || opt.Series[0].Variant != "first" || opt.Series[1].Variant != "second" {
		t.Errorf("series %+v", opt.Series)
	}
	opt, done, err = options("run", "--series", filepath.Join(root, "patches", "ok"))
	if err != nil {
		t.Fatal(err)
	}
	done()
	if len(opt.Series) != 1 || opt.Series[0].Variant != variant.Patched {
		t.Errorf("--series did not replace the versions: series %+v", opt.Series)
	}
	code, _, stderr := labIn(t, root, nil, "bisect", lab)
	if code != 2 || !strings.Contains(stderr, "bisect follows one series, and lab corpus has 2 (versions:)") {
		t.Errorf("lab bisect of a lab of several: exit %d, %s", code, stderr)
	}
	// lab build builds a lab of several as lab run does, for lab run
	// --no-build to boot.
	opt, done, err = options("build")
	if err != nil {
		t.Fatal(err)
	}
	done()
	if len(opt.Series) != 2 {
		t.Errorf("lab build of a lab of several: series %+v", opt.Series)
	}
}
