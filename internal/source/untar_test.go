package source

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"lab/internal/gitcmd"
)

// The import of a tarball (tar with xz's threads, then git add): its tree
// must be the one git add of the extracted files makes, whatever
// the members are (names with spaces, symlinks, executables, empty files,
// deep folders) and however the archive names them.
func TestImportIsGitAddOfTheFiles(t *testing.T) {
	for _, tc := range []struct {
		name string
		tar  func(top, dir string) []string // tar's arguments after -cJf FILE
	}{
		{"named by the top folder", func(top, dir string) []string { return []string{"-C", top, filepath.Base(dir)} }},
		{"named from ./", func(top, dir string) []string { return []string{"-C", dir, "."} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			top := t.TempDir()
			dir := filepath.Join(top, "linux-source-6.12")
			files := map[string]string{
				"Makefile":                "VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 0\nEXTRAVERSION =\nkernelversion:\n\t@echo 6.12.0\n",
				"kernel/events/uprobes.c": "int x;\n",
				"tools/testing/boards/Dell Inc.,XPS 13 9300.yaml": "a name with spaces and a comma\n",
				"scripts/empty":    "",
				"a/b/c/d/e/deep.h": "#define DEEP 1\n",
				".gitignore":       "*\n",
				"Documentation/translations/zh_CN/\u4e2d\u6587.rst": "unicode\n",
			}
			for name, body := range files {
				p := filepath.Join(dir, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			os.WriteFile(filepath.Join(dir, "scripts", "run.sh"), []byte("#!/bin/sh\n"), 0o755)
			os.Symlink("../a/b/c/d/e/deep.h", filepath.Join(dir, "scripts", "deep.h"))
			os.MkdirAll(filepath.Join(dir, "empty-folder"), 0o755)

			want := gitAddTree(t, dir)
			tarball := filepath.Join(t.TempDir(), "linux-source-6.12.tar.xz")
			if out, err := exec.Command("tar", append([]string{"-cJf", tarball}, tc.tar(top, dir)...)...).CombinedOutput(); err != nil {
				t.Fatalf("tar: %v\n%s", err, out)
			}
			tree, err := Prepare(context.Background(), Origin{Tarball: tarball}, t.TempDir(), t.Logf)
			if err != nil {
				t.Fatal(err)
			}
			defer tree.Close()
			got, err := tree.git.Output(context.Background(), "rev-parse", tree.BaseHash+"^{tree}")
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				list, _ := tree.git.Output(context.Background(), "ls-tree", "-r", tree.BaseHash)
				t.Errorf("import's tree %s, git add's %s:\n%s", got, want, list)
			}
			if st, _ := tree.git.Output(context.Background(), "status", "--porcelain", "--ignored"); st != "" && !strings.Contains(st, ".lab-lock") {
				t.Errorf("work tree differs from the import:\n%s", st)
			}
			// The index knows every file unchanged from its stat data: a
			// checkout rewrites none (a file rewritten is a newer one,
			// and make would rebuild everything that depends on it).
			if out, _ := tree.git.Output(context.Background(), "diff-files", "--name-only"); out != "" {
				t.Errorf("files git must read to tell unchanged:\n%s", out)
			}
			uprobes := filepath.Join(tree.Dir, "kernel", "events", "uprobes.c")
			before, _ := os.Stat(uprobes)
			if err := tree.Checkout(context.Background(), tree.BaseHash); err != nil {
				t.Fatal(err)
			}
			if after, err := os.Stat(uprobes); err != nil || !after.ModTime().Equal(before.ModTime()) {
				t.Errorf("checkout of the import rewrote %s (%v)", uprobes, err)
			}
		})
	}
}

// gitAddTree is the tree git add -f -A makes of dir's files (in a copy).
func gitAddTree(t *testing.T, dir string) string {
	t.Helper()
	copyDir := filepath.Join(t.TempDir(), "copy")
	if out, err := exec.Command("cp", "-a", dir, copyDir).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
	var tree string
	for _, args := range [][]string{{"init", "-q"}, {"add", "-f", "-A", "."}, {"write-tree"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = copyDir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		tree = strings.TrimSpace(string(out))
	}
	return tree
}

// storeObjects writes each regular file's blob, on every core, a symbolic
// link's as git add would (its target path), and nothing for the lock
// file; each entry names the blob git hash-object names.
func TestStoreObjects(t *testing.T) {
	dir := t.TempDir()
	git := &gitcmd.Git{Dir: dir}
	ctx := context.Background()
	if _, err := git.Run(ctx, "init", "-q"); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"Makefile": "all:\n", "kernel/a.c": "int a;\n", "kernel/b c.c": "int b;\n", "big": strings.Repeat("x", 1<<20)}
	for name, body := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, ".lab-lock"), []byte("lock only\n"), 0o644)
	os.Symlink("kernel/a.c", filepath.Join(dir, "link"))
	entries, err := storeObjects(ctx, git, dir)
	if err != nil {
		t.Fatal(err)
	}
	hash := func(body string) string {
		cmd := git.Command(ctx, "hash-object", "--stdin")
		cmd.Stdin = strings.NewReader(body)
		h, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(h))
	}
	stored := func(body string) bool {
		_, err := git.Run(ctx, "cat-file", "-e", hash(body))
		return err == nil
	}
	files["link"] = "kernel/a.c"
	for name, body := range files {
		if !stored(body) {
			t.Errorf("%s was not stored", name)
		}
	}
	if stored("lock only\n") {
		t.Error("the lock file was stored")
	}
	if len(entries) != len(files) {
		t.Errorf("%d entries, want %d: %+v", len(entries), len(files), entries)
	}
	for _, e := range entries {
		if body, ok := files[e.path]; !ok || fmt.Sprintf("%x", e.oid) != hash(body) {
			t.Errorf("entry %s: blob %x", e.path, e.oid)
		}
		if want := map[bool]uint32{true: 0o120000, false: 0o100644}[e.path == "link"]; e.mode != want {
			t.Errorf("entry %s: mode %o, want %o", e.path, e.mode, want)
		}
	}
	// As the index, the entries' stat data tell git every file unchanged
	// without reading it: diff-files compares stat data alone.
	if err := writeIndex(filepath.Join(dir, ".git", "index"), entries); err != nil {
		t.Fatal(err)
	}
	if out, err := git.Output(ctx, "diff-files", "--name-only"); err != nil || out != "" {
		t.Errorf("git diff-files (%v): files whose stat data differ from the index:\n%s", err, out)
	}
	if out, err := git.Output(ctx, "ls-files", "--others"); err != nil || out != ".lab-lock" {
		t.Errorf("files the index lacks (%v):\n%s", err, out)
	}
}
