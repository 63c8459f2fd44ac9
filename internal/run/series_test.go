package run

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"lab/internal/progress"
	"lab/internal/results"
	"lab/internal/runfolder"
	"lab/internal/series"
	"lab/internal/source"
	"lab/internal/spec"
	"lab/internal/variant"
)

// listSeries is what b4 am writes for a two-patch v2 series with a
// trailer, made by git format-patch --cover-letter at test time: NAME.mbx
// and NAME.cover beside it. It turns kernel/corpus.c from 1 into 3, and
// returns the .mbx, opened.
func listSeries(t *testing.T) *series.Series {
	t.Helper()
	repo, dir := t.TempDir(), t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=A U Thor", "-c", "user.email=author@example.org", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = repo
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	file := filepath.Join(repo, "kernel", "corpus.c")
	os.MkdirAll(filepath.Dir(file), 0o755)
	git("init", "-q")
	os.WriteFile(file, []byte(corpusAt(1)), 0o644)
	git("add", ".")
	git("commit", "-qm", "base")
	base := strings.TrimSpace(git("rev-parse", "HEAD"))
	for i := 2; i <= 3; i++ {
		os.WriteFile(file, []byte(corpusAt(i)), 0o644)
		git("commit", "-qam", fmt.Sprintf("corpus: step %d\n\nA step.\n\nAcked-by: Ann Other <ann@example.org>\nSigned-off-by: A U Thor <author@example.org>", i))
	}
	mbox := git("format-patch", "--cover-letter", "--stdout", "-v2", "--base="+base, base+"..HEAD")
	mbox = strings.Replace(mbox, "*** SUBJECT HERE ***", "corpus: two steps", 1)
	i := strings.Index(mbox[1:], "\nFrom ") + 1
	name := filepath.Join(dir, "v2_20261202_author_corpus_two_steps")
	os.WriteFile(name+".cover", []byte(mbox[:i+1]), 0o644)
	os.WriteFile(name+".mbx", []byte(mbox[i+1:]), 0o644)
	s, err := series.Open(name+".mbx", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func corpusAt(n int) string { return fmt.Sprintf("int corpus = %d;\n", n) }

// A run given its series on the command line (lab run --series) keeps its
// lab and the series' files in its folder: lab run RUN/lab.yaml repeats it.
func TestRunKeepsItsLabAndSeries(t *testing.T) {
	s := listSeries(t)
	lab, err := spec.Default("v2_x", s, spec.Host{MemoryMiB: 4096, CPUs: 2})
	if err != nil {
		t.Fatal(err)
	}
	lab.Matrix.Benchmarks = []string{"uprobe-nop"}
	var out bytes.Buffer
	opt := Options{Lab: lab, ResultsDir: t.TempDir(), Out: &out, Command: []string{"lab", "run", "--series", "-", "--cache", "/c"}, Parallel: 1,
		Series: []NamedSeries{{Variant: variant.Patched, Series: s}}, SaveLab: true, LabHeader: "made by a test", RepeatFlags: []string{"--cache", "/c"}}
	res, dir, err := runImpl(context.Background(), opt, tcgHost(), &fakeEnv{})
	t.Logf("%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
	f := runfolder.Folder{Dir: dir}
	data, err := os.ReadFile(f.Lab())
	if err != nil {
		t.Fatal(err)
	}
	if want := "# made by a test\n# repeat the run: lab run " + f.Lab() + "\nname: v2_x\n"; !strings.HasPrefix(string(data), want) {
		t.Errorf("lab.yaml starts\n%s\nwant\n%s", data, want)
	}
	if res.LabFile != f.Lab() || res.LabSHA256 != fmt.Sprintf("%x", sha256.Sum256(data)) ||
		!slices.Equal(res.Repeat, []string{"lab", "run", f.Lab(), "--cache", "/c"}) {
		t.Errorf("lab file %s (sha256 %s), repeat %q", res.LabFile, res.LabSHA256, res.Repeat)
	}
	if _, saved, err := runfolder.Load(dir); err != nil || !slices.Equal(saved.Repeat, res.Repeat) {
		t.Errorf("results.json: %v, repeat %q", err, saved.Repeat)
	}
	ents, _ := os.ReadDir(f.Series())
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"0000-cover-letter.patch", "0001-corpus-step-2.patch", "0002-corpus-step-3.patch"}) {
		t.Errorf("series/ holds %v", names)
	}
	again, err := spec.Load(f.Lab())
	if err != nil {
		t.Fatal(err)
	}
	ser, err := again.OpenSeries()
	if err != nil {
		t.Fatal(err)
	}
	defer ser.Close()
	// lab build --series, then lab run RUN/lab.yaml --no-build: one
	// build, found again.
	k1, err1 := manifestKey(lab, "x86_64", nil)
	k2, err2 := manifestKey(again, "x86_64", nil)
	if err1 != nil || err2 != nil || k1 != k2 {
		t.Errorf("manifest keys %s (%v) and, from lab.yaml, %s (%v): want one", k1, err1, k2, err2)
	}
	again.Mode = spec.ModeRevert
	if k3, _ := manifestKey(again, "x86_64", nil); k3 == k1 {
		t.Errorf("manifest key %s for mode revert too: the mode changes the build", k3)
	}
	again.Mode = spec.ModeAuto
	if ser.Hash() != s.Hash() || again.Mode != spec.ModeAuto || !reflect.DeepEqual(again.Matrix, lab.Matrix) || again.SeriesPath() != f.Series() {
		t.Errorf("lab.yaml reads back as series %s at %s (want %s), mode %s, matrix %+v", ser.Hash(), again.SeriesPath(), s.Hash(), again.Mode, again.Matrix)
	}
}

// kernelTarball is a tiny kernel source tarball with kernel/corpus.c at n.
func kernelTarball(t *testing.T, n int) string {
	t.Helper()
	top := t.TempDir()
	root := filepath.Join(top, "linux-source-6.12")
	os.MkdirAll(filepath.Join(root, "kernel"), 0o755)
	os.WriteFile(filepath.Join(root, "Makefile"), []byte("VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 999\nEXTRAVERSION =\n"), 0o644)
	os.WriteFile(filepath.Join(root, "kernel", "corpus.c"), []byte(corpusAt(n)), 0o644)
	tarball := filepath.Join(t.TempDir(), "linux-source-6.12.tar.xz")
	if out, err := exec.Command("tar", "-cJf", tarball, "-C", top, "linux-source-6.12").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	return tarball
}

// The variants of a series in mode auto, on a source that carries it and
// on one that does not, and what results.json records of the series: the
// mode chosen and why, what the list added, and what lab did with the
// base-commit.
func TestVariantsRecordTheSeries(t *testing.T) {
	ctx := context.Background()
	s := listSeries(t)
	for _, tc := range []struct {
		at   int // kernel/corpus.c's value in the source
		mode string
		why  string
	}{
		{3, series.ModeRevert, "revert: every patch applies in reverse (2 patches): the source already carries this series (forward, 0001-corpus-step-2.patch does not: patch failed: kernel/corpus.c:1)"},
		{1, series.ModeApply, "apply: every patch applies forward (2 patches): the source does not carry this series yet (in reverse, 0002-corpus-step-3.patch does not: patch failed: kernel/corpus.c:1)"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			lab, err := spec.Default("v2_x", s, spec.Host{MemoryMiB: 4096, CPUs: 2})
			if err != nil {
				t.Fatal(err)
			}
			tree, err := source.Prepare(ctx, source.Origin{Tarball: kernelTarball(t, tc.at)}, t.TempDir(), t.Logf)
			if err != nil {
				t.Fatal(err)
			}
			defer tree.Close()
			var out bytes.Buffer
			r := &Runner{opt: Options{Series: []NamedSeries{{Variant: variant.Patched, Series: s}}}, lab: lab, rep: progress.New(&out, time.Now())}
			art := &Artifacts{}
			kernels, err := r.seriesKernels(ctx, tree, art)
			r.rep.Stop()
			if err != nil {
				t.Fatal(err)
			}
			if len(kernels) != 2 || kernels[0].variant != variant.Baseline || kernels[1].variant != variant.Patched {
				t.Fatalf("kernels %+v", kernels)
			}
			commits := variant.Pair[string]{Baseline: kernels[0].commit, Patched: kernels[1].commit}
			if len(art.Series) != 1 || art.Series[0].Variant != variant.Patched {
				t.Fatalf("series recorded: %+v", art.Series)
			}
			got := art.Series[0]
			if got.Mode != tc.mode || got.ModeAsked != spec.ModeAuto || got.ModeReason != tc.why || got.Variants != commits {
				t.Errorf("mode %s (asked %s): %q, commits %+v", got.Mode, got.ModeAsked, got.ModeReason, got.Variants)
			}
			if !strings.Contains(out.String(), "mode "+tc.why) || !strings.Contains(out.String(), "base: the series' base-commit ") {
				t.Errorf("the run does not say which mode and why, and what of the base:\n%s", out.String())
			}
			if got.Kind != series.KindMbox || got.Version != 2 || got.Cover == nil || got.Cover.Subject != "corpus: two steps" ||
				got.BaseCommit != s.BaseCommit || got.Base != lab.BaseNote || got.InputSHA256 != s.InputSHA256 || len(got.Patches) != 2 {
				t.Errorf("series record %+v", got)
			}
			p := got.Patches[0]
			if p.Author != "A U Thor <author@example.org>" || p.Number != 1 || p.Total != 2 || p.MailSHA256 == "" ||
				!slices.Contains(p.Trailers, results.Trailer{Key: "Acked-by", Value: "Ann Other <ann@example.org>"}) {
				t.Errorf("patch record %+v", p)
			}
			// results.json takes the record as it is.
			dir := t.TempDir()
			run := &results.Run{Schema: results.Schema, Lab: "v2_x", RunID: "r", Started: time.Unix(1, 0).UTC(), Series: []results.Series{got}}
			if err := (runfolder.Folder{Dir: dir}).Save(run); err != nil {
				t.Fatal(err)
			}
			if _, back, err := runfolder.Load(dir); err != nil || !reflect.DeepEqual(back.Series, []results.Series{got}) {
				t.Errorf("results.json gives back %+v, %v", back.Series, err)
			}
		})
	}
}

// --sandbox auto builds a series from outside lab's checkout, or from
// standard input, in a sandbox: someone else's code.
func TestSandboxAutoForASeries(t *testing.T) {
	root := t.TempDir()
	for _, tc := range []struct {
		series *series.Series // nil: the lab's own
		lab    string         // the lab's series:
		want   bool
	}{
		{nil, "uprobe-srcu", false},
		{nil, "/elsewhere/v2.mbx", true},
		{&series.Series{Input: filepath.Join(root, "patches", "x")}, "", false},
		{&series.Series{Input: "/home/dev/Downloads/v2.mbx"}, "", true},
		{&series.Series{Input: "-"}, "", true},
	} {
		var f Flags
		opt := Options{Lab: &spec.Lab{Root: root, Series: tc.lab}}
		if tc.series != nil {
			opt.Series = []NamedSeries{{Variant: variant.Patched, Series: tc.series}}
		}
		if err := f.Apply(&opt, root); err != nil {
			t.Fatal(err)
		}
		if opt.Sandbox != tc.want {
			t.Errorf("series %+v, lab's %q: sandbox %v, want %v", tc.series, tc.lab, opt.Sandbox, tc.want)
		}
	}
}
