package testbed

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lab/internal/arch"
	"lab/internal/kbuild"
	"lab/internal/source"
	"lab/internal/testenv"
)

// A commit that changes only documentation gets its parent's cached
// kernel, without a checkout or make; a commit that changes code is built
// (here, in a tree that cannot be configured, a configure error).
func TestDocumentationOnlyCommitTakesItsParentsKernel(t *testing.T) {
	ctx := context.Background()
	repo, c := docsTree(t)
	code, docs, more, moved, tagged := c["code"], c["docs"], c["more"], c["moved"], c["tagged"]

	cache := t.TempDir()
	tree, err := source.Prepare(ctx, source.Origin{Git: repo, Base: code}, cache, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	a, err := arch.Lookup("x86_64")
	if err != nil {
		t.Fatal(err)
	}
	frag := filepath.Join(t.TempDir(), "x.config")
	os.WriteFile(frag, []byte("CONFIG_X=y\n"), 0o644)
	k := &Kernels{Tree: tree, CacheDir: cache, Fragments: []string{frag}, Logf: t.Logf}

	// The parent's kernel, as a build would have stored it.
	cc, err := kbuild.CompilerVersion(ctx, a.CC())
	if err != nil {
		t.Skip(err)
	}
	th, _ := tree.TreeHash(ctx, code)
	in := kbuild.Inputs{Tree: th, Arch: a.Name, Fragments: k.Fragments, Compiler: cc, SourceID: tree.ID, Commit: code}
	key, _ := in.Key()
	dir := filepath.Join(cache, "kernels", key)
	os.MkdirAll(dir, 0o755)
	image := []byte("the parent's image")
	sum := sha256.Sum256(image)
	os.WriteFile(filepath.Join(dir, "vmlinux"), image, 0o644)
	os.WriteFile(filepath.Join(dir, "config"), []byte("CONFIG_X=y\n"), 0o644)
	info, _ := json.Marshal(kbuild.Info{Key: key, Inputs: in, Image: filepath.Join(dir, "vmlinux"), Config: filepath.Join(dir, "config"),
		ImageSHA256: hex.EncodeToString(sum[:])})
	os.WriteFile(filepath.Join(dir, "info.json"), info, 0o644)

	got, err := k.Get(ctx, a, docs, "docs")
	if err != nil {
		t.Fatalf("the documentation-only commit: %v", err)
	}
	if got.Info.SameAs != key || got.Info.ImageSHA256 != hex.EncodeToString(sum[:]) || got.Info.Inputs.Commit != docs || tree.Held() {
		t.Errorf("the documentation-only commit's kernel %+v (tree held: %v), want the image of %s", got.Info, tree.Held(), key)
	}
	for _, c := range []struct{ name, commit string }{{"the commit that changes code after it", more},
		{"a code file moved under Documentation/", moved}, {"a documentation-only commit at a tag", tagged}} {
		if _, err := k.Get(ctx, a, c.commit, c.name); err == nil || !strings.Contains(err.Error(), "configure x86_64 at") || !tree.Held() {
			t.Errorf("%s: %v (tree held: %v), want it checked out and built (its configure fails here)", c.name, err, tree.Held())
		}
	}
}

// docsTree is a git tree of commits by name: "code" (the base a kernel is
// cached of), "docs" on it (documentation only), "more" after it (code);
// beside them, from "docs": "moved", a code file moved under
// Documentation/ (its old path is a change to the build), and "tagged", a
// documentation-only commit where an annotated tag points (its release
// string has no "+", its parent's has).
func docsTree(t *testing.T) (string, map[string]string) {
	repo := t.TempDir()
	git := testenv.Git(t, repo)
	commit := func(file, body, subject string) string {
		t.Helper()
		os.MkdirAll(filepath.Dir(filepath.Join(repo, file)), 0o755)
		os.WriteFile(filepath.Join(repo, file), []byte(body), 0o644)
		git("add", ".")
		git("commit", "-q", "-m", subject)
		return git("rev-parse", "HEAD")
	}
	c := map[string]string{}
	git("init", "-q")
	os.WriteFile(filepath.Join(repo, "Kconfig"), []byte("mainmenu \"Linux\"\n"), 0o644)
	commit("Makefile", "VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 0\nEXTRAVERSION =\n", "base")
	c["code"] = commit("kernel/fork.c", "int x;\n", "fork: x")
	c["docs"] = commit("Documentation/trace/uprobetracer.rst", "notes\n", "docs: notes")
	c["more"] = commit("kernel/fork.c", "int x, y;\n", "fork: y")
	git("checkout", "-q", "-b", "moved", c["docs"])
	git("mv", "kernel/fork.c", "Documentation/fork.rst")
	git("commit", "-q", "-m", "fork: moved")
	c["moved"] = git("rev-parse", "HEAD")
	git("checkout", "-q", "-b", "tagged", c["docs"])
	c["tagged"] = commit("Documentation/trace/more.rst", "more\n", "docs: more")
	git("tag", "-a", "-m", "a release", "v6.12-lab", c["tagged"])
	return repo, c
}
