package initramfs

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"

	"lab/internal/testenv"
)

// Builds a real initramfs for each guest arch with u-root and lists it.
func TestBuild(t *testing.T) {
	testenv.E2E(t, "builds real initramfs images")
	root, err := ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	for _, goarch := range []string{"amd64", "arm64"} {
		t.Run(goarch, func(t *testing.T) {
			var log bytes.Buffer
			img, err := Build(context.Background(), root, goarch, cache, &log)
			if err != nil {
				t.Fatalf("%v\n%s", err, log.String())
			}
			out, err := exec.Command("cpio", "-itv", "-F", img.Path).CombinedOutput()
			if err != nil {
				t.Fatalf("cpio: %v\n%s", err, out)
			}
			list := string(out)
			for _, want := range []string{"init -> bin/agent", "bin/agent", "dev/console"} {
				if !strings.Contains(list, want) {
					t.Errorf("initramfs lacks %q:\n%s", want, list)
				}
			}
			// The agent is /init: no second Go program starts before it.
			if strings.Contains(list, "bbin/") || strings.Contains(list, "uinit") {
				t.Errorf("initramfs still has u-root's init or a uinit:\n%s", list)
			}
			again, err := Build(context.Background(), root, goarch, cache, &log)
			if err != nil || !again.Cached || again.Path != img.Path {
				t.Errorf("second build: cached=%v path=%s err=%v, want the cached image", again != nil && again.Cached, img.Path, err)
			}
		})
	}
}

func TestModuleRootRejectsOtherTrees(t *testing.T) {
	if _, err := ModuleRoot(t.TempDir()); err == nil {
		t.Fatal("want an error outside a lab checkout")
	}
}

// The key covers every package of this module the agent is built from, not
// only initramfs/: the benchmark and arch tables live in internal/.
func TestKeyCoversImportedPackages(t *testing.T) {
	root, err := ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	files, err := agentFiles(context.Background(), root, "arm64")
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(files, "\n")
	for _, want := range []string{"initramfs/agent/main.go", "internal/benchmark/benchmark.go", "internal/arch/arch.go", "initramfs/targets/table_arm64.go"} {
		if !strings.Contains(joined, want) {
			t.Errorf("the key misses %s:\n%s", want, joined)
		}
	}
	if strings.Contains(joined, "table_amd64.go") || strings.Contains(joined, "_test.go") {
		t.Errorf("the arm64 key covers files the arm64 agent is not built from:\n%s", joined)
	}
}

// One image, one key: however the checkout's root is spelled (tests give
// "../..", lab an absolute path), the same sources give the same key.
func TestKeyIgnoresHowTheRootIsSpelled(t *testing.T) {
	abs, err := ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	want, err := Key(context.Background(), abs, "amd64")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := Key(context.Background(), "../..", "amd64"); err != nil || got != want {
		t.Errorf("Key(../..) = %s, %v; Key(%s) = %s", got, err, abs, want)
	}
}
