package track

// End-to-end: a branch of 19 commits written at test time onto Debian's
// 6.12 tree, tracked under icount, its change points found and named.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"lab/internal/arch"
	"lab/internal/history"
	"lab/internal/historyreport"
	"lab/internal/results"
	"lab/internal/run"
	"lab/internal/source"
	"lab/internal/spec"
	"lab/internal/testenv"
)

var logString = regexp.MustCompile(`Run %s as init process( \(track [0-9]+\))?`)

// logEdit moves the image: init's log line says which edit it is.
func logEdit(k int) testenv.Edit {
	return testenv.Edit{Subject: fmt.Sprintf("init: log line %d", k), File: "init/main.c", Change: func(s string) string {
		return logString.ReplaceAllLiteralString(s, fmt.Sprintf("Run %%s as init process (track %d)", k))
	}}
}

const (
	anchor = "\tbp_vaddr = uprobe_get_swbp_addr(regs);\n"
	spinA  = "\t{ volatile int lab_a; for (lab_a = 0; lab_a < 32; lab_a++) ; }\n"
	spinB  = "\t{ volatile int lab_b; for (lab_b = 0; lab_b < 16; lab_b++) ; }\n"
)

func docEdit(k int) testenv.Edit {
	return testenv.Edit{Subject: fmt.Sprintf("docs: uprobetracer: note %d", k), File: "Documentation/trace/uprobetracer.rst",
		Change: func(s string) string { return s + fmt.Sprintf("\n.. lab track test: documentation only (%d)\n", k) }}
}

// commentEdit comments at the end of uprobes.c: no line of code moves
// (__LINE__ is in WARN_ON's tables), so the image stays.
func commentEdit(k int) testenv.Edit {
	return testenv.Edit{Subject: fmt.Sprintf("uprobes: a comment (%d)", k), File: "kernel/events/uprobes.c",
		Change: func(s string) string { return s + fmt.Sprintf("/* lab track test: a comment (%d) */\n", k) }}
}

// branch: log-line changes (harmless, they move the image), two commits
// that slow the uprobe hit path (A at 5, B at 10), one that undoes A (15),
// and documentation- and comment-only commits; at least three measured
// commits between planted ones, as icount's detection asks.
var branch = []testenv.Edit{
	logEdit(1), logEdit(2), docEdit(1), logEdit(3),
	{Subject: "uprobes: spin on every hit (A)", File: "kernel/events/uprobes.c", Change: testenv.Replace(anchor, anchor+spinA)},
	logEdit(4), commentEdit(1), logEdit(5), logEdit(6),
	{Subject: "uprobes: spin a little more on every hit (B)", File: "kernel/events/uprobes.c", Change: testenv.Replace(anchor, spinB+anchor)},
	logEdit(7), docEdit(2), logEdit(8), logEdit(9),
	{Subject: "uprobes: do not spin (undo A)", File: "kernel/events/uprobes.c", Change: testenv.Replace(spinA, "")},
	logEdit(10), logEdit(11), commentEdit(2), logEdit(12),
}

// commitBranch writes the edits as commits on base in the git repository
// gitDir (with a scratch index: the work tree is not touched) and returns
// them, oldest first.
func commitBranch(t *testing.T, gitDir, base string, edits []testenv.Edit) []string {
	t.Helper()
	index := filepath.Join(t.TempDir(), "index")
	git := func(stdin string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=lab test", "-c", "user.email=lab@localhost"}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_DIR="+gitDir, "GIT_INDEX_FILE="+index)
		cmd.Stdin = strings.NewReader(stdin)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, errOut.String())
		}
		return strings.TrimSpace(out.String())
	}
	head := base
	git("", "read-tree", head)
	var commits []string
	for _, e := range edits {
		old := git("", "show", head+":"+e.File) + "\n"
		changed := e.Change(old)
		if changed == old {
			t.Fatalf("%q changes nothing in %s: the kernel source is not what the test expects", e.Subject, e.File)
		}
		blob := git(changed, "hash-object", "-w", "--stdin")
		git("", "update-index", "--cacheinfo", "100644,"+blob+","+e.File)
		tree := git("", "write-tree")
		head = git("", "commit-tree", tree, "-p", head, "-m", e.Subject)
		commits = append(commits, head)
	}
	return commits
}

// TestTrackFindsThePlantedCommits tracks the branch under icount at one
// vCPU: the documentation- and comment-only commits are not booted, every
// other commit is, once; detection finds three change points, whose
// culprits are exactly A, B and the undoing of A; a second track measures
// nothing.
func TestTrackFindsThePlantedCommits(t *testing.T) {
	testenv.Stream(t, "builds and boots a branch of real kernels")
	ctx := context.Background()
	cache := run.DefaultCache()
	root := testenv.Checkout(t, "../..")
	tree, err := source.Prepare(ctx, source.Origin{Tarball: spec.DefaultTarball, Package: spec.DefaultPackage}, cache, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	base := tree.BaseHash
	commits := commitBranch(t, filepath.Join(tree.Dir, ".git"), base, branch)
	tip := commits[len(commits)-1]

	// The user's tree: the lab tree's objects (alternates), branch main.
	user := filepath.Join(t.TempDir(), "linux")
	os.MkdirAll(user, 0o755)
	for _, args := range [][]string{{"init", "-q"}, {"update-ref", "refs/heads/main", tip}, {"symbolic-ref", "HEAD", "refs/heads/main"}} {
		if args[0] == "update-ref" {
			os.WriteFile(filepath.Join(user, ".git", "objects", "info", "alternates"), []byte(filepath.Join(tree.Dir, ".git", "objects")+"\n"), 0o644)
		}
		cmd := exec.Command("git", args...)
		cmd.Dir = user
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	t.Cleanup(func() { os.RemoveAll(source.GitTreeDir(cache, user)) })
	// A lab names a series; lab track measures the branch and ignores it.
	testenv.WriteSeries(t, tree.Dir, root, "track-e2e", []testenv.Edit{docEdit(99)})
	labFile := testenv.WriteLab(t, root, "track-e2e", fmt.Sprintf(`name: track-e2e
series: track-e2e
mode: apply
source:
  git: %s
  base: %s
matrix:
  arch: [x86_64]
  cpus: [1]
  benchmarks: [uprobe-nop, syscall-count]
  producers: [1]
  boots: 1
  duration: 1s
  warmup: 0s
  measure: icount
`, user, base))
	lab, err := spec.Load(labFile)
	if err != nil {
		t.Fatal(err)
	}

	// Every commit's kernel into the content-keyed cache first, as
	// incremental builds of the tarball's tree (the git source's own build
	// folder would start cold); the wall time is the build phase's.
	buildStart := time.Now()
	a, _ := arch.Lookup("x86_64")
	k := &run.Kernels{Tree: tree, CacheDir: cache, Fragments: lab.Fragments("x86_64"), Logf: t.Logf}
	for _, c := range append([]string{base}, commits...) {
		if _, err := k.Get(ctx, a, c, short(c)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tree.Checkout(ctx, base); err != nil {
		t.Fatal(err)
	}
	tree.Close()
	t.Logf("build phase: %s for %d commits", time.Since(buildStart).Round(time.Second), len(commits)+1)

	hist := filepath.Join(t.TempDir(), "history.db")
	moduleRoot, _ := filepath.Abs("../..")
	var out bytes.Buffer
	opt := Options{Lab: lab, From: base, To: "main", History: hist, CacheDir: cache, ResultsDir: t.TempDir(), ModuleRoot: moduleRoot,
		Accel: "tcg", Command: []string{"lab", "track", labFile}, Out: &out}
	trackStart := time.Now()
	res, err := Run(ctx, opt)
	t.Log(out.String())
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(trackStart)
	booted := 0
	for i, o := range res.Outcomes {
		e := branch[i]
		quiet := strings.HasPrefix(e.Subject, "docs:") || strings.Contains(e.Subject, "a comment")
		switch {
		case quiet && o.State != NoCode:
			t.Errorf("%s %q: %s, want %s (never booted)", short(o.Hash), e.Subject, o.State, NoCode)
		case !quiet && o.State != Measured:
			t.Errorf("%s %q: %s, want measured", short(o.Hash), e.Subject, o.State)
		}
		if o.Seq != res.Seq[base]+i+1 {
			t.Errorf("%s: place %d, want %d", short(o.Hash), o.Seq, res.Seq[base]+i+1)
		}
		if o.State == Measured {
			booted++
		}
	}
	if len(res.Run.Boots) != booted {
		t.Errorf("%d boots for %d measured commits: want one each", len(res.Run.Boots), booted)
	}
	t.Logf("track phase: %s for %d commits (%d booted): %.0f commits an hour", took.Round(time.Second), len(commits), booted, float64(len(commits))/took.Hours())

	// Detection and culprits: every commit was measured, so each change
	// point's culprit is the first commit after it.
	store, err := history.Open(ctx, hist)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	h, err := historyreport.Load(ctx, store, historyreport.Options{Lab: lab.Name, MinPct: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(h.ReportText())
	sus := Suspects(h, func(k history.SeriesKey) bool { return k.Clock == history.ClockICount })
	noBisect := func(ctx context.Context, good, bad string, fig results.Figure) (string, string, string, error) {
		return "", "", "", fmt.Errorf("bisect %s..%s: every commit was measured, no bisect is needed", short(good), short(bad))
	}
	culprits, err := Resolve(ctx, store, lab.Name, sus, noBisect, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	var named []string
	for _, c := range culprits {
		if !slices.Contains(named, c.Culprit) {
			named = append(named, c.Culprit)
		}
	}
	want := []string{commits[4], commits[9], commits[14]} // A, B, undo A
	slices.Sort(named)
	slices.Sort(want)
	if !slices.Equal(named, want) {
		t.Errorf("culprits %v, want A, B and undo A: %v", named, want)
	}
	for _, s := range sus {
		if s.Figure.Benchmark != "uprobe-nop" {
			t.Errorf("change point %s..%s follows %s: want uprobe-nop (syscall-count is the control)", short(s.Good.Hash), short(s.Bad.Hash), s.Figure)
		}
	}

	// A second track resumes: everything is in the history.
	out.Reset()
	again, err := Run(ctx, opt)
	t.Log(out.String())
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Run.Boots) != 0 {
		t.Errorf("a second track booted %d times: want none", len(again.Run.Boots))
	}
}
