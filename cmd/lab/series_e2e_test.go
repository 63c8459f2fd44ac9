package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"lab/internal/run"
	"lab/internal/runfolder"
	"lab/internal/series"
	"lab/internal/source"
	"lab/internal/spec"
	"lab/internal/testenv"
	"lab/internal/verdict"
)

// From a mailbox to a verdict with no lab file: the uprobe-srcu seed
// series, as a list delivers it (b4 am's .mbx and .cover, a cover letter
// with its base-commit, trailers), made by git format-patch at test time,
// run on Debian's tarball at 1 vCPU under icount. Debian already carries
// the series: lab must find that out (revert mode) and uprobe-nop must be
// faster beyond the floor.
func TestSeriesFromAMailbox(t *testing.T) {
	testenv.E2E(t, "lab run --series builds and boots real kernels")
	ctx := context.Background()
	cache := run.DefaultCache()
	mbx := seedMailbox(t, ctx, cache, "uprobe-srcu")

	results := t.TempDir()
	var stdout, stderr strings.Builder
	code := runMainIn(ctx, []string{"run", "--series", mbx, "--accel", "tcg", "--cpus", "1", "--producers", "1", "--measure", "icount",
		"--benchmarks", "uprobe-nop,syscall-count", "--boots", "2", "--duration", "1s", "--cache", cache, "--results", results}, nil, &stdout, &stderr)
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, w := range []string{"lab: no lab file: this lab", "\nmode: auto\n", "series: [PATCH v2 0/1] uprobes: lockless lookup (v2, 1 patch, b4 mbox, base-commit ",
		"mode auto: revert: every patch applies in reverse (1 patch): the source already carries this series"} {
		if !strings.Contains(stdout.String(), w) {
			t.Errorf("stdout lacks %q", w)
		}
	}
	dirs, _ := filepath.Glob(filepath.Join(results, "*", "*", runfolder.ResultsFile))
	if len(dirs) != 1 {
		t.Fatalf("run folders: %v", dirs)
	}
	f, res, err := runfolder.Load(filepath.Dir(dirs[0]))
	if err != nil {
		t.Fatal(err)
	}
	s := res.Series
	if s.Mode != series.ModeRevert || s.ModeAsked != spec.ModeAuto || s.Kind != series.KindMbox || s.Cover == nil || s.Version != 2 ||
		!strings.Contains(s.Base, "cannot be checked against the tarball") || len(s.Patches) != 1 || len(s.Patches[0].Trailers) < 2 {
		t.Errorf("series record %+v", s)
	}
	if _, err := spec.Load(f.Lab()); err != nil || res.LabFile != f.Lab() || len(res.Repeat) == 0 {
		t.Errorf("lab.yaml: %v; lab file %s, repeat %q", err, res.LabFile, res.Repeat)
	}
	found := false
	for _, tb := range verdict.Tables(res) {
		for _, r := range tb.Rows {
			if r.Benchmark != "uprobe-nop" || r.Producers != 1 {
				continue
			}
			found = true
			if floor := max(r.Change.FloorPct, verdict.MinICountFloorPct); r.Change.Pct <= floor || r.Change.Lo <= 0 {
				t.Errorf("uprobe-nop: %+.3f %% [%+.3f, %+.3f], floor %.3f %%: want faster beyond the floor", r.Change.Pct, r.Change.Lo, r.Change.Hi, floor)
			}
		}
	}
	if !found {
		t.Error("no uprobe-nop row")
	}
}

// seedMailbox makes a seed series (patches/NAME) into what b4 am writes,
// NAME.mbx and NAME.cover, with git format-patch --cover-letter: the files
// the series touches, as the source has them without it, are committed in
// a scratch repository, the series is applied there with git am, and a
// trailer is added to each patch. It returns the .mbx.
func seedMailbox(t *testing.T, ctx context.Context, cache, name string) string {
	t.Helper()
	lab, err := spec.Load(filepath.Join("..", "..", "labs", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ser, err := series.Load(lab.SeriesPath())
	if err != nil {
		t.Fatal(err)
	}
	tree, err := source.Prepare(ctx, source.Origin(lab.Source), cache, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	without, err := tree.Variants(ctx, ser, series.ModeRevert)
	if err != nil {
		tree.Close()
		t.Fatal(err)
	}
	repo := t.TempDir()
	git := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=lab", "-c", "user.email=lab@localhost", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = dir
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return string(out)
	}
	for _, p := range ser.Patches {
		for _, file := range p.Files {
			data := git(tree.Dir, "show", without.Baseline+":"+file)
			os.MkdirAll(filepath.Join(repo, filepath.Dir(file)), 0o755)
			os.WriteFile(filepath.Join(repo, file), []byte(data), 0o644)
		}
	}
	tree.Close()
	git(repo, "init", "-q")
	git(repo, "add", ".")
	git(repo, "commit", "-qm", "base")
	base := strings.TrimSpace(git(repo, "rev-parse", "HEAD"))
	for _, p := range ser.Patches {
		git(repo, "am", "-q", p.Path)
	}
	mbox := git(repo, "format-patch", "--cover-letter", "--stdout", "-v2", "--base="+base, base+"..HEAD")
	mbox = strings.Replace(mbox, "*** SUBJECT HERE ***", "uprobes: lockless lookup", 1)
	mbox = strings.Replace(mbox, "*** BLURB HERE ***", "Look uprobes up without the tree lock.", 1)
	mails := strings.SplitAfter(mbox, "\n-- \n")
	for i, m := range mails[1:] { // every patch; the cover letter first
		mails[i+1] = strings.Replace(m, "\n---\n", "\nAcked-by: Ann Other <ann@example.org>\nLink: https://lore.kernel.org/r/seed@example.org\n---\n", 1)
	}
	mbox = strings.Join(mails, "")
	i := strings.Index(mbox[1:], "\nFrom ") + 1
	out := filepath.Join(t.TempDir(), "v2_20240901_author_uprobes_lockless_lookup")
	if err := os.WriteFile(out+".cover", []byte(mbox[:i+1]), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out+".mbx", []byte(mbox[i+1:]), 0o644); err != nil {
		t.Fatal(err)
	}
	return out + ".mbx"
}
