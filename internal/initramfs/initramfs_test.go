package initramfs

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
)

// Builds a real initramfs for each guest arch with u-root and lists it.
func TestBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds real initramfs images")
	}
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
			for _, want := range []string{"init -> ", "bin/uinit -> ", "bin/agent", "bbin/init"} {
				if !strings.Contains(list, want) {
					t.Errorf("initramfs lacks %q:\n%s", want, list)
				}
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
