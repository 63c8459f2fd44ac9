package series

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"lab/internal/gitcmd"
)

// repo makes a git repo with one file and returns it with a series folder
// holding a format-patch that changes the file.
func repo(t *testing.T) (*gitcmd.Git, string) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	g := &gitcmd.Git{Dir: dir}
	write := func(body string) {
		if err := os.WriteFile(filepath.Join(dir, "lookup.c"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("int lookup(void)\n{\n\tread_lock(&l);\n\treturn find();\n}\n")
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"commit", "-qm", "base"}} {
		if _, err := g.Run(ctx, args...); err != nil {
			t.Fatal(err)
		}
	}
	write("int lookup(void)\n{\n\treturn find_rcu();\n}\n")
	if _, err := g.Run(ctx, "commit", "-qam", "lookup: go lockless\n\nUpstream commit 0123456789ab."); err != nil {
		t.Fatal(err)
	}
	series := filepath.Join(t.TempDir(), "lockless")
	if _, err := g.Run(ctx, "format-patch", "-q", "-1", "-o", series); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Run(ctx, "reset", "-q", "--hard", "HEAD~1"); err != nil {
		t.Fatal(err)
	}
	return g, series
}

func TestLoad(t *testing.T) {
	_, dir := repo(t)
	s, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Patches) != 1 || s.Patches[0].Subject != "lookup: go lockless" {
		t.Fatalf("patches = %+v", s.Patches)
	}
	h := s.Hash()
	f := s.Patches[0].Path
	data, _ := os.ReadFile(f)
	os.WriteFile(f, append(data, '\n'), 0o644)
	s2, _ := Load(dir)
	if s2.Hash() == h {
		t.Error("series hash did not change with the patch content")
	}
	if _, err := Load(t.TempDir()); err == nil {
		t.Error("want an error for an empty series")
	}
}

func TestApplyAndRevert(t *testing.T) {
	ctx := context.Background()
	g, dir := repo(t)
	s, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(ctx, g); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(g.Dir, "lookup.c"))
	if !strings.Contains(string(got), "find_rcu") {
		t.Fatalf("applied file:\n%s", got)
	}
	if err := s.Revert(ctx, g); err != nil {
		t.Fatal(err)
	}
	got, _ = os.ReadFile(filepath.Join(g.Dir, "lookup.c"))
	if strings.Contains(string(got), "find_rcu") || !strings.Contains(string(got), "read_lock") {
		t.Fatalf("reverted file:\n%s", got)
	}
	msg, _ := g.Output(ctx, "log", "-1", "--format=%s")
	if msg != `Revert "lookup: go lockless"` {
		t.Errorf("revert commit subject %q", msg)
	}
}

// A patch that does not apply names the patch file and the failing file and line.
func TestNotApplying(t *testing.T) {
	ctx := context.Background()
	for _, reverse := range []bool{false, true} {
		g, dir := repo(t)
		s, _ := Load(dir)
		// Change the context the patch needs.
		os.WriteFile(filepath.Join(g.Dir, "lookup.c"), []byte("int lookup(void)\n{\n\tspin_lock(&l);\n\treturn find();\n}\n"), 0o644)
		g.Run(ctx, "commit", "-qam", "conflicting change")
		var err error
		if reverse {
			err = s.Revert(ctx, g)
		} else {
			err = s.Apply(ctx, g)
		}
		var ae *ApplyError
		if !errors.As(err, &ae) {
			t.Fatalf("reverse=%v: error %v is not an ApplyError", reverse, err)
		}
		msg := err.Error()
		t.Logf("reverse=%v: %s", reverse, msg)
		for _, want := range []string{s.Patches[0].Path, "lookup.c:1", "does not apply", "failing hunk: @@ -1,5 +1,4 @@"} {
			if !strings.Contains(msg, want) {
				t.Errorf("reverse=%v: error %q does not name %q", reverse, msg, want)
			}
		}
		// git am must not be left half-way.
		if _, err := os.Stat(filepath.Join(g.Dir, ".git", "rebase-apply")); err == nil {
			t.Error("git am left rebase-apply behind")
		}
	}
}

// Every file of a series folder is a patch, or Load says which is not.
func TestLoadRejects(t *testing.T) {
	_, dir := repo(t)
	patch, err := os.ReadFile(filepath.Join(dir, "0001-lookup-go-lockless.patch"))
	if err != nil {
		t.Fatal(err)
	}
	cover := "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\nFrom: A <a@b>\nSubject: [PATCH 0/1] lookup: lockless\n\nWhy.\n"
	for _, tc := range []struct {
		name  string
		files map[string]string // name -> content; "/" makes a folder
		want  string            // error substring, "" for none
		notes int
	}{
		{"readme", map[string]string{"README": "notes\n"}, "README: not a patch file", 0},
		{"orig", map[string]string{"0001-x.patch.orig": string(patch)}, "0001-x.patch.orig: not a patch file", 0},
		// A patch mail under another name is named for what it is, with
		// the name to give it.
		{"patch as .txt", map[string]string{"0002-y.txt": string(patch)}, "0002-y.txt: holds a patch mail, but lab reads only files named .patch, .mbox, .mbx, .diff, .eml in a series folder: rename it to 0002-y.patch", 0},
		{"patch without extension", map[string]string{"0002-y": string(patch)}, "rename it to 0002-y.patch", 0},
		{"patch as .patch.txt", map[string]string{"0002-y.patch.txt": string(patch)}, "rename it to 0002-y.patch", 0},
		{"subject only", map[string]string{"0002-y.msg": "Subject: [PATCH 2/2] y\n\nwords\n"}, "rename it to 0002-y.patch", 0},
		{"CRLF mail", map[string]string{"0002-y.txt": strings.ReplaceAll(string(patch), "\n", "\r\n")}, "rename it to 0002-y.patch", 0},
		{"copy of a patch", map[string]string{"0001-lookup-go-lockless.patch.bak": string(patch)}, "0001-lookup-go-lockless.patch.bak: not a patch file by its name, though it holds a patch mail: a leftover copy (of 0001-lookup-go-lockless.patch?); move it out of the folder", 0},
		{"copy under a new name", map[string]string{"0001-lookup-go-lockless.txt": string(patch)}, "a leftover copy (of 0001-lookup-go-lockless.patch?)", 0},
		{"notes with a subject", map[string]string{"NOTES": "Subject: the plan\n\nwords\n"}, "NOTES: not a patch file", 0},
		{"rej", map[string]string{"0001-x.rej": "--- lookup.c\n+++ lookup.c\n@@ -1 +1 @@\n-a\n+b\n"}, "0001-x.rej: not a patch file", 0},
		{"folder", map[string]string{"old/": ""}, "old: not a patch file", 0},
		{"empty patch", map[string]string{"0002-y.patch": ""}, "0002-y.patch: empty file", 0},
		{"binary", map[string]string{"0002-y.patch": "\x7fELF\x00\x01"}, "0002-y.patch: not a text file", 0},
		{"no subject", map[string]string{"0002-y.diff": "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"}, "0002-y.diff: no Subject: header", 0},
		{"no diff", map[string]string{"0002-y.patch": "From: A <a@b>\nSubject: [PATCH 2/2] y\n\nJust words.\n"}, `"y" has no diff`, 0},
		{"two mails", map[string]string{"all.mbox": string(patch) + "\n" + string(patch)}, "all.mbox: holds 2 mails", 0},
		{"cover letter 0000", map[string]string{"0000-cover-letter.patch": cover}, "", 1},
		{"cover letter by subject", map[string]string{"cover.eml": cover}, "", 1},
		{"hidden files ignored", map[string]string{".gitkeep": "", ".0001.patch.swp": "\x00"}, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := t.TempDir()
			os.WriteFile(filepath.Join(d, "0001-lookup-go-lockless.patch"), patch, 0o644)
			for name, body := range tc.files {
				if strings.HasSuffix(name, "/") {
					os.Mkdir(filepath.Join(d, name), 0o755)
					continue
				}
				os.WriteFile(filepath.Join(d, name), []byte(body), 0o644)
			}
			s, err := Load(d)
			switch {
			case tc.want == "" && err != nil:
				t.Fatal(err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("err = %v, want %q", err, tc.want)
			case tc.want == "" && (len(s.Patches) != 1 || len(s.Notes) != tc.notes):
				t.Fatalf("patches %+v, notes %q; want 1 patch and %d notes", s.Patches, s.Notes, tc.notes)
			}
		})
	}
	wd, _ := os.Getwd()
	for dir, want := range map[string]string{
		filepath.Join(t.TempDir(), "nope"): "does not exist",
		"nope":                             "series folder nope does not exist (looked for " + filepath.Join(wd, "nope") + ")",
		filepath.Join(dir, "0001-lookup-go-lockless.patch"): "is a file",
		t.TempDir(): "has no patches",
	} {
		if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Load(%s) = %v, want %q", dir, err, want)
		}
	}
}

// A patch saved with CRLF line endings (a mail client's) loads, applies and
// reverts like the original.
func TestCRLF(t *testing.T) {
	ctx := context.Background()
	g, dir := repo(t)
	p := filepath.Join(dir, "0001-lookup-go-lockless.patch")
	data, _ := os.ReadFile(p)
	os.WriteFile(p, []byte(strings.ReplaceAll(string(data), "\n", "\r\n")), 0o644)
	s, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Patches[0].CRLF || s.Patches[0].Subject != "lookup: go lockless" {
		t.Fatalf("patch %+v", s.Patches[0])
	}
	if err := s.Apply(ctx, g); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(g.Dir, "lookup.c")); strings.Contains(string(got), "\r") || !strings.Contains(string(got), "find_rcu") {
		t.Fatalf("applied file:\n%q", got)
	}
	if err := s.Revert(ctx, g); err != nil {
		t.Fatal(err)
	}
}

// A series names the patches that change a file, however the compiler
// printed its path.
func TestTouching(t *testing.T) {
	s := &Series{Patches: []Patch{
		{Name: "0001-a.patch", Files: Touched("--- a/kernel/events/uprobes.c\n+++ b/kernel/events/uprobes.c\n")},
		{Name: "0002-b.patch", Files: Touched("--- a/init/main.c\n+++ b/init/main.c\n--- /dev/null\n+++ b/kernel/new.c\n")},
	}}
	for file, want := range map[string]string{
		"kernel/events/uprobes.c":                                   "0001-a.patch",
		"../../../src/tarball-585a4a074597/kernel/events/uprobes.c": "0001-a.patch",
		"kernel/new.c": "0002-b.patch",
		"mm/memory.c":  "",
	} {
		if got := strings.Join(s.Touching(file), ","); got != want {
			t.Errorf("Touching(%s) = %q, want %q", file, got, want)
		}
	}
}

// diffPaths reads the paths a patch's header lines name, and says when one
// cannot be read (a scratch work tree with only the listed files would
// then lack it).
func TestDiffPaths(t *testing.T) {
	for _, tc := range []struct {
		line     string
		want     []string
		complete bool
	}{
		{"diff --git a/kernel/kprobes.c b/kernel/kprobes.c", []string{"kernel/kprobes.c"}, true},
		{"--- a/include/linux/kprobes.h", []string{"include/linux/kprobes.h"}, true},
		{"+++ b/include/linux/rethook.h", []string{"include/linux/rethook.h"}, true},
		{"--- /dev/null", nil, true},
		{"rename from lib/freelist.c", []string{"lib/freelist.c"}, true},
		{"rename to lib/objpool.c", []string{"lib/objpool.c"}, true},
		{"copy to lib/b y.c", []string{"lib/b y.c"}, true},
		{"diff --git a/lib/freelist.c b/lib/objpool.c", nil, true}, // its rename lines name both
		{"diff --git a/a b/c b/a b/c", []string{"a b/c"}, true},
		{`diff --git "a/t\303\244st.c" "b/t\303\244st.c"`, nil, false},
		{`+++ "b/t\303\244st.c"`, nil, false},
		{"diff --git nonsense", nil, false},
		{" context line", nil, true},
	} {
		got, ok := diffPaths(tc.line)
		if !slices.Equal(got, tc.want) || ok != tc.complete {
			t.Errorf("diffPaths(%q) = %q, %v; want %q, %v", tc.line, got, ok, tc.want, tc.complete)
		}
	}
}

// Touched lists a rename's both names, CRLF or not: lab watch matches a
// lab's paths against them, and a scratch work tree checks them out.
func TestTouchedRename(t *testing.T) {
	text := "diff --git a/lib/freelist.c b/lib/objpool.c\nsimilarity index 90%\nrename from lib/freelist.c\nrename to lib/objpool.c\n" +
		"--- a/lib/freelist.c\n+++ b/lib/objpool.c\n@@ -1 +1 @@\n-a\n+b\n"
	want := []string{"lib/freelist.c", "lib/objpool.c"}
	for _, text := range []string{text, strings.ReplaceAll(text, "\n", "\r\n")} {
		if got, complete := touched(text); !slices.Equal(got, want) || !complete {
			t.Errorf("touched = %q, %v; want %q, complete", got, complete, want)
		}
	}
}
