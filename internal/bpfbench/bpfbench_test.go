package bpfbench

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The key follows the script's staged paths: they must parse.
func TestStagePathsComeFromTheScript(t *testing.T) {
	paths := StagePaths()
	for _, want := range []string{"tools/testing/selftests/bpf", "tools/lib", "kernel/bpf", "include/uapi", "include/linux/gfp_types.h"} {
		if !slices.Contains(paths, want) {
			t.Errorf("%q not among the staged paths %q", want, paths)
		}
	}
	for _, p := range paths {
		if strings.ContainsAny(p, "#()") {
			t.Errorf("bad path %q", p)
		}
	}
}

func TestKeyCoversEveryInput(t *testing.T) {
	base := Inputs{Arch: "x86_64", Sources: "s", BTFSHA256: "b", Clang: "clang 19", CC: "gcc 12", SourceID: "src", Commit: "c1"}
	k0, err := base.Key()
	if err != nil {
		t.Fatal(err)
	}
	same := base
	same.SourceID, same.Commit = "other", "c2" // provenance only
	if k, _ := same.Key(); k != k0 {
		t.Error("the commit changed the key: the same files from another commit must hit the cache")
	}
	for name, change := range map[string]func(*Inputs){
		"arch":    func(in *Inputs) { in.Arch = "arm64" },
		"sources": func(in *Inputs) { in.Sources = "s2" },
		"btf":     func(in *Inputs) { in.BTFSHA256 = "b2" },
		"clang":   func(in *Inputs) { in.Clang = "clang 14" },
		"cc":      func(in *Inputs) { in.CC = "gcc 13" },
	} {
		in := base
		change(&in)
		if k, _ := in.Key(); k == k0 {
			t.Errorf("%s does not change the key", name)
		}
	}
	if _, err := (Inputs{Arch: "x86_64"}).Key(); err == nil {
		t.Error("inputs without sources got a key")
	}
}

// A damaged entry is a miss, and is removed.
func TestLookupEvictsADamagedEntry(t *testing.T) {
	b := &Builder{CacheDir: t.TempDir(), SourceID: "src"}
	in := Inputs{Arch: "x86_64", Sources: "s", BTFSHA256: "b"}
	key, _ := in.Key()
	dir := b.dir(key)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "bench"), []byte("truncated"), 0o755)
	os.WriteFile(filepath.Join(dir, "info.json"), []byte(`{"sha256":"0000"}`), 0o644)
	info, err := b.Lookup(in)
	if info != nil || err != nil {
		t.Fatalf("lookup = %v, %v; want a miss", info, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Error("the damaged entry is still there")
	}
}
