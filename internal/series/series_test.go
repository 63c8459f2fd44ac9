package series

import (
	"context"
	"errors"
	"os"
	"path/filepath"
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
