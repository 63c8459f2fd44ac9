package gite2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"lab/internal/arch"
	"lab/internal/gitcmd"
	"lab/internal/run/runtest"
	"lab/internal/series"
	"lab/internal/source"
	"lab/internal/spec"
	"lab/internal/testbed"
	"lab/internal/testenv"
)

// A user's own git tree: lab adds a worktree of it at the base ref and
// applies the series with git am. The lab-owned tree of Debian's tarball
// serves as the user's tree, based at the commit without the SRCU lookup, so
// applying the series must give back the file as Debian ships it.
func TestGitTreeSource(t *testing.T) {
	testenv.E2E(t, "builds a kernel from a git tree")
	ctx := context.Background()
	lab := runtest.SmallLab(t, "x86_64")
	ser, err := series.Load(lab.SeriesPath())
	if err != nil {
		t.Fatal(err)
	}
	tarball, err := source.Prepare(ctx, source.Origin(lab.Source), runtest.CacheDir(t), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := tarball.Variants(ctx, ser, spec.ModeRevert)
	tarball.Close()
	if err != nil {
		t.Fatal(err)
	}
	user := source.Origin{Git: tarball.Dir, Base: rev.Baseline}
	tree, err := source.Prepare(ctx, user, t.TempDir(), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	if !regexp.MustCompile(`^6\.12\.[0-9]+$`).MatchString(tarball.Version) || tree.Version != tarball.Version || !strings.HasPrefix(tree.Desc, "git ") {
		t.Errorf("tree: version %q (tarball's %q), desc %q", tree.Version, tarball.Version, tree.Desc)
	}
	app, err := tree.Variants(ctx, ser, spec.ModeApply)
	if err != nil {
		t.Fatal(err)
	}
	if app.Baseline != rev.Baseline {
		t.Errorf("apply baseline %s, want the base ref %s", app.Baseline, rev.Baseline)
	}
	g := &gitcmd.Git{Dir: tree.Dir}
	blob := func(commit string) string {
		out, err := g.Output(ctx, "rev-parse", commit+":kernel/events/uprobes.c")
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if blob(app.Patched) != blob(rev.Patched) {
		t.Error("base + series differs from Debian's uprobes.c")
	}
	if blob(app.Baseline) == blob(app.Patched) {
		t.Error("the series changed nothing")
	}
	subject, _ := g.Output(ctx, "log", "-1", "--format=%s", app.Patched)
	if subject != ser.Patches[0].Subject {
		t.Errorf("git am commit subject %q, want %q", subject, ser.Patches[0].Subject)
	}

	// The git tree's first kernel starts from a copy of the tarball
	// tree's build folder (kbuild's seed), not cold, and is the same
	// image as the tarball tree's build of the same content. The test's
	// cache sees the shared cache's build folders (read only: they are
	// copied) and keeps its own kernels.
	a, _ := arch.Lookup("x86_64")
	if tarball, err = source.Prepare(ctx, source.Origin(lab.Source), runtest.CacheDir(t), t.Logf); err != nil {
		t.Fatal(err)
	}
	shared := &testbed.Kernels{Tree: tarball, CacheDir: runtest.CacheDir(t), Fragments: lab.Fragments("x86_64"), Logf: t.Logf}
	want, err := shared.Get(ctx, a, rev.Baseline, "tarball/baseline")
	if err != nil {
		t.Fatal(err)
	}
	sharedBuild := filepath.Join(runtest.CacheDir(t), "build", tarball.ID)
	if rec, _ := os.ReadFile(filepath.Join(sharedBuild, "x86_64-common+x86_64", ".lab-built.json")); !strings.Contains(string(rec), `"out"`) {
		// The folder is no seed: its last build failed (a fault test's
		// series that does not compile) or came before folders recorded
		// their builds. A build of this run's own there makes it one; the
		// tree stays locked until the seed is taken, so that no other
		// package's build comes between.
		logLine := testenv.CommitBranch(t, filepath.Join(tarball.Dir, ".git"), tarball.BaseHash, []testenv.Edit{{
			Subject: "init: a log line of TestGitTreeSource's", File: "init/main.c",
			Change: testenv.Replace("Run %s as init process", fmt.Sprintf("Run %%s as init process (git tree source test %d)", time.Now().UnixNano()))}})
		if _, err := shared.Get(ctx, a, logLine[0], "tarball/own"); err != nil {
			t.Fatal(err)
		}
		if err := tarball.Checkout(ctx, tarball.BaseHash); err != nil {
			t.Fatal(err)
		}
	}
	defer tarball.Close()
	ownCache := filepath.Dir(filepath.Dir(tree.Dir)) // the test's cache: src/<id> is the tree
	os.MkdirAll(filepath.Join(ownCache, "build"), 0o755)
	if err := os.Symlink(sharedBuild, filepath.Join(ownCache, "build", tarball.ID)); err != nil {
		t.Fatal(err)
	}
	own := &testbed.Kernels{Tree: tree, CacheDir: ownCache, Fragments: lab.Fragments("x86_64"), Logf: t.Logf}
	got, err := own.Get(ctx, a, app.Baseline, "git/baseline")
	if err != nil {
		t.Fatal(err)
	}
	// (The test's cache sees the shared folder through its own link.)
	if !strings.Contains(got.Info.Seeded, filepath.Join(ownCache, "build", tarball.ID)) || got.Info.Compiled > 200 {
		t.Errorf("the git tree's first kernel: seeded from %q, %d compiled: want a copy of %s and an incremental build",
			got.Info.Seeded, got.Info.Compiled, sharedBuild)
	}
	if got.Info.ImageSHA256 != want.Info.ImageSHA256 {
		t.Errorf("seeded build's image sha256 %s, the tarball tree's of the same content %s", got.Info.ImageSHA256, want.Info.ImageSHA256)
	}
}
