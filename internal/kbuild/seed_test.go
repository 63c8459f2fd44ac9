package kbuild

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// seedTree makes a git work tree at dir holding files, committed, and
// returns its tree hash.
func seedTree(t *testing.T, dir string, files map[string]string) string {
	t.Helper()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	os.MkdirAll(dir, 0o755)
	git("init", "-q")
	for name, body := range files {
		os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644)
	}
	git("add", ".")
	git("commit", "-q", "-m", "tree")
	return git("rev-parse", "HEAD^{tree}")
}

// sameKernel is the bulk of a fake kernel tree: files that twins share.
func sameKernel() map[string]string {
	files := map[string]string{}
	for i := range 100 {
		files[fmt.Sprintf("f%d.c", i)] = fmt.Sprint(i)
	}
	return files
}

// makeOut runs make in the build folder out and returns what it ran.
func makeOut(t *testing.T, out string) string {
	t.Helper()
	cmd := exec.Command("make", "-C", out, "--no-print-directory")
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make in %s: %v\n%s", out, err, b)
	}
	return string(b)
}

// A first build of a source tree whose twin (same arch and fragments, the
// same files but one) was built before starts from a copy of the twin's
// build folder: make then remakes what depends on the differing file and
// nothing else, and what it made reads this tree's files, not the twin's.
// The build folder is an out-of-tree make project, as kbuild's O= is: its
// Makefile and dependency files name the source tree by absolute path.
func TestSeedFromATwinsBuildFolder(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	ctx := context.Background()
	cache := t.TempDir()
	// Two trees of the same kernel (a few files in a hundred differ).
	twinFiles, userFiles := sameKernel(), sameKernel()
	twinFiles["a.c"], twinFiles["b.c"], twinFiles["gone.h"] = "a1\n", "b1\n", "g\n"
	userFiles["a.c"], userFiles["b.c"] = "a1\n", "b2\n"
	twinSrc := filepath.Join(t.TempDir(), "twin")
	twinTree := seedTree(t, twinSrc, twinFiles)
	userSrc := filepath.Join(t.TempDir(), "user")
	userTree := seedTree(t, userSrc, userFiles)

	twin := &Builder{CacheDir: cache, SrcDir: twinSrc, SourceID: "tarball-twin"}
	out := filepath.Join(cache, "build", "tarball-twin", "x86_64-common+x86_64")
	os.MkdirAll(out, 0o755)
	// b.o depends on gone.h, which the user's tree no longer has: kbuild's
	// dependency files give every prerequisite an empty rule, as here.
	mk := "SRC := " + twinSrc + "\nall: a.o b.o\na.o: $(SRC)/a.c ; cp $< $@\nb.o: $(SRC)/b.c $(SRC)/gone.h ; cp $< $@\n$(SRC)/gone.h:\n"
	os.WriteFile(filepath.Join(out, "Makefile"), []byte(mk), 0o644)
	os.Symlink(twinSrc, filepath.Join(out, "source"))
	os.WriteFile(filepath.Join(out, "blob.bin"), []byte("\x00"+twinSrc), 0o644)
	if got := makeOut(t, out); !strings.Contains(got, "a.c a.o") || !strings.Contains(got, "b.c b.o") {
		t.Fatalf("the twin's cold build ran:\n%s", got)
	}
	// objtool's build (tools/) records its objects by the folder's path.
	os.WriteFile(filepath.Join(out, ".tool.o.cmd"), []byte("cmd_"+out+"/tool.o := cc -o "+out+"/tool.o\n"), 0o644)
	rec, _ := json.Marshal(built{Src: twin.SrcDir, Tree: twinTree, Out: out})
	os.WriteFile(filepath.Join(out, builtRecord), rec, 0o644)

	user := &Builder{CacheDir: cache, SrcDir: userSrc, SourceID: "git-user"}
	userOut := filepath.Join(cache, "build", "git-user", "x86_64-common+x86_64")
	os.MkdirAll(filepath.Dir(userOut), 0o755)
	from, err := user.seed(ctx, Inputs{Tree: userTree}, userOut)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(from, out) || !strings.Contains(from, "2 files differ") {
		t.Errorf("seeded from %q, want %s with 2 files differing (b.c, gone.h)", from, out)
	}
	got := makeOut(t, userOut)
	if strings.Contains(got, "a.c") || !strings.Contains(got, userSrc+"/b.c b.o") {
		t.Errorf("make after seeding ran:\n%s\nwant b.o alone, from the user's tree", got)
	}
	if data, _ := os.ReadFile(filepath.Join(userOut, "b.o")); string(data) != "b2\n" {
		t.Errorf("b.o = %q, want the user's b.c", data)
	}
	if link, _ := os.Readlink(filepath.Join(userOut, "source")); link != userSrc {
		t.Errorf("source -> %s, want %s", link, userSrc)
	}
	if data, _ := os.ReadFile(filepath.Join(userOut, ".tool.o.cmd")); string(data) != "cmd_"+userOut+"/tool.o := cc -o "+userOut+"/tool.o\n" {
		t.Errorf("the folder's own path was not moved: %q", data)
	}
	if data, _ := os.ReadFile(filepath.Join(userOut, "blob.bin")); string(data) != "\x00"+twinSrc {
		t.Errorf("a binary file was rewritten: %q", data)
	}
	if _, err := os.Stat(filepath.Join(userOut, builtRecord)); err == nil {
		t.Error("the copy kept the twin's record: it would seed others before its own build")
	}
	// (b.o's recipe would run again: kbuild rewrites its dependency list
	// when it remakes it, this Makefile does not.)
	if got := makeOut(t, userOut); strings.Contains(got, "a.c") {
		t.Errorf("a second make ran:\n%s", got)
	}
	// The twin's folder is unchanged.
	if got := makeOut(t, out); strings.Contains(got, "a.c") {
		t.Errorf("the twin's folder was disturbed:\n%s", got)
	}
}

// No seed: no twin, a twin whose build never finished (no record), or one
// of another kernel (most files differ).
func TestSeedNeedsAFinishedTwinOfTheSameKernel(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		record bool
		twin   map[string]string
	}{
		{"unfinished", false, sameKernel()},
		{"another kernel", true, map[string]string{"x.c": "1", "y.c": "2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cache := t.TempDir()
			twinSrc := filepath.Join(t.TempDir(), "twin")
			twinTree := seedTree(t, twinSrc, tc.twin)
			userSrc := filepath.Join(t.TempDir(), "user")
			userTree := seedTree(t, userSrc, sameKernel())
			out := filepath.Join(cache, "build", "tarball-twin", "x86_64")
			os.MkdirAll(out, 0o755)
			if tc.record {
				rec, _ := json.Marshal(built{Src: twinSrc, Tree: twinTree, Out: out})
				os.WriteFile(filepath.Join(out, builtRecord), rec, 0o644)
			}
			user := &Builder{CacheDir: cache, SrcDir: userSrc, SourceID: "git-user"}
			userOut := filepath.Join(cache, "build", "git-user", "x86_64")
			from, err := user.seed(ctx, Inputs{Tree: userTree}, userOut)
			if err != nil || from != "" {
				t.Errorf("seed = %q, %v: want none", from, err)
			}
			if _, err := os.Stat(userOut); err == nil {
				t.Error("a folder was made")
			}
		})
	}
}

// A twin whose folder another build holds (its record removed until it
// ends) is waited for, not passed over: the tree is seeded from it once
// that build ends, instead of built cold.
func TestSeedWaitsForATwinMidBuild(t *testing.T) {
	ctx := context.Background()
	cache := t.TempDir()
	twinFiles, userFiles := sameKernel(), sameKernel()
	userFiles["a.c"] = "mine\n"
	twinSrc := filepath.Join(t.TempDir(), "twin")
	twinTree := seedTree(t, twinSrc, twinFiles)
	userSrc := filepath.Join(t.TempDir(), "user")
	userTree := seedTree(t, userSrc, userFiles)
	out := filepath.Join(cache, "build", "tarball-twin", "x86_64-common+x86_64")
	os.MkdirAll(out, 0o755)
	os.WriteFile(filepath.Join(out, "vmlinux"), []byte("image"), 0o644)
	// The twin's build, under way: its folder locked, no record.
	unlock, err := lockFolder(ctx, out, syscall.LOCK_EX, 0)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(1500 * time.Millisecond)
		rec, _ := json.Marshal(built{Src: twinSrc, Tree: twinTree, Out: out})
		os.WriteFile(filepath.Join(out, builtRecord), rec, 0o644)
		unlock()
	}()
	user := &Builder{CacheDir: cache, SrcDir: userSrc, SourceID: "git-user"}
	userOut := filepath.Join(cache, "build", "git-user", "x86_64-common+x86_64")
	os.MkdirAll(filepath.Dir(userOut), 0o755)
	start := time.Now()
	from, err := user.seed(ctx, Inputs{Tree: userTree}, userOut)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(from, out) || !strings.Contains(from, "1 files differ") {
		t.Errorf("seeded from %q after %v, want %s once its build ended", from, time.Since(start).Round(time.Millisecond), out)
	}
	if data, _ := os.ReadFile(filepath.Join(userOut, "vmlinux")); string(data) != "image" {
		t.Errorf("the copy has no twin's vmlinux: %q", data)
	}
}
