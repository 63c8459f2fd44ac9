package arm64e2e

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lab/internal/arch"
	"lab/internal/kconfig"
	"lab/internal/run/runtest"
	"lab/internal/source"
	"lab/internal/testenv"
)

func e2e(t *testing.T) { testenv.E2E(t, "builds and boots real arm64 kernels") }

// TestArch runs lab run's checks of one arch on arm64 (see runtest.Arch).
func TestArch(t *testing.T) {
	e2e(t)
	runtest.Arch(t, "arm64")
}

// A config option that does not survive olddefconfig is an error naming it,
// its fragment and line, and what it depends on. FPROBE needs rethook,
// which arm64 lacks in 6.12.
func TestDroppedConfigOption(t *testing.T) {
	e2e(t)
	lab := runtest.SmallLab(t, "arm64")
	tree, err := source.Prepare(context.Background(), source.Origin(lab.Source), runtest.CacheDir(t), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	if err := tree.Checkout(context.Background(), tree.BaseHash); err != nil {
		t.Fatal(err)
	}
	frag := filepath.Join(t.TempDir(), "fprobe.config")
	os.WriteFile(frag, []byte("# kprobe-multi\nCONFIG_FPROBE=y\n"), 0o644)
	a, _ := arch.Lookup("arm64")
	var log bytes.Buffer
	err = kconfig.Merge(context.Background(), tree.Dir, t.TempDir(), a.MakeArgs(), append(lab.Fragments("arm64"), frag), &log)
	var de *kconfig.DroppedError
	if !errors.As(err, &de) {
		t.Fatalf("err = %v\n%s", err, log.String())
	}
	msg := err.Error()
	for _, want := range []string{frag + ":2: CONFIG_FPROBE=y", "depends on HAVE_RETHOOK"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	t.Log(msg)
}
