package source

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"lab/internal/kconfig"
)

// A fragment option lab's list lacks is looked for in the source's own
// Kconfig files before anything is extracted: in the tarball's stream, or
// with git grep at the base. Options on the list pass without reading the
// source; one no Kconfig file defines is an error naming its line.
func TestCheckConfigBeforeExtracting(t *testing.T) {
	top := t.TempDir()
	root := filepath.Join(top, "linux-source-6.12")
	for path, body := range map[string]string{
		"Kconfig":                   "mainmenu \"Linux\"\nsource \"lib/Kconfig.debug\"\n",
		"lib/Kconfig.debug":         "menuconfig LAB_TEST_MENU\n\tbool\n  config LAB_TEST_ONLY\n\tbool\n",
		"lib/Makefile":              "config LAB_TEST_NOT_KCONFIG\n",
		"kernel/events/uprobes.c":   "int x;\n",
		"Documentation/Kconfig.txt": "",
	} {
		os.MkdirAll(filepath.Join(root, filepath.Dir(path)), 0o755)
		os.WriteFile(filepath.Join(root, path), []byte(body), 0o644)
	}
	tarball := filepath.Join(t.TempDir(), "linux-source-6.12.tar.xz")
	if out, err := exec.Command("tar", "-cJf", tarball, "-C", top, "linux-source-6.12").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	repo := filepath.Join(t.TempDir(), "linux")
	if out, err := exec.Command("cp", "-r", root, repo).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@localhost", "commit", "-q", "-m", "base"}, {"tag", "v6.12"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	frag := filepath.Join(t.TempDir(), "lab.config")
	os.WriteFile(frag, []byte("CONFIG_SMP=y\nCONFIG_LAB_TEST_ONLY=y\n# CONFIG_LAB_TEST_MENU is not set\nCONFIG_LAB_TEST_ONLYY=y\nCONFIG_LAB_TEST_NOT_KCONFIG=y\n"), 0o644)
	cache := t.TempDir()
	for _, o := range []Origin{{Tarball: tarball}, {Git: repo, Base: "v6.12"}} {
		err := CheckConfig(context.Background(), o, cache, []string{frag})
		var ue *kconfig.UnknownError
		if !errors.As(err, &ue) || len(ue.Unknown) != 2 {
			t.Fatalf("%+v: want 2 unknown options, got %v", o, err)
		}
		for _, want := range []string{frag + ":4: CONFIG_LAB_TEST_ONLYY:", "did you mean CONFIG_LAB_TEST_ONLY?", frag + ":5: CONFIG_LAB_TEST_NOT_KCONFIG:"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%+v: error lacks %q:\n%v", o, want, err)
			}
		}
	}
	if ents, _ := os.ReadDir(cache); len(ents) != 0 {
		t.Errorf("the check wrote into the cache: %v", ents)
	}
	os.WriteFile(frag, []byte("CONFIG_SMP=y\nCONFIG_LAB_TEST_ONLY=y\n"), 0o644)
	if err := CheckConfig(context.Background(), Origin{Tarball: tarball}, cache, []string{frag}); err != nil {
		t.Errorf("defined options: %v", err)
	}
}
