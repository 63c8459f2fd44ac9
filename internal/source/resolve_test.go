package source

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"lab/internal/series"
)

// seriesOf is a one-patch series, made with git format-patch, that turns
// uprobes.c from before into after.
func seriesOf(t *testing.T, before, after string) *series.Series {
	return uprobesHistory(t, before, change{"uprobes: change", after})("s", 1)
}

// Mode auto finds which side of the comparison the series is on by trying
// it both ways on the source, and says why; a series that goes on neither
// way, or both ways, is an error before anything is built.
func TestResolveSeries(t *testing.T) {
	ctx := context.Background()
	lockless := lockless(t)
	moved := strings.Replace(locklessBody, "__find_uprobe_rcu()", "__find_uprobe_rcu(true)", 1)
	// The lines the patch changes are in the file before and after it:
	// forward finds the first block, reverse the second.
	// (Neither at the file's start or end, where git anchors a hunk.)
	block := func(call string) string { return "one\ntwo\nthree\n\t" + call + ";\nfour\nfive\nsix\n" }
	head, tail := "a\nb\nc\nd\n", "e\nf\ng\nh\n"
	twice := seriesOf(t, head+block("x()")+tail, head+block("y()")+tail)
	for _, tc := range []struct {
		name    string
		body    string
		ser     *series.Series
		mode    string
		want    string // the mode chosen; "" for an error
		why     string // in Why, or in the error
		reverse bool   // the error is about reverse-applying (explicit revert)
	}{
		{"carried: revert", locklessBody, lockless, ModeAuto, series.ModeRevert,
			"revert: every patch applies in reverse (1 patch): the source already carries this series (forward, 0001-uprobes-lockless-lookup.patch does not: patch failed: kernel/events/uprobes.c:1)", false},
		{"not carried: apply", lockedBody, lockless, ModeAuto, series.ModeApply,
			"apply: every patch applies forward (1 patch): the source does not carry this series yet (in reverse, 0001-uprobes-lockless-lookup.patch does not: patch failed: kernel/events/uprobes.c:1)", false},
		{"neither way", moved, lockless, ModeAuto, "",
			"series uprobe-srcu applies neither forward nor in reverse on the source:\napply ", false},
		{"both ways", head + block("x()") + "m\nn\no\np\n" + block("y()") + tail, twice, ModeAuto, "",
			"applies both forward and in reverse", false},
		{"asked: apply", lockedBody, lockless, series.ModeApply, series.ModeApply, "apply: the lab's mode", false},
		{"asked: revert, not carried", lockedBody, lockless, series.ModeRevert, "", "revert (reverse-apply) ", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tree, err := Prepare(ctx, Origin{Tarball: fakeTarball(t, "6.12.999", tc.body)}, t.TempDir(), t.Logf)
			if err != nil {
				t.Fatal(err)
			}
			defer tree.Close()
			file := filepath.Join(tree.Dir, "kernel", "events", "uprobes.c")
			old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
			if err := os.Chtimes(file, old, old); err != nil {
				t.Fatal(err)
			}
			resolved, err := tree.ResolveSeries(ctx, []*series.Series{tc.ser}, tc.mode)
			checkUntouched(t, tree, file, old, tc.body)
			var res Resolution
			if err == nil {
				if len(resolved.Each) != 1 || resolved.Why != resolved.Each[0].Why || resolved.Baseline != resolved.Each[0].Commits.Baseline {
					t.Fatalf("one series resolved as %+v", resolved)
				}
				res = resolved.Each[0]
			}
			if tc.want == "" {
				if head, _ := tree.git.Output(ctx, "rev-parse", "HEAD"); head != tree.BaseHash {
					t.Errorf("tree left at %s after a failure, want the base %s", head, tree.BaseHash)
				}
				if err == nil || !strings.Contains(err.Error(), tc.why) {
					t.Fatalf("err = %v, want %q", err, tc.why)
				}
				var ae *series.ApplyError
				if strings.Contains(tc.name, "both") {
					return
				}
				if !errors.As(err, &ae) || ae.Reverse != tc.reverse {
					t.Fatalf("err %v: want the %s attempt's ApplyError", err, map[bool]string{false: "forward", true: "reverse"}[tc.reverse])
				}
				for _, w := range []string{"0001-uprobes-lockless-lookup.patch", "kernel/events/uprobes.c", "failing hunk: @@"} {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error does not name %q:\n%v", w, err)
					}
				}
				if tc.mode == ModeAuto && !strings.Contains(err.Error(), "in reverse it fails too: 0001-uprobes-lockless-lookup.patch does not: patch failed: kernel/events/uprobes.c:") {
					t.Errorf("error does not say the reverse failed too:\n%v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Mode != tc.want || res.Why != tc.why {
				t.Errorf("mode %s, why %q; want %s, %q", res.Mode, res.Why, tc.want, tc.why)
			}
			// The source is the patched side in revert mode, the
			// baseline in apply mode; the other is lab's commit.
			c := res.Commits
			if ok := map[string]bool{series.ModeRevert: c.Patched == tree.BaseHash && c.Baseline != c.Patched,
				series.ModeApply: c.Baseline == tree.BaseHash && c.Baseline != c.Patched}[res.Mode]; !ok {
				t.Errorf("%s: commits %+v, base %s", res.Mode, c, tree.BaseHash)
			}
			// Once more: the same commits, from lab's refs.
			again, err := tree.ResolveSeries(ctx, []*series.Series{tc.ser}, tc.mode)
			if err != nil || len(again.Each) != 1 || again.Each[0] != res {
				t.Errorf("again: %+v, %v; want %+v", again, err, res)
			}
		})
	}
}

// checkUntouched: trying a series and making its commits leave the work
// tree's file as it was, content and mtime (old) alike, since a build
// folder's objects are judged by it, and no scratch tree behind.
func checkUntouched(t *testing.T, tree *Tree, file string, old time.Time, body string) {
	t.Helper()
	if fi, err := os.Stat(file); err != nil || !fi.ModTime().Equal(old) {
		t.Errorf("the work tree's %s was written (%v): a build would recompile what includes it", file, err)
	}
	if got, _ := os.ReadFile(file); string(got) != body {
		t.Errorf("the work tree's %s changed", file)
	}
	if left, _ := filepath.Glob(tree.Dir + scratchSuffix + "*"); len(left) > 0 {
		t.Errorf("scratch work trees left: %v", left)
	}
	if list, _ := tree.git.Output(context.Background(), "worktree", "list", "--porcelain"); strings.Count(list, "worktree ") != 1 {
		t.Errorf("git worktree list:\n%s", list)
	}
}

// An interrupted resolve (Ctrl-C) says it was interrupted: a try cut short
// is never reported as a series that does not go on, nor taken as one in
// mode auto.
func TestResolveSeriesInterrupted(t *testing.T) {
	lockless := lockless(t)
	for _, mode := range []string{ModeAuto, series.ModeRevert, series.ModeApply} {
		t.Run(mode, func(t *testing.T) {
			tree, err := Prepare(context.Background(), Origin{Tarball: fakeTarball(t, "6.12.999", locklessBody)}, t.TempDir(), t.Logf)
			if err != nil {
				t.Fatal(err)
			}
			defer tree.Close()
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			_, err = tree.ResolveSeries(ctx, []*series.Series{lockless}, mode)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled", err)
			}
			for _, wrong := range []string{"applies neither", "no series applies"} {
				if strings.Contains(err.Error(), wrong) {
					t.Errorf("interrupted resolve reported as %q: %v", wrong, err)
				}
			}
		})
	}
}

// A scratch work tree a killed run left is removed, with git's record of it,
// by the next run that makes a commit; other work trees of the repository
// (a user's own) are left alone.
func TestStaleScratchTreeRemoved(t *testing.T) {
	ctx := context.Background()
	tree, err := Prepare(ctx, Origin{Tarball: fakeTarball(t, "6.12.999", locklessBody)}, t.TempDir(), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	stale := tree.Dir + scratchSuffix + "killed"
	users := filepath.Join(t.TempDir(), "users")
	for _, d := range []string{stale, users} {
		if _, err := tree.git.Run(ctx, "worktree", "add", "-q", "--detach", d, tree.BaseHash); err != nil {
			t.Fatal(err)
		}
	}
	// The user deleted their work tree's folder; git still lists it.
	os.RemoveAll(users)
	if _, err := tree.ResolveSeries(ctx, []*series.Series{lockless(t)}, ModeAuto); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale scratch tree %s still there (%v)", stale, err)
	}
	list, _ := tree.git.Output(ctx, "worktree", "list", "--porcelain")
	if strings.Contains(list, stale) || !strings.Contains(list, users) {
		t.Errorf("git worktree list, want the user's and not the stale scratch tree:\n%s", list)
	}
}

// A series' commits are made while another run holds the work tree (as a
// build does, for minutes): they are made off it, so resolving the series
// does not wait for that run.
func TestResolveWhileTreeHeld(t *testing.T) {
	ctx := context.Background()
	tree, err := Prepare(ctx, Origin{Tarball: fakeTarball(t, "6.12.999", locklessBody)}, t.TempDir(), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	tree.Close()
	// Another run's hold on the work tree: a lock of its own file open.
	other, err := os.OpenFile(filepath.Join(tree.Dir, ".lab-lock"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := syscall.Flock(int(other.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	got, err := tree.ResolveSeries(ctx, []*series.Series{lockless(t)}, ModeAuto)
	if err != nil {
		t.Fatalf("resolve while another run holds the work tree: %v", err)
	}
	if got.Mode != series.ModeRevert || tree.Held() {
		t.Errorf("mode %q, work tree held %v: want revert, not held", got.Mode, tree.Held())
	}
	// A second run finds the commit under its ref.
	again, err := tree.Variants(ctx, lockless(t), series.ModeRevert)
	if err != nil || again.Baseline != got.Baseline {
		t.Errorf("variants again: %v, %v; want baseline %s", again, err, got.Baseline)
	}
}
