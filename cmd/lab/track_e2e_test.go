package main

// End to end: a branch of 31 commits written at test time onto Debian's
// 6.12 tree, tracked by lab track every second commit under icount, its
// change points found and each bisected to its culprit.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"lab/internal/bisect"
	"lab/internal/history"
	"lab/internal/historyreport"
	"lab/internal/lines"
	"lab/internal/publicpath"
	"lab/internal/source"
	"lab/internal/spec"
	"lab/internal/testbed"
	"lab/internal/testenv"
	"lab/internal/track"
)

var initLogLine = regexp.MustCompile(`Run %s as init process( \(track [0-9]+\))?`)

// logEdit moves the image and nothing else: init's log line says which
// edit it is.
func logEdit(k int) testenv.Edit {
	return testenv.Edit{Subject: fmt.Sprintf("init: log line %d", k), File: "init/main.c", Change: func(s string) string {
		return initLogLine.ReplaceAllLiteralString(s, fmt.Sprintf("Run %%s as init process (track %d)", k))
	}}
}

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

const (
	hitAnchor = "\tbp_vaddr = uprobe_get_swbp_addr(regs);\n"
	spinA     = "\t{ volatile int lab_a; for (lab_a = 0; lab_a < 32; lab_a++) ; }\n"
	spinB     = "\t{ volatile int lab_b; for (lab_b = 0; lab_b < 16; lab_b++) ; }\n"
)

const undoB = "uprobes: do not spin more (undo B)"

// streamBranch: eleven commits on the tarball's (place 1, the range's
// base), laid out for a track of every second commit, so the even places
// and the last are measured. Its steps sit where a detector that needs
// several points a level misses them: in the first commit after the base
// (A, place 2), two commits apart (B at 5, undoing A at 7) and in the last
// commit (undoing B, 12). Log-line commits between move the image and
// nothing else; documentation- and comment-only commits keep their
// parent's image, one of them at a measured place (10), so the track must
// see that and not boot it, and every other sits inside a bisect's range.
var streamBranch = []testenv.Edit{
	{Subject: "uprobes: spin on every hit (A)", File: "kernel/events/uprobes.c", Change: testenv.Replace(hitAnchor, hitAnchor+spinA)}, // 2
	docEdit(1), logEdit(1), // 3, 4
	{Subject: "uprobes: spin a little more on every hit (B)", File: "kernel/events/uprobes.c", Change: testenv.Replace(hitAnchor, spinB+hitAnchor)}, // 5
	logEdit(2), // 6
	{Subject: "uprobes: do not spin (undo A)", File: "kernel/events/uprobes.c", Change: testenv.Replace(spinA, "")}, // 7
	logEdit(3), logEdit(4), commentEdit(1), docEdit(2), // 8-11
	{Subject: undoB, File: "kernel/events/uprobes.c", Change: testenv.Replace(spinB, "")}, // 12
}

// TestTrackAStream: lab track --every 2 --bisect on a git tree of commits
// made at test time from Debian's tarball (streamBranch). The culprits
// written into the history are exactly the four planted steps: the first,
// beside the measured base, is its own culprit; the others are each found
// by a bisect. No other change point is reported, in the figure or the
// control; no documentation- or comment-only commit is ever booted; a
// second track measures nothing. With LAB_STREAM_EXAMPLE=DIR the track's and the
// bisects' output and the history report are written to DIR (the committed
// example results/examples/track-stream).
func TestTrackAStream(t *testing.T) {
	testenv.E2E(t, "lab track builds and boots a branch of real kernels")
	t.Parallel() // beside the other long end-to-end tests of lab's commands, after the signals' (which look for lab's own processes)
	ctx := context.Background()
	cache := testbed.DefaultCache()
	root := testenv.Checkout(t, "../..")
	tree, err := source.Prepare(ctx, source.Origin{Tarball: spec.DefaultTarball, Package: spec.DefaultPackage}, cache, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	base := tree.BaseHash
	commits := testenv.CommitBranch(t, filepath.Join(tree.Dir, ".git"), base, streamBranch)
	tip := commits[len(commits)-1]
	planted := map[string]string{commits[0]: "A", commits[3]: "B", commits[5]: "undo A", commits[10]: "undo B"}
	quiet := map[string]bool{}
	for i, e := range streamBranch {
		if strings.HasPrefix(e.Subject, "docs:") || strings.Contains(e.Subject, "a comment") {
			quiet[commits[i]] = true
		}
	}

	// The user's tree: the lab tree's objects (alternates), branch main.
	user := testenv.UserTree(t, cache, "track-stream", filepath.Join(tree.Dir, ".git", "objects"), "main", tip)
	// lab track measures a branch: its lab names no series.
	labFile := testenv.WriteLab(t, root, "track-stream", fmt.Sprintf(`name: track-stream
description: a branch of Debian's 6.12 with two planted slowdowns of the uprobe hit path, and the undoing of each
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
  controls: false # syscall-count, named, is the control: not usermode-count too
  measure: icount
`, user, base))
	lab, err := spec.Load(labFile)
	if err != nil {
		t.Fatal(err)
	}

	// lab builds the commits in the git tree's own build folder, which
	// starts as a copy of the tarball tree's when the suite has built there
	// (kbuild's seed), not cold.
	tree.Close()

	hist := filepath.Join(t.TempDir(), "history.db")
	results := t.TempDir()
	trackArgs := []string{"track", labFile, "--from", base, "--to", "main", "--every", "2", "--bisect",
		"--accel", "tcg", "--cache", cache, "--results", results, "--history", hist}
	var stdout, stderr strings.Builder
	trackStart := time.Now()
	code := runMainIn(ctx, trackArgs, nil, &stdout, &stderr)
	trackTook := time.Since(trackStart)
	t.Logf("lab %s\nstdout:\n%s\nstderr:\n%s", strings.Join(trackArgs, " "), stdout.String(), stderr.String())
	if code != 0 {
		t.Fatalf("lab track: exit %d", code)
	}
	t.Logf("track and bisect: %s", trackTook.Round(time.Second))

	for _, i := range []int{8} { // the quiet commit at a measured place (10)
		if w := fmt.Sprintf("track: %s %s: no code change (the image of ", commits[i][:12], streamBranch[i].Subject); !strings.Contains(stdout.String(), w) {
			t.Errorf("output lacks %q", w)
		}
	}

	store, err := history.Open(ctx, hist)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	culprits, err := store.Culprits(ctx, lab.Name)
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, c := range culprits {
		name, ok := planted[c.Culprit]
		switch {
		case !ok:
			t.Errorf("culprit %s of %s..%s (%s) is not a planted commit", c.Culprit, c.Good, c.Bad, c.Outcome)
		case c.Culprit == commits[0] && c.Outcome != track.Adjacent:
			t.Errorf("culprit %s (%s): outcome %q: want the commit after the measured base, its own culprit", c.Culprit, name, c.Outcome)
		case c.Culprit != commits[0] && (c.Outcome != bisect.Found || c.BisectRun == ""):
			t.Errorf("culprit %s (%s): outcome %q, bisect run %q: want found by a bisect", c.Culprit, name, c.Outcome, c.BisectRun)
		case !strings.Contains(c.Line, "uprobe-nop"):
			t.Errorf("culprit %s (%s) in series %s: want uprobe-nop's (syscall-count is the control)", c.Culprit, name, c.Line)
		}
		found[c.Culprit] = true
	}
	for c, name := range planted {
		if !found[c] {
			t.Errorf("planted commit %s (%s) not named", c[:12], name)
		}
	}

	// No documentation- or comment-only commit was booted, by the track or
	// by a bisect.
	keys, err := store.LineKeys(ctx, lab.Name)
	if err != nil {
		t.Fatal(err)
	}
	booted := map[string]bool{}
	for _, key := range keys {
		points, err := store.Points(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range points {
			booted[p.Commit] = true
			if quiet[p.Commit] {
				t.Errorf("%s (%s run %s) was booted: its image is its parent's", p.Commit[:12], p.Kind, p.RunID)
			}
		}
	}
	for c, name := range planted {
		if !booted[c] {
			t.Errorf("planted commit %s (%s) has no boot in the history", c[:12], name)
		}
	}

	// With the bisects' boots in their places along the branch, the
	// history's change points fall at the planted commits themselves, each
	// with its culprit: what the report and the regression mails name.
	h, err := historyreport.Load(ctx, store, lines.Options{Lab: lab.Name, MinPct: -1})
	if err != nil {
		t.Fatal(err)
	}
	changes := 0
	for _, f := range h.Changes() {
		if f.Line.Control {
			t.Errorf("a change point in the control %s", historyreport.RowName(f.Line.Key))
			continue
		}
		changes++
		if _, ok := planted[f.After().Commit]; !ok || f.Change.Culprit == nil || f.Change.Culprit.Culprit != f.After().Commit {
			t.Errorf("change point %s..%s (%+.3f %%), culprit %+v: want a planted commit, bisected to itself",
				f.Before().Commit[:12], f.After().Commit[:12], f.Change.Pct, f.Change.Culprit)
		}
	}
	if changes != len(planted) {
		t.Errorf("%d change points, want %d:\n%s", changes, len(planted), h.ReportText())
	}

	if dir := os.Getenv("LAB_STREAM_EXAMPLE"); dir != "" {
		writeStreamExample(t, ctx, dir, hist, results, cache, lab.Name, strings.Join(trackArgs, " "), stdout.String(), trackTook)
	}

	// A second track resumes: everything is in the history.
	stdout.Reset()
	stderr.Reset()
	again := slices.DeleteFunc(slices.Clone(trackArgs), func(a string) bool { return a == "--bisect" })
	if code := runMainIn(ctx, again, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("second lab track: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "in the history already") || strings.Contains(stdout.String(), "boot 1:") {
		t.Errorf("a second track measured again:\n%s", stdout.String())
	}
}

// writeStreamExample keeps what a stream run showed: the track's output
// and the phases' wall times (track.txt), its run folders (the track's and
// each bisect's, as lab export copies them: lab history import takes
// them), and lab history report's files; no folder of this machine named.
func writeStreamExample(t *testing.T, ctx context.Context, dir, hist, results, cache, lab, command, out string, track time.Duration) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var n publicpath.Names
	n.Whole(results, "results")
	n.Folder(cache, "$LAB_CACHE")
	if home, err := os.UserHomeDir(); err == nil {
		n.Folder(home, "~")
	}
	n.Folder(os.TempDir(), "$TMPDIR")
	text := n.Replacer().Replace(fmt.Sprintf("$ lab %s\n%s\ntrack and bisect, builds included: %s\n", command, out, track.Round(time.Second)))
	if err := os.WriteFile(filepath.Join(dir, "track.txt"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	runs, _ := filepath.Glob(filepath.Join(results, lab, "*"))
	for _, r := range runs {
		export := []string{"export", "--cache", cache, "--as", results + "=results", r, filepath.Join(dir, filepath.Base(r))}
		var stdout, stderr strings.Builder
		if code := runMainIn(ctx, export, nil, &stdout, &stderr); code != 0 {
			t.Fatalf("lab export %s: exit %d\n%s%s", r, code, stdout.String(), stderr.String())
		}
	}
	var stdout, stderr strings.Builder
	if code := runMainIn(ctx, []string{"history", "report", "--history", hist, "--lab", lab, "--out", dir}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("lab history report: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
}
