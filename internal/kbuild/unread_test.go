package kbuild

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func TestUnread(t *testing.T) {
	for _, tc := range []struct {
		paths []string
		want  bool
	}{
		{[]string{"Documentation/trace/uprobetracer.rst"}, true},
		{[]string{"Documentation/trace/uprobetracer.rst", "MAINTAINERS", "LICENSES/preferred/GPL-2.0", "drivers/net/.gitignore"}, true},
		{[]string{"README", "CREDITS", ".mailmap", "COPYING"}, true},
		// configuration and make read these, wherever they are
		{[]string{"Documentation/Kconfig"}, false},
		{[]string{"Documentation/Makefile"}, false},
		{[]string{"Documentation/trace/uprobetracer.rst", "kernel/events/uprobes.c"}, false},
		// a .txt outside the documentation may be read: x86's opcode map generates C
		{[]string{"arch/x86/lib/x86-opcode-map.txt"}, false},
		{[]string{"tools/README"}, false},
		{[]string{"include/linux/uprobes.h"}, false},
		{nil, false},
	} {
		if got := Unread(tc.paths); got != tc.want {
			t.Errorf("Unread(%q) = %v, want %v", tc.paths, got, tc.want)
		}
	}
}

// An alias is an entry of its own key holding the other build's image:
// Lookup trusts it as any entry, and it says whose image it is.
func TestAlias(t *testing.T) {
	b := &Builder{CacheDir: t.TempDir()}
	parent := Inputs{Tree: "parent", Arch: "x86_64", Commit: "p"}
	pkey, _ := parent.Key()
	pdir := b.kernelDir(pkey)
	os.MkdirAll(pdir, 0o755)
	image := []byte("a kernel image")
	sum := sha256.Sum256(image)
	for name, data := range map[string][]byte{"vmlinux": image, "config": []byte("CONFIG_X=y\n"), "System.map": []byte("ffff T start\n")} {
		os.WriteFile(filepath.Join(pdir, name), data, 0o644)
	}
	data, _ := json.Marshal(Info{Key: pkey, Inputs: parent, Image: filepath.Join(pdir, "vmlinux"), Config: filepath.Join(pdir, "config"),
		ImageSHA256: hex.EncodeToString(sum[:]), Compiled: 5})
	os.WriteFile(filepath.Join(pdir, "info.json"), data, 0o644)
	from, err := b.Lookup(parent)
	if err != nil || from == nil {
		t.Fatalf("the parent's entry: %v, %v", from, err)
	}

	child := Inputs{Tree: "child", Arch: "x86_64", Commit: "c"}
	if _, err := b.Alias(from, child); err != nil {
		t.Fatal(err)
	}
	got, err := b.Lookup(child)
	if err != nil || got == nil {
		t.Fatalf("the alias: %v, %v", got, err)
	}
	ckey, _ := child.Key()
	if fi, err := os.Stat(b.kernelDir(ckey)); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("the alias's folder: %v, %v; want it readable by a shared cache's other users (0755)", fi.Mode(), err)
	}
	if got.Key != ckey || got.SameAs != pkey || got.ImageSHA256 != from.ImageSHA256 || got.Inputs.Commit != "c" || got.Compiled != 0 {
		t.Errorf("alias %+v of %+v", got, from)
	}
	for _, name := range []string{"vmlinux", "config", "System.map"} {
		a, _ := os.Stat(filepath.Join(pdir, name))
		c, err := os.Stat(filepath.Join(b.kernelDir(ckey), name))
		if err != nil || !os.SameFile(a, c) {
			t.Errorf("%s: not the parent's file (%v)", name, err)
		}
	}
	// A second alias of the key (another run's) leaves the first whole and
	// no folder of its own behind.
	if _, err := b.Alias(from, child); err == nil {
		t.Error("a second alias of one key replaced the first")
	}
	if again, err := b.Lookup(child); err != nil || again == nil || again.ImageSHA256 != from.ImageSHA256 {
		t.Errorf("the first alias after a second: %v, %v", again, err)
	}
	if left, _ := os.ReadDir(filepath.Dir(pdir)); len(left) != 2 {
		t.Errorf("the kernels folder holds %d entries, want the parent and its alias", len(left))
	}
}
