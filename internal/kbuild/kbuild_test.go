package kbuild

import (
	"os"
	"path/filepath"
	"testing"
)

// Every input must change the key; a fragment counts by content, not path.
func TestKey(t *testing.T) {
	dir := t.TempDir()
	frag := filepath.Join(dir, "common.config")
	os.WriteFile(frag, []byte("CONFIG_SMP=y\n"), 0o644)
	base := Inputs{SourceID: "tarball-1", Commit: "c1", SeriesHash: "s1", Mode: "revert", Variant: "baseline",
		Arch: "x86_64", Fragments: []string{frag}, Compiler: "gcc 12.2.0"}
	k0, err := base.Key()
	if err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func(*Inputs){
		"source":   func(in *Inputs) { in.SourceID = "tarball-2" },
		"commit":   func(in *Inputs) { in.Commit = "c2" },
		"series":   func(in *Inputs) { in.SeriesHash = "s2" },
		"mode":     func(in *Inputs) { in.Mode = "apply" },
		"variant":  func(in *Inputs) { in.Variant = "patched" },
		"arch":     func(in *Inputs) { in.Arch = "arm64" },
		"compiler": func(in *Inputs) { in.Compiler = "gcc 13" },
	} {
		in := base
		edit(&in)
		if k, _ := in.Key(); k == k0 {
			t.Errorf("changing the %s does not change the key", name)
		}
	}
	os.WriteFile(frag, []byte("CONFIG_SMP=y\nCONFIG_NUMA=y\n"), 0o644)
	if k, _ := base.Key(); k == k0 {
		t.Error("changing a fragment's content does not change the key")
	}
	other := filepath.Join(t.TempDir(), "common.config")
	os.WriteFile(other, []byte("CONFIG_SMP=y\nCONFIG_NUMA=y\n"), 0o644)
	moved := base
	moved.Fragments = []string{other}
	k1, _ := base.Key()
	if k, _ := moved.Key(); k != k1 {
		t.Error("the same fragment in another checkout changes the key")
	}
	missing := base
	missing.Fragments = []string{filepath.Join(dir, "nope.config")}
	if _, err := missing.Key(); err == nil {
		t.Error("want an error for a missing fragment")
	}
}

func TestLookupMiss(t *testing.T) {
	b := &Builder{CacheDir: t.TempDir()}
	info, err := b.Lookup(Inputs{SourceID: "x"})
	if err != nil || info != nil {
		t.Fatalf("empty cache: %v, %v", info, err)
	}
}
