// Package kbuild builds kernel images out of tree and keeps them in a cache
// keyed by everything that goes into them, so that an identical second run
// compiles nothing.
package kbuild

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"lab/internal/digest"
	"lab/internal/gitcmd"
	"lab/internal/proc"

	"lab/internal/arch"
	"lab/internal/kconfig"
)

// recipe changes whenever the way lab builds kernels changes, so that old
// cache entries are not reused for a different recipe. v3: a kernel with
// debug info is compiled without variable locations (noVarTracking), which
// changes its DWARF and so its build ID, 20 bytes of the image (and the
// vDSO's): the same key must mean the same image.
const recipe = "tinyconfig+merge_config+olddefconfig v3 (reproducible; debug info without variable locations)"

// Inputs is everything a kernel image depends on: the content of the source
// tree, the config fragments, the compiler and the arch. Not the lab, the
// series, the mode or the variant: the same tree built from any of them is
// the same kernel, and a cache hit.
type Inputs struct {
	Tree      string   // git tree hash of the source as built (content, not commit)
	Arch      string   // lab arch name
	Fragments []string // config fragment paths, in merge order
	Compiler  string   // first line of $CC --version
	// Where the tree came from, for provenance; not part of the key.
	SourceID string `json:",omitempty"` // source.Tree.ID
	Commit   string `json:",omitempty"` // the commit built
}

// Key hashes the inputs. Fragments count by content, not by path. The merged
// .config is a function of these inputs (fragments, the tree's Kconfig
// files, the compiler), and its hash is recorded in every build's Info.
func (in Inputs) Key() (string, error) {
	if in.Tree == "" {
		return "", fmt.Errorf("kernel inputs without a source tree hash")
	}
	h := sha256.New()
	fmt.Fprintf(h, "recipe=%s\ntree=%s\narch=%s\ncc=%s\n", recipe, in.Tree, in.Arch, in.Compiler)
	for _, f := range in.Fragments {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "fragment %s %x\n", filepath.Base(f), sha256.Sum256(data))
	}
	return hex.EncodeToString(h.Sum(nil))[:24], nil
}

// Info describes a built kernel; it is stored beside the image.
type Info struct {
	Key          string `json:"key"`
	Inputs       Inputs `json:"inputs"`
	Image        string `json:"image"`
	Config       string `json:"config"`
	ConfigSHA256 string `json:"config_sha256"`
	Release      string `json:"release"`
	// ImageSHA256 identifies the image: builds are reproducible, so a
	// change that touches no code gives the same image as its parent.
	ImageSHA256 string `json:"image_sha256"`
	// BTF is the kernel's BTF (the .BTF section of vmlinux) when the
	// kernel has CONFIG_DEBUG_INFO_BTF: what guest tools built against
	// this kernel (the selftests' bench) compile with.
	BTF      string        `json:"btf,omitempty"`
	Compiled int           `json:"compiled"` // compile steps (CC/AS) this build ran
	Duration time.Duration `json:"duration_ns"`
	// Configure and Make split Duration: on a cold build folder the
	// configuration (kconfig's tools built, then tinyconfig, the
	// fragments, olddefconfig) is a part of its own that a make by hand
	// from a ready .config does not have.
	Configure time.Duration `json:"configure_ns,omitempty"`
	Make      time.Duration `json:"make_ns,omitempty"`
	BuiltAt   time.Time     `json:"built_at"`
	// Seeded names the build folder of another source tree this build's
	// cold folder was copied from (see seed), "" for none.
	Seeded string `json:"seeded_from,omitempty"`
	// SameAs is the key of the kernel whose image this entry holds,
	// when its commit changed only files no build reads (Alias).
	SameAs string `json:"same_as,omitempty"`
	Cached bool   `json:"-"` // true when this run reused the image
}

// Builder builds kernels for one source tree.
type Builder struct {
	CacheDir string // holds build/, kernels/ and ccache/
	SrcDir   string
	SourceID string
	Jobs     int       // make -j; 0 means host CPUs
	Log      io.Writer // build output (make's full log)
	Progress func(compiled, expected int, elapsed time.Duration)
	// Sandboxed runs make and the Kconfig scripts in a bubblewrap namespace
	// (a series' Makefiles are code from outside) where only the build
	// directory and ccache's are writable, and there is no network.
	Sandboxed bool
	// KconfigID identifies the checked-out tree's Kconfig files. When it and
	// the fragments match the last configuration of the build directory,
	// the .config is reused (and still verified) instead of regenerated.
	KconfigID string
}

// Lookup returns the cached kernel for in, or nil.
func (b *Builder) Lookup(in Inputs) (*Info, error) {
	key, err := in.Key()
	if err != nil {
		return nil, err
	}
	return b.LookupKey(key)
}

// LookupKey returns the cached kernel with key, or nil. The cache may have
// moved (a shared cache mounted elsewhere): the image is looked for in the
// entry's own folder.
func (b *Builder) LookupKey(key string) (*Info, error) {
	data, err := os.ReadFile(filepath.Join(b.kernelDir(key), "info.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	var info Info
	if err := json.Unmarshal(data, &info); err != nil || info.Key != key || info.ImageSHA256 == "" {
		// Torn, from another recipe, or not this key's: not to be trusted.
		return nil, b.evict(key, "unreadable or foreign info.json")
	}
	info.Image = filepath.Join(b.kernelDir(key), filepath.Base(info.Image))
	info.Config = filepath.Join(b.kernelDir(key), filepath.Base(info.Config))
	if info.BTF != "" {
		info.BTF = filepath.Join(b.kernelDir(key), filepath.Base(info.BTF))
	}
	if sum, err := digest.File(info.Image); err != nil || sum != info.ImageSHA256 {
		// A truncated or overwritten image is never booted.
		return nil, b.evict(key, "image does not match its recorded sha256")
	}
	info.Cached = true
	return &info, nil
}

// evict removes a cache entry that cannot be trusted, so that it is rebuilt.
func (b *Builder) evict(key, why string) error {
	if b.Log != nil {
		fmt.Fprintf(b.Log, "kernel cache %s: %s: rebuilding\n", key, why)
	}
	if err := os.RemoveAll(b.kernelDir(key)); err != nil {
		return fmt.Errorf("kernel cache %s (%s): %w", key, why, err)
	}
	return nil
}

func (b *Builder) kernelDir(key string) string { return filepath.Join(b.CacheDir, "kernels", key) }

// BuildDir is the O= directory for an arch and a set of config fragments:
// every variant, step and commit of a source built with the same fragments
// shares it, so that switching between them is an incremental build, and a
// lab with other fragments (bpf-bench's BTF, a KUnit config) keeps its own
// instead of rebuilding everything twice when labs alternate. The folder
// is named by the fragments' file names, not their contents: an edited
// fragment reconfigures the same folder.
func (b *Builder) BuildDir(a arch.Arch, fragments []string) string {
	var names []string
	for _, f := range fragments {
		names = append(names, strings.TrimSuffix(filepath.Base(f), ".config"))
	}
	name := a.Name
	if len(names) > 0 {
		name += "-" + strings.Join(names, "+")
	}
	if len(name) > 80 {
		sum := sha256.Sum256([]byte(name))
		name = a.Name + "-" + hex.EncodeToString(sum[:8])
	}
	return filepath.Join(b.CacheDir, "build", b.SourceID, name)
}

// Build builds the source tree as it is checked out now, for in, and puts
// the image in the cache. The caller looks in the cache first (Lookup) and
// checks out in.Commit.
func (b *Builder) Build(ctx context.Context, a arch.Arch, in Inputs) (*Info, error) {
	key, err := in.Key()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	out, seeded, unlock, err := b.folder(ctx, a, in)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := b.configure(ctx, a, in, out); err != nil {
		return nil, fmt.Errorf("configure %s at %s: %w", a.Name, gitcmd.Short(in.Commit), err)
	}
	configured := time.Now()
	expected, cold := expectedCompiles(out)
	compiled, err := b.make(ctx, a, out, expected, cold)
	if err != nil {
		return nil, &BuildError{Arch: a.Name, Commit: in.Commit, Dir: out, Err: err}
	}
	made := time.Now()
	info := &Info{Key: key, Inputs: in, Compiled: compiled, Duration: time.Since(start), BuiltAt: time.Now().UTC(),
		Configure: configured.Sub(start), Make: made.Sub(configured), Seeded: seeded}
	if err := b.store(ctx, a, out, info); err != nil {
		return nil, err
	}
	if cold {
		os.WriteFile(filepath.Join(out, ".lab-compiled"), []byte(fmt.Sprint(compiled)), 0o644)
	}
	if rec, err := json.Marshal(built{Src: b.SrcDir, Tree: in.Tree, Out: out}); err == nil {
		os.WriteFile(filepath.Join(out, builtRecord), rec, 0o644)
	}
	return info, nil
}

// folder makes the build folder for a and in ready and locked: the legacy
// per-arch folder taken over, or a cold one seeded (seeded names from
// where), and its record of a good last build removed until this one ends
// well.
func (b *Builder) folder(ctx context.Context, a arch.Arch, in Inputs) (out, seeded string, unlock func(), err error) {
	out = b.BuildDir(a, in.Fragments)
	if _, err := os.Stat(out); os.IsNotExist(err) {
		// Before build folders were per fragment set there was one per
		// arch: the first build to come takes it over (reconfiguring it if
		// its fragments differ) rather than starting cold.
		legacy := filepath.Join(b.CacheDir, "build", b.SourceID, a.Name)
		if fi, err := os.Stat(legacy); err == nil && fi.IsDir() {
			os.Rename(legacy, out)
		}
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return "", "", nil, err
	}
	if unlock, err = lockFolder(ctx, out, syscall.LOCK_EX, 0); err != nil {
		return "", "", nil, err
	}
	fail := func(err error) (string, string, func(), error) { unlock(); return "", "", nil, err }
	if _, err := os.Stat(out); os.IsNotExist(err) {
		if seeded, err = b.seed(ctx, in, out); err != nil {
			return fail(err)
		}
		if seeded != "" && b.Log != nil {
			fmt.Fprintf(b.Log, "build folder %s seeded from %s\n", out, seeded)
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fail(err)
	}
	if err := os.Remove(filepath.Join(out, builtRecord)); err != nil && !os.IsNotExist(err) {
		return fail(err)
	}
	return out, seeded, unlock, nil
}

// store copies what a build in out made into info's cache entry and fills
// in what identifies it.
func (b *Builder) store(ctx context.Context, a arch.Arch, out string, info *Info) error {
	dir := b.kernelDir(info.Key)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	info.Image = filepath.Join(dir, filepath.Base(a.ImagePath))
	info.Config = filepath.Join(dir, "config")
	if err := copyFile(filepath.Join(out, a.ImagePath), info.Image); err != nil {
		return err
	}
	if err := copyFile(filepath.Join(out, ".config"), info.Config); err != nil {
		return err
	}
	// System.map lets a later report resolve kernel addresses without the build tree.
	copyFile(filepath.Join(out, "System.map"), filepath.Join(dir, "System.map"))
	var err error
	if info.BTF, err = saveBTF(ctx, a, out, dir); err != nil {
		return err
	}
	cfg, _ := os.ReadFile(info.Config)
	info.ConfigSHA256 = fmt.Sprintf("%x", sha256.Sum256(cfg))
	if rel, err := os.ReadFile(filepath.Join(out, "include", "config", "kernel.release")); err == nil {
		info.Release = strings.TrimSpace(string(rel))
	}
	if info.ImageSHA256, err = digest.File(info.Image); err != nil {
		return err
	}
	// info.json is written last and atomically: an entry without it (lab
	// killed mid-copy) is a miss, never a half-written kernel.
	data, _ := json.MarshalIndent(info, "", "  ")
	tmp := filepath.Join(dir, "info.json.tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, "info.json"))
}

// sandbox is where make runs for the build directory out: nil (the host)
// unless Sandboxed.
func (b *Builder) sandbox(out string, fragments []string) *proc.Sandbox {
	if !b.Sandboxed {
		return nil
	}
	ccache := filepath.Join(b.CacheDir, "ccache")
	os.MkdirAll(ccache, 0o755)
	ro := []string{b.SrcDir}
	for _, f := range fragments {
		ro = append(ro, filepath.Dir(f))
	}
	return &proc.Sandbox{Writable: []string{out, ccache}, ReadOnly: ro}
}

// Preconfigure configures the build folder of a source tree just
// extracted, for a and in (its fragments and compiler; in.Tree need not be
// known), while the tree is still being stored in git: configure, most of
// a minute of one core on a cold machine, then runs beside the import
// rather than before make. It holds the folder until done is called with
// the tree's KconfigID, which stamps the .config as Build's configure
// would, so that Build takes it; done("") leaves it unstamped (configured
// again). It does nothing (done is nil) where the folder exists, or where
// another tree's folder could seed it (that needs the tree's git hash).
func (b *Builder) Preconfigure(ctx context.Context, a arch.Arch, in Inputs) (done func(kconfigID string), err error) {
	out := b.BuildDir(a, in.Fragments)
	if _, err := os.Stat(out); err == nil {
		return nil, nil
	}
	if cands, _ := filepath.Glob(filepath.Join(b.CacheDir, "build", "*", filepath.Base(out))); len(cands) > 0 {
		return nil, nil
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	unlock, err := lockFolder(ctx, out, syscall.LOCK_EX, 0)
	if err != nil {
		return nil, err
	}
	if err := kconfig.MergeIn(ctx, b.sandbox(out, in.Fragments), b.SrcDir, out, a.MakeArgs(), in.Fragments, b.Log); err != nil {
		unlock()
		return nil, err
	}
	return func(kconfigID string) {
		defer unlock()
		if kconfigID == "" {
			return
		}
		if stamp, err := b.configStamp(a, in, kconfigID); err == nil {
			os.WriteFile(filepath.Join(out, ".lab-config-stamp"), []byte(stamp), 0o644)
		}
	}, nil
}

// configStamp identifies what a .config was made from: the recipe, the
// tree's Kconfig files, the arch, the compiler and the fragments' content.
func (b *Builder) configStamp(a arch.Arch, in Inputs, kconfigID string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "recipe=%s\nkconfig=%s\narch=%s\ncc=%s\n", recipe, kconfigID, a.Name, in.Compiler)
	for _, f := range in.Fragments {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%x\n", sha256.Sum256(data))
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// configure makes the build directory's .config, unless the one there was
// made from the same fragments, Kconfig files and compiler.
func (b *Builder) configure(ctx context.Context, a arch.Arch, in Inputs, out string) error {
	stampPath := filepath.Join(out, ".lab-config-stamp")
	stamp := ""
	if b.KconfigID != "" {
		var err error
		if stamp, err = b.configStamp(a, in, b.KconfigID); err != nil {
			return err
		}
		if old, err := os.ReadFile(stampPath); err == nil && string(old) == stamp {
			if err := kconfig.Verify(filepath.Join(out, ".config"), in.Fragments, b.SrcDir); err == nil {
				return nil
			}
		}
	}
	os.Remove(stampPath)
	if err := kconfig.MergeIn(ctx, b.sandbox(out, in.Fragments), b.SrcDir, out, a.MakeArgs(), in.Fragments, b.Log); err != nil {
		return err
	}
	if stamp != "" {
		return os.WriteFile(stampPath, []byte(stamp), 0o644)
	}
	return nil
}

// expectedCompiles says how many compile steps a build in out will take, as
// far as the last cold build there says (0: unknown), and whether this one
// is cold. A folder that already holds a vmlinux builds incrementally: how
// much depends on what changed, so the last cold build's size is no guide
// (it once promised "about 1h39m left" for a 17 s rebuild).
func expectedCompiles(out string) (expected int, cold bool) {
	if _, err := os.Stat(filepath.Join(out, "vmlinux")); err == nil {
		return 0, false
	}
	if data, err := os.ReadFile(filepath.Join(out, ".lab-compiled")); err == nil {
		fmt.Sscan(string(data), &expected)
	}
	return expected, true
}

// make runs the image build and returns how many compile steps ran;
// expected is how many the progress display expects (0: unknown), and cold
// says the folder holds no build yet.
func (b *Builder) make(ctx context.Context, a arch.Arch, out string, expected int, cold bool) (int, error) {
	cmd, args := b.makeCommand(ctx, a, out, cold)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	log := b.watch(pr)
	// A make of an earlier lab that was killed outright (SIGKILL) may have
	// left its sub-makes running in this directory: stop them first.
	pidFile := filepath.Join(out, ".lab-make.pgid")
	if err := killStray(pidFile); err != nil {
		return 0, err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	os.WriteFile(pidFile, []byte(fmt.Sprint(cmd.Process.Pid)), 0o644)
	defer os.Remove(pidFile)
	stop := make(chan struct{})
	go func() {
		t := time.NewTicker(10 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if b.Progress != nil {
					b.Progress(int(log.compiled.Load()), expected, time.Since(start))
				}
			}
		}
	}()
	err := cmd.Wait()
	close(stop)
	pw.Close()
	<-log.done
	if err != nil {
		return int(log.compiled.Load()), fmt.Errorf("make %s: %w\n%s", strings.Join(args, " "), err, errorContext(log.tail))
	}
	return int(log.compiled.Load()), nil
}

// makeCommand is the image build's make, with ccache when the host has it
// and a fixed build identity; args are make's arguments, for errors.
//
// ccache is bypassed (CCACHE_DISABLE) in a cold folder: storing every object
// of a first build cost 8 % of make's time (kernel/ mm/ fs/ on 2 cores: 82.7
// against 76.6 s; without compression or with time_macros sloppiness no
// better), and what it stores pays back only in another cold folder with
// the same sources and config (a second tree of the same files, a deleted
// build folder), which is rare. Incremental builds, where a bisect or a
// track goes back to a version of a file compiled before, go through it.
// CC is "ccache gcc" either way: kbuild rebuilds every object whose command
// line changed.
func (b *Builder) makeCommand(ctx context.Context, a arch.Arch, out string, cold bool) (*exec.Cmd, []string) {
	jobs := b.Jobs
	if jobs <= 0 {
		jobs = runtime.NumCPU()
	}
	cc := a.CC()
	if _, err := exec.LookPath("ccache"); err == nil {
		cc = "ccache " + cc
	}
	args := append([]string{"O=" + out}, a.MakeArgs()...)
	args = append(args, "CC="+cc, fmt.Sprintf("-j%d", jobs))
	if v, err := kconfig.Values(filepath.Join(out, ".config")); err == nil && v["CONFIG_DEBUG_INFO"] == "y" {
		args = append(args, "KCFLAGS="+strings.TrimSpace(os.Getenv("KCFLAGS")+" "+noVarTracking))
	}
	args = append(args, a.ImageTarget)
	cmd := b.sandbox(out, nil).Command(ctx, "make", args...)
	cmd.Dir = b.SrcDir
	cmd.Env = append(os.Environ(),
		"CCACHE_DIR="+filepath.Join(b.CacheDir, "ccache"),
		// Relative paths in the compiler's command line let ccache hit across
		// cache locations (a CI clone, another user's cache).
		"CCACHE_BASEDIR="+b.CacheDir,
		"CCACHE_MAXSIZE=5G",
		// Depend mode hashes the compiler's own dependency list (the
		// kernel's -Wp,-MMD) instead of running the preprocessor first.
		"CCACHE_DEPEND=1",
		// A fixed build identity (and build number, which would count the
		// builds of this directory) keeps the image a function of its inputs.
		"KBUILD_BUILD_USER=lab", "KBUILD_BUILD_HOST=lab", "KBUILD_BUILD_TIMESTAMP=1970-01-01", "KBUILD_BUILD_VERSION=1",
	)
	if cold {
		cmd.Env = append(cmd.Env, "CCACHE_DISABLE=1")
	}
	return cmd, args
}

// noVarTracking are the compiler flags of a kernel with debug info beyond
// its config's. Its DWARF is there for pahole, which makes the kernel's BTF
// from the types (CONFIG_DEBUG_INFO_BTF, for the kernel's BPF bench), and
// lab reads symbols from the symbol table: no one reads the variables'
// locations, whose tracking was most of what -g costs (measured here on
// five of the arm64 kernel's largest files: -11.5 % compile CPU with these
// flags, -14 % with no debug info at all). Neither flag changes the code
// (GCC's -g never does) or the BTF: the fresh suite's arm64 kernel kept its
// BTF and System.map byte for byte, and its image differed only in the
// build IDs (recipe). A user's KCFLAGS are kept, before them.
const noVarTracking = "-fno-var-tracking -fno-var-tracking-assignments"

// makeLog is what a build's output says as it goes: the compile steps so
// far, and its last lines for an error message. done closes at its end.
type makeLog struct {
	compiled atomic.Int64
	tail     []string
	done     chan struct{}
}

// watch reads make's output from r into b.Log, counting compile steps.
func (b *Builder) watch(r io.Reader) *makeLog {
	l := &makeLog{done: make(chan struct{})}
	go func() {
		defer close(l.done)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if b.Log != nil {
				fmt.Fprintln(b.Log, line)
			}
			if f := strings.Fields(line); len(f) == 2 && (f[0] == "CC" || f[0] == "AS") {
				l.compiled.Add(1)
			}
			l.tail = append(l.tail, line)
			if len(l.tail) > 40 {
				l.tail = l.tail[1:]
			}
		}
		// A line over 1 MiB ends the scan: keep reading, or make blocks.
		io.Copy(io.Discard, r)
	}()
	return l
}

// BuildError is a kernel that did not compile: the source's fault (for a
// bisect, a step to skip), unlike a missing tool or a full disk.
type BuildError struct {
	Arch, Commit, Dir string
	Err               error
}

func (e *BuildError) Error() string {
	return fmt.Sprintf("build %s at %s in %s: %v", e.Arch, gitcmd.Short(e.Commit), e.Dir, e.Err)
}

func (e *BuildError) Unwrap() error { return e.Err }

// compilerError is a compiler's error line: FILE:LINE[:COL]: [fatal ]error:.
var compilerError = regexp.MustCompile(`([\w./+-]+\.(?:c|h|S|lds|rs)):(\d+)(?::\d+)?: (?:fatal )?error:[^\n]*`)

// CompilerError is the first compiler error of the build's output: the
// source file (as the compiler printed it) and the whole line; "" when the
// build failed otherwise (a link error, a missing tool).
func (e *BuildError) CompilerError() (file, line string) {
	m := compilerError.FindStringSubmatch(e.Err.Error())
	if m == nil {
		return "", ""
	}
	return m[1], m[0]
}

// killStray kills the process group recorded in pidFile, if any of it is
// still alive, and waits for it to go: two makes must never share a build
// directory.
func killStray(pidFile string) error {
	data, err := os.ReadFile(pidFile)
	if err != nil {
		return nil
	}
	var pgid int
	if _, err := fmt.Sscan(string(data), &pgid); err != nil || pgid <= 1 {
		return os.Remove(pidFile)
	}
	if syscall.Kill(-pgid, 0) != nil || !groupBuilds(pgid, filepath.Dir(pidFile)) {
		// Gone, or the number now belongs to something else.
		return os.Remove(pidFile)
	}
	syscall.Kill(-pgid, syscall.SIGKILL)
	for i := 0; i < 100 && syscall.Kill(-pgid, 0) == nil; i++ {
		time.Sleep(50 * time.Millisecond)
	}
	if syscall.Kill(-pgid, 0) == nil {
		return fmt.Errorf("a make left by a killed lab (process group %d) still runs in %s", pgid, filepath.Dir(pidFile))
	}
	return os.Remove(pidFile)
}

// groupBuilds reports whether a process of group pgid builds in dir: its
// command line names dir (make O=dir) or it works in it. A recorded group
// number may have been reused since.
func groupBuilds(pgid int, dir string) bool {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, st := range stats {
		data, err := os.ReadFile(st)
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces.
		f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
		if len(f) < 3 || f[2] != fmt.Sprint(pgid) {
			continue
		}
		proc := filepath.Dir(st)
		cmdline, _ := os.ReadFile(filepath.Join(proc, "cmdline"))
		cwd, _ := os.Readlink(filepath.Join(proc, "cwd"))
		if bytes.Contains(cmdline, []byte(dir)) || strings.HasPrefix(cwd, dir) {
			return true
		}
	}
	return false
}

// errorContext picks compiler errors out of the last lines of output, or
// returns them all when none stands out.
func errorContext(tail []string) string {
	var errs []string
	for _, l := range tail {
		if strings.Contains(l, "error:") || strings.Contains(l, "Error ") {
			errs = append(errs, l)
		}
	}
	if len(errs) == 0 {
		errs = tail
	}
	return "  " + strings.Join(errs, "\n  ")
}

// saveBTF keeps the .BTF section of a kernel built with BTF, "" otherwise.
func saveBTF(ctx context.Context, a arch.Arch, out, dir string) (string, error) {
	cfg, err := os.ReadFile(filepath.Join(out, ".config"))
	if err != nil || !bytes.Contains(cfg, []byte("\nCONFIG_DEBUG_INFO_BTF=y\n")) {
		return "", nil
	}
	objcopy := "objcopy"
	if !a.Native() {
		objcopy = a.CrossCompile + "objcopy"
	}
	// Dumped to a new file and renamed over the old: a file of the entry
	// may be a link to another entry's (Alias), never to be written.
	btf := filepath.Join(dir, "vmlinux.btf")
	if msg, err := exec.CommandContext(ctx, objcopy, "--dump-section", ".BTF="+btf+".tmp", filepath.Join(out, "vmlinux"), filepath.Join(dir, "vmlinux.objcopy-out")).CombinedOutput(); err != nil {
		return "", fmt.Errorf("keep the kernel's BTF: %s: %w: %s", objcopy, err, msg)
	}
	os.Remove(filepath.Join(dir, "vmlinux.objcopy-out"))
	return btf, os.Rename(btf+".tmp", btf)
}

// HZ is a kernel's CONFIG_HZ, read from its saved .config (Info.Config);
// 0 when unknown.
func HZ(config string) int {
	data, err := os.ReadFile(config)
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "CONFIG_HZ="); ok {
			var hz int
			fmt.Sscan(v, &hz)
			return hz
		}
	}
	return 0
}

// CompilerVersion is the first line of cc --version, part of the cache key.
func CompilerVersion(ctx context.Context, cc string) (string, error) {
	out, err := exec.CommandContext(ctx, cc, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w (install gcc, or gcc-aarch64-linux-gnu for arm64)", cc, err)
	}
	line, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(line), nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := dst + ".tmp"
	out, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}
