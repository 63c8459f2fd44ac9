package kbuild

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"lab/internal/arch"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Every input must change the key; a fragment counts by content, not path.
func TestKey(t *testing.T) {
	dir := t.TempDir()
	frag := filepath.Join(dir, "common.config")
	os.WriteFile(frag, []byte("CONFIG_SMP=y\n"), 0o644)
	base := Inputs{Tree: "t1", SourceID: "tarball-1", Commit: "c1", Arch: "x86_64", Fragments: []string{frag}, Compiler: "gcc 12.2.0"}
	k0, err := base.Key()
	if err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func(*Inputs){
		"tree":     func(in *Inputs) { in.Tree = "t2" },
		"arch":     func(in *Inputs) { in.Arch = "arm64" },
		"compiler": func(in *Inputs) { in.Compiler = "gcc 13" },
	} {
		in := base
		edit(&in)
		if k, _ := in.Key(); k == k0 {
			t.Errorf("changing the %s does not change the key", name)
		}
	}
	// The same tree from another source, commit, lab, series or variant is
	// the same kernel.
	same := base
	same.SourceID, same.Commit = "git-abc", "c9"
	if k, _ := same.Key(); k != k0 {
		t.Error("where a tree came from changes the key")
	}
	if _, err := (Inputs{Arch: "x86_64"}).Key(); err == nil {
		t.Error("want an error without a tree hash")
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
	info, err := b.Lookup(Inputs{Tree: "x"})
	if err != nil || info != nil {
		t.Fatalf("empty cache: %v, %v", info, err)
	}
}

// A cache entry whose image was truncated, or whose info.json is torn or
// names another key, is a miss, and is removed so that it is rebuilt.
func TestLookupDistrustsDamagedEntries(t *testing.T) {
	b := &Builder{CacheDir: t.TempDir()}
	in := Inputs{Tree: "t", Arch: "x86_64"}
	key, _ := in.Key()
	dir := b.kernelDir(key)
	write := func(image []byte, info Info) {
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "bzImage"), image, 0o644)
		data, _ := json.Marshal(info)
		os.WriteFile(filepath.Join(dir, "info.json"), data, 0o644)
	}
	image := []byte("a kernel image")
	sum := sha256.Sum256(image)
	good := Info{Key: key, Image: filepath.Join(dir, "bzImage"), ImageSHA256: hex.EncodeToString(sum[:])}
	write(image, good)
	if info, err := b.Lookup(in); err != nil || info == nil || !info.Cached {
		t.Fatalf("a good entry: %v, %v", info, err)
	}
	for name, damage := range map[string]func(){
		"truncated image": func() { write(image[:4], good) },
		"foreign key":     func() { other := good; other.Key = "0123"; write(image, other) },
		"torn info.json": func() {
			write(image, good)
			os.WriteFile(filepath.Join(dir, "info.json"), []byte(`{"key":`), 0o644)
		},
	} {
		damage()
		if info, err := b.Lookup(in); err != nil || info != nil {
			t.Errorf("%s: %v, %v: want a miss", name, info, err)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%s: the entry was not removed", name)
		}
	}
}

// A make group left behind by a lab killed outright is stopped before the
// next make starts in the same build directory.
func TestKillStray(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command("sleep", "300")
	cmd.Dir = dir // a make works in (or names) its build directory
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	pidFile := filepath.Join(dir, ".lab-make.pgid")
	os.WriteFile(pidFile, []byte(fmt.Sprint(cmd.Process.Pid)), 0o644)
	if err := killStray(pidFile); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the stray make still runs")
	}
	if _, err := os.Stat(pidFile); !os.IsNotExist(err) {
		t.Error("the pid file stays")
	}
	if err := killStray(pidFile); err != nil {
		t.Errorf("no pid file: %v", err)
	}
	// A recorded group that is now something else is left alone.
	other := exec.Command("sleep", "300")
	other.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer other.Process.Kill()
	os.WriteFile(pidFile, []byte(fmt.Sprint(other.Process.Pid)), 0o644)
	if err := killStray(pidFile); err != nil || syscall.Kill(other.Process.Pid, 0) != nil {
		t.Errorf("a process that does not build here was killed: %v", err)
	}
}

// Labs with other fragments keep their own build folder: alternating
// between them must not rebuild everything each time.
func TestBuildDirPerFragmentSet(t *testing.T) {
	b := &Builder{CacheDir: "/c", SourceID: "tarball-1"}
	a, _ := arch.Lookup("x86_64")
	plain := b.BuildDir(a, []string{"/lab/kernel-config/common.config", "/lab/kernel-config/x86_64.config"})
	bench := b.BuildDir(a, []string{"/lab/kernel-config/common.config", "/lab/kernel-config/bpf-bench.config", "/lab/kernel-config/x86_64.config"})
	if plain != "/c/build/tarball-1/x86_64-common+x86_64" || bench == plain {
		t.Errorf("build folders %s and %s", plain, bench)
	}
	// The same fragment files elsewhere (a test's checkout): the same folder.
	if other := b.BuildDir(a, []string{"/tmp/x/kernel-config/common.config", "/tmp/x/kernel-config/x86_64.config"}); other != plain {
		t.Errorf("%s, want %s", other, plain)
	}
}

func TestExpectedCompiles(t *testing.T) {
	out := t.TempDir()
	if n, cold := expectedCompiles(out); n != 0 || !cold {
		t.Errorf("empty folder: %d, cold %v; want 0, cold", n, cold)
	}
	os.WriteFile(filepath.Join(out, ".lab-compiled"), []byte("1190"), 0o644)
	if n, cold := expectedCompiles(out); n != 1190 || !cold {
		t.Errorf("after a cold build was removed: %d, cold %v; want 1190, cold", n, cold)
	}
	os.WriteFile(filepath.Join(out, "vmlinux"), nil, 0o644)
	if n, cold := expectedCompiles(out); n != 0 || cold {
		t.Errorf("incremental: %d, cold %v; want 0 (unknown), not cold", n, cold)
	}
}

// A cold folder's make bypasses ccache, an incremental one goes through
// it, and the compiler's command line is the same either way (kbuild would
// rebuild every object whose command changed).
func TestMakeCommandCCache(t *testing.T) {
	if _, err := exec.LookPath("ccache"); err != nil {
		t.Skip("no ccache on the PATH: lab builds without it")
	}
	a, _ := arch.Lookup("x86_64")
	b := &Builder{CacheDir: t.TempDir(), SrcDir: t.TempDir(), Jobs: 2}
	var ccs []string
	for _, tc := range []struct {
		cold     bool
		disabled bool
	}{{cold: true, disabled: true}, {cold: false, disabled: false}} {
		cmd, args := b.makeCommand(context.Background(), a, t.TempDir(), tc.cold)
		disabled := false
		for _, e := range cmd.Env {
			if e == "CCACHE_DISABLE=1" {
				disabled = true
			}
		}
		if disabled != tc.disabled {
			t.Errorf("cold %v: CCACHE_DISABLE=1 set %v, want %v", tc.cold, disabled, tc.disabled)
		}
		for _, arg := range args {
			if strings.HasPrefix(arg, "CC=") {
				ccs = append(ccs, arg)
			}
		}
	}
	if len(ccs) != 2 || ccs[0] != ccs[1] || !strings.Contains(ccs[0], "ccache") {
		t.Errorf("make's CC cold and incremental: %q, want the same ccache line", ccs)
	}
}

// A kernel with debug info is built without variable-location tracking
// (its DWARF is for BTF), a user's KCFLAGS kept before; one without debug
// info gets make's command as before.
func TestMakeCommandDebugInfo(t *testing.T) {
	a, _ := arch.Lookup("arm64")
	b := &Builder{CacheDir: t.TempDir(), SrcDir: t.TempDir(), Jobs: 2}
	for _, tc := range []struct {
		name, config, env, want string
	}{
		{"debug info", "CONFIG_DEBUG_INFO=y\nCONFIG_DEBUG_INFO_BTF=y\n", "", "KCFLAGS=-fno-var-tracking -fno-var-tracking-assignments"},
		{"a user's KCFLAGS", "CONFIG_DEBUG_INFO=y\n", "-Wno-error", "KCFLAGS=-Wno-error -fno-var-tracking -fno-var-tracking-assignments"},
		{"none", "# CONFIG_DEBUG_INFO is not set\n", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("KCFLAGS", tc.env)
			out := t.TempDir()
			os.WriteFile(filepath.Join(out, ".config"), []byte(tc.config), 0o644)
			_, args := b.makeCommand(context.Background(), a, out, true)
			got := ""
			for _, arg := range args {
				if strings.HasPrefix(arg, "KCFLAGS=") {
					got = arg
				}
			}
			if got != tc.want || args[len(args)-1] != a.ImageTarget {
				t.Errorf("make %q: KCFLAGS %q, want %q, and the image target last", args, got, tc.want)
			}
		})
	}
}

// Configure runs beside the import only in a cold cache: a folder that is
// there already, or another tree's that a build would seed from (which
// needs the tree's git hash), leaves it to Build, untouched.
func TestPreconfigureOnlyCold(t *testing.T) {
	a, _ := arch.Lookup("x86_64")
	frag := filepath.Join(t.TempDir(), "common.config")
	os.WriteFile(frag, []byte("CONFIG_SMP=y\n"), 0o644)
	for _, tc := range []struct {
		name string
		make func(cache string, b *Builder)
	}{
		{"its folder exists", func(cache string, b *Builder) { os.MkdirAll(b.BuildDir(a, []string{frag}), 0o755) }},
		{"another tree's folder could seed it", func(cache string, b *Builder) {
			os.MkdirAll(filepath.Join(cache, "build", "tarball-other", filepath.Base(b.BuildDir(a, []string{frag}))), 0o755)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cache := t.TempDir()
			b := &Builder{CacheDir: cache, SrcDir: "/nonexistent", SourceID: "tarball-new"}
			tc.make(cache, b)
			done, err := b.Preconfigure(context.Background(), a, Inputs{Arch: a.Name, Fragments: []string{frag}})
			if done != nil || err != nil {
				t.Errorf("configured %v, %v; want nothing done", done != nil, err)
			}
		})
	}
}
