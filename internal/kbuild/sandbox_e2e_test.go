package kbuild

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"lab/internal/arch"
	"lab/internal/kconfig"
	"lab/internal/source"
	"lab/internal/spec"
	"lab/internal/testenv"
)

// A series from outside lab's checkout is configured and built in the
// bubblewrap sandbox, where the source tree is read-only: the tree's own
// Kconfig scripts must still run there (merge_config.sh once tried to make
// its temporary file in the source tree). The build folder and the cache are
// under /tmp (t.TempDir), which the sandbox replaces with a private one.
func TestSandboxedConfigure(t *testing.T) {
	testenv.E2E(t, "configures a real kernel tree in the sandbox")
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Fatal("bwrap not installed: run ./scripts/install-deps (Debian package bubblewrap)")
	}
	ctx := context.Background()
	cache := os.Getenv("LAB_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "lab")
	}
	tree, err := source.Prepare(ctx, source.Origin{Tarball: spec.DefaultTarball, Package: spec.DefaultPackage}, cache, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	// The work tree is this test's from here (another run may have left
	// it at its own commit).
	if err := tree.Checkout(ctx, tree.BaseHash); err != nil {
		t.Fatal(err)
	}
	a, _ := arch.Lookup("x86_64")
	frags := []string{"../../kernel-config/common.config", "../../kernel-config/x86_64.config"}
	for i, f := range frags {
		frags[i], _ = filepath.Abs(f)
	}
	var log bytes.Buffer
	b := &Builder{CacheDir: t.TempDir(), SrcDir: tree.Dir, Sandboxed: true, Log: &log}
	out := t.TempDir()
	if err := b.configure(ctx, a, Inputs{Fragments: frags}, out); err != nil {
		t.Fatalf("configure in the sandbox: %v\n%s", err, log.String())
	}
	if err := kconfig.Verify(filepath.Join(out, ".config"), frags, tree.Dir); err != nil {
		t.Error(err)
	}
}
