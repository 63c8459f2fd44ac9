package source

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lab/internal/digest"
	"lab/internal/series"
)

// fakeTarball writes a tiny linux-source tarball whose Makefile says
// version, with one C file whose body is given, and returns its path.
func fakeTarball(t *testing.T, version, body string) string {
	t.Helper()
	parts := strings.SplitN(version, ".", 3)
	top := t.TempDir()
	root := filepath.Join(top, "linux-source-6.12")
	if err := os.MkdirAll(filepath.Join(root, "kernel", "events"), 0o755); err != nil {
		t.Fatal(err)
	}
	makefile := "VERSION = " + parts[0] + "\nPATCHLEVEL = " + parts[1] + "\nSUBLEVEL = " + parts[2] +
		"\nEXTRAVERSION =\nkernelversion:\n\t@echo $(VERSION).$(PATCHLEVEL).$(SUBLEVEL)$(EXTRAVERSION)\n"
	os.WriteFile(filepath.Join(root, "Makefile"), []byte(makefile), 0o644)
	os.WriteFile(filepath.Join(root, "kernel", "events", "uprobes.c"), []byte(body), 0o644)
	tarball := filepath.Join(t.TempDir(), "linux-source-6.12.tar.xz")
	if out, err := exec.Command("tar", "-cJf", tarball, "-C", top, "linux-source-6.12").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	return tarball
}

// lockless is a series, made with git format-patch, that turns the rwlock
// lookup into the lockless one: Debian's tarball ships its result, so lab
// runs it in revert mode.
func lockless(t *testing.T) *series.Series {
	return uprobesHistory(t, lockedBody, change{"uprobes: lockless lookup", locklessBody})("uprobe-srcu", 1)
}

// change is one commit of uprobesHistory: its subject and uprobes.c after it.
type change struct{ subject, body string }

// uprobesHistory commits kernel/events/uprobes.c as base, then as each
// change, in a git tree of the test's, and gives what makes a series of
// the first n changes with git format-patch, in a folder called name.
func uprobesHistory(t *testing.T, base string, changes ...change) func(name string, n int) *series.Series {
	t.Helper()
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@localhost", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = dir
		// A fixed date: the same changes make the same patches, so a
		// series made twice is the same series (its hash names its refs).
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_DATE=2024-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2024-01-01T00:00:00Z")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	file := filepath.Join(dir, "kernel", "events", "uprobes.c")
	os.MkdirAll(filepath.Dir(file), 0o755)
	git("init", "-q")
	os.WriteFile(file, []byte(base), 0o644)
	git("add", ".")
	git("commit", "-qm", "base")
	for _, c := range changes {
		os.WriteFile(file, []byte(c.body), 0o644)
		git("commit", "-qam", c.subject)
	}
	return func(name string, n int) *series.Series {
		t.Helper()
		out := filepath.Join(t.TempDir(), name)
		git("format-patch", "-q", fmt.Sprintf("-%d", n), fmt.Sprintf("HEAD~%d", len(changes)-n), "-o", out)
		s, err := series.Load(out)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

const (
	lockedBody   = "static struct uprobe *find_uprobe(void)\n{\n\tread_lock(&uprobes_treelock);\n\treturn __find_uprobe();\n}\n"
	locklessBody = "static struct uprobe *find_uprobe(void)\n{\n\treturn __find_uprobe_rcu();\n}\n"
)

// TestTarballOfAnyPointRelease prepares Debian-like tarballs of point
// releases lab has never seen: nothing may assume the one that was current
// when lab was written. The version comes from the tree's own Makefile.
func TestTarballOfAnyPointRelease(t *testing.T) {
	ctx := context.Background()
	ser := lockless(t)
	for _, version := range []string{"6.12.999", "6.12.0", "6.13.1"} {
		t.Run(version, func(t *testing.T) {
			tarball := fakeTarball(t, version, locklessBody)
			tree, err := Prepare(ctx, Origin{Tarball: tarball}, t.TempDir(), t.Logf)
			if err != nil {
				t.Fatal(err)
			}
			defer tree.Close()
			if tree.Version != version {
				t.Errorf("version %q, want %q (from the Makefile)", tree.Version, version)
			}
			sum, _ := digest.File(tarball)
			if !strings.Contains(tree.Desc, sum) || tree.ID != "tarball-"+sum[:12] {
				t.Errorf("desc %q, id %q: want the tarball's sha256 %s", tree.Desc, tree.ID, sum)
			}
			pair, err := tree.Variants(ctx, ser, series.ModeRevert)
			if err != nil {
				t.Fatalf("revert on %s: %v", version, err)
			}
			if pair.Patched != tree.BaseHash || pair.Baseline == tree.BaseHash {
				t.Errorf("revert mode: %+v, base %s", pair, tree.BaseHash)
			}
		})
	}
}

// TestSeriesThatStopsApplyingOnANewPointRelease: a Debian update that
// changes the lines a series touches makes the series fail with the patch,
// the file and the hunk named, before anything is built.
func TestSeriesThatStopsApplyingOnANewPointRelease(t *testing.T) {
	ctx := context.Background()
	ser := lockless(t)
	moved := strings.Replace(locklessBody, "__find_uprobe_rcu()", "__find_uprobe_rcu(true)", 1)
	tree, err := Prepare(ctx, Origin{Tarball: fakeTarball(t, "6.12.999", moved)}, t.TempDir(), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	_, err = tree.Variants(ctx, ser, series.ModeRevert)
	var ae *series.ApplyError
	if !errors.As(err, &ae) {
		t.Fatalf("want an ApplyError, got %v", err)
	}
	for _, want := range []string{"0001-uprobes-lockless-lookup.patch", "kernel/events/uprobes.c", "@@"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not name %q:\n%v", want, err)
		}
	}
	if head, _ := tree.git.Output(ctx, "rev-parse", "HEAD"); head != tree.BaseHash {
		t.Errorf("tree left at %s after a failed revert, want the base %s", head, tree.BaseHash)
	}
}

// TestCheck: what is wrong with a source is found by looking, before
// anything is extracted or made, and said in words naming the lab file's
// key; Prepare says the same and leaves the cache as it was.
func TestCheck(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// linux: a git tree with what make needs of Linux at v6.12; notes: a
	// git tree that is not Linux.
	repo, notes := filepath.Join(dir, "linux"), filepath.Join(dir, "notes")
	for _, r := range []string{repo, notes} {
		os.MkdirAll(r, 0o755)
		os.WriteFile(filepath.Join(r, "README"), []byte("hello\n"), 0o644)
	}
	os.WriteFile(filepath.Join(repo, "Makefile"), []byte("VERSION = 6\n"), 0o644)
	os.WriteFile(filepath.Join(repo, "Kconfig"), []byte("mainmenu \"Linux\"\n"), 0o644)
	for _, r := range []string{repo, notes} {
		for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@localhost", "commit", "-q", "-m", "base"}, {"tag", "v6.12"}} {
			cmd := exec.Command("git", args...)
			cmd.Dir = r
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v\n%s", args, err, out)
			}
		}
	}
	plain := filepath.Join(dir, "plain.tar")
	if out, err := exec.Command("tar", "-cf", plain, "-C", repo, ".").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		name string
		o    Origin
		refs []string
		key  string // "" when the source is fine; "-" for an error about refs
		want string
	}{
		{"xz tarball", Origin{Tarball: fakeTarball(t, "6.12.1", lockedBody)}, nil, "", ""},
		{"plain tar", Origin{Tarball: plain}, nil, "", ""},
		{"gzip tarball", Origin{Tarball: write("g.tar.gz", []byte{0x1f, 0x8b, 8, 0})}, nil, "", ""},
		{"no tarball", Origin{Tarball: filepath.Join(dir, "nope.tar.xz"), Package: "linux-source-6.12"}, nil, "tarball", "nope.tar.xz: no such file (install it with: apt-get install linux-source-6.12)"},
		{"a folder for a tarball", Origin{Tarball: repo}, nil, "tarball", "a folder, not a tarball"},
		{"an empty tarball", Origin{Tarball: write("empty.tar.xz", nil)}, nil, "tarball", "empty.tar.xz: an empty file, not a tarball"},
		{"a text file for a tarball", Origin{Tarball: write("notes.tar.xz", []byte("Linux 6.12, see kernel.org\n"))}, nil, "tarball", "notes.tar.xz: a text file, not a tarball"},
		{"binary, not a tarball", Origin{Tarball: write("x.bin", []byte{0x7f, 'E', 'L', 'F', 0, 1, 2})}, nil, "tarball", "x.bin: neither a compressed nor a plain tar archive"},
		{"git tree and tag", Origin{Git: repo, Base: "v6.12"}, nil, "", ""},
		{"git tree and HEAD~0", Origin{Git: repo, Base: "HEAD~0"}, nil, "", ""},
		{"no git folder", Origin{Git: filepath.Join(dir, "nope"), Base: "v6.12"}, nil, "git", "source.git " + filepath.Join(dir, "nope") + ": no such folder"},
		{"a file for a git tree", Origin{Git: plain, Base: "v6.12"}, nil, "git", "is a file, not a git tree"},
		{"a folder that is no repository", Origin{Git: t.TempDir(), Base: "v6.12"}, nil, "git", "is not a git repository"},
		{"no base ref", Origin{Git: repo, Base: "v9.9"}, nil, "base", `source.base "v9.9" is not a commit of ` + repo},
		{"an option for a base", Origin{Git: repo, Base: "--all"}, nil, "base", `source.base "--all" is not a commit`},
		{"no base", Origin{Git: repo}, nil, "base", "needs source.base"},
		{"not a Linux tree", Origin{Git: notes, Base: "v6.12"}, nil, "git", "has no top-level Makefile at v6.12: not a Linux source tree"},
		{"bisect's refs", Origin{Git: repo, Base: "v6.12"}, []string{"v6.12", "HEAD"}, "", ""},
		{"a bisect ref missing", Origin{Git: repo, Base: "v6.12"}, []string{"v6.12", "v6.13"}, "-", `"v6.13" is not a commit of ` + repo},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(ctx, tc.o, tc.refs...)
			if tc.key == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var se *Error
			if !errors.As(err, &se) || se.Key != strings.TrimPrefix(tc.key, "-") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Check = %v; want a source error about %s saying %q", err, tc.key, tc.want)
			}
			if tc.key == "-" {
				return // Prepare asks for no refs
			}
			if strings.Contains(err.Error(), "fork/exec") || strings.Contains(err.Error(), "exit status") {
				t.Errorf("%q is not in words", err)
			}
			cache := filepath.Join(t.TempDir(), "cache")
			if _, perr := Prepare(ctx, tc.o, cache, t.Logf); perr == nil || perr.Error() != err.Error() {
				t.Errorf("Prepare = %v, want Check's %v", perr, err)
			}
			if _, serr := os.Stat(cache); serr == nil {
				t.Errorf("Prepare made %s for a source it refuses", cache)
			}
		})
	}
}

// A run whose variants and kernels are cached reads only git's objects: it
// prepares the tree, finds its variants and checks its config while
// another run holds the work tree (switching variants and building), and
// waits only when it checks a commit out itself.
func TestACachedTreeWaitsForNoBuild(t *testing.T) {
	ctx := context.Background()
	ser := lockless(t)
	tarball, cache := fakeTarball(t, "6.12.7", locklessBody), t.TempDir()
	first, err := Prepare(ctx, Origin{Tarball: tarball}, cache, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	pair, err := first.Variants(ctx, ser, series.ModeRevert)
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Checkout(ctx, pair.Baseline); err != nil {
		t.Fatal(err)
	}
	if !first.Held() {
		t.Fatal("a run that checked a commit out does not hold the tree")
	}
	frag := filepath.Join(t.TempDir(), "none.config")
	os.WriteFile(frag, []byte("# nothing\n"), 0o644)

	done := make(chan error, 1)
	var second *Tree
	go func() {
		var err error
		if second, err = Prepare(ctx, Origin{Tarball: tarball}, cache, t.Logf); err != nil {
			done <- err
			return
		}
		got, err := second.Variants(ctx, ser, series.ModeRevert)
		if err == nil && got != pair {
			err = fmt.Errorf("variants %+v, want the first run's %+v", got, pair)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a run with its variants cached waited for the run that holds the tree")
	}
	defer second.Close()
	if second.Held() || second.Version != "6.12.7" {
		t.Errorf("the second run holds the tree (%v) or read version %q", second.Held(), second.Version)
	}

	checkedOut := make(chan error, 1)
	go func() { checkedOut <- second.Checkout(ctx, second.BaseHash) }()
	select {
	case err := <-checkedOut:
		t.Fatalf("the second run checked out while the first held the tree (err %v)", err)
	case <-time.After(300 * time.Millisecond):
	}
	first.Close()
	if err := <-checkedOut; err != nil {
		t.Fatal(err)
	}
}

// A run waiting for the work tree stops waiting once what it waited for
// is there (the tree another run extracted, the kernel another run built)
// though the other run keeps the tree; it waits no longer than its
// context; and it takes the tree once the other lets go.
func TestHoldUnlessReady(t *testing.T) {
	ctx := context.Background()
	tarball, cache := fakeTarball(t, "6.12.7", locklessBody), t.TempDir()
	first, err := Prepare(ctx, Origin{Tarball: tarball}, cache, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if err := first.Checkout(ctx, first.BaseHash); err != nil {
		t.Fatal(err)
	}
	second, err := Prepare(ctx, Origin{Tarball: tarball}, cache, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()

	asked := 0
	held, err := second.HoldUnless(ctx, func() bool { asked++; return asked == 3 })
	if err != nil || held || second.Held() || asked != 3 {
		t.Errorf("ready on the third ask: held %v (Held %v), err %v, asked %d times", held, second.Held(), err, asked)
	}

	short, cancel := context.WithTimeout(ctx, 3*lockPoll)
	defer cancel()
	if held, err := second.HoldUnless(short, nil); held || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a wait past its context: held %v, err %v", held, err)
	}

	first.Close()
	held, err = second.HoldUnless(ctx, func() bool {
		t.Error("asked whether it is ready although the tree was free")
		return true
	})
	if err != nil || !held || !second.Held() {
		t.Errorf("the free tree: held %v (Held %v), err %v", held, second.Held(), err)
	}
}

func TestKernelVersion(t *testing.T) {
	for _, tc := range []struct{ makefile, want string }{
		{"# SPDX\nVERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 118\nEXTRAVERSION =\nNAME = Baby Opossum Posse\n", "6.12.118"},
		{"VERSION = 6\nPATCHLEVEL = 13\nSUBLEVEL = 0\nEXTRAVERSION = -rc3\n", "6.13.0-rc3"},
		{"VERSION = 6\nPATCHLEVEL = 13\nSUBLEVEL =\nEXTRAVERSION =\n", "6.13"},
		{"VERSION = 6\nPATCHLEVEL = 13\nSUBLEVEL = 1\nEXTRAVERSION =\nfoo:\n\tVERSION = 7\n", "6.13.1"},
	} {
		if got, err := KernelVersion(tc.makefile); err != nil || got != tc.want {
			t.Errorf("KernelVersion(%q) = %q, %v; want %q", tc.makefile, got, err, tc.want)
		}
	}
	if _, err := KernelVersion("all:\n\techo\n"); err == nil {
		t.Error("a Makefile without VERSION gave a version")
	}
}
