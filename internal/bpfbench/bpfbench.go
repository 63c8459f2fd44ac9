// Package bpfbench builds the kernel's own BPF benchmark runner,
// tools/testing/selftests/bpf/bench, static, from the lab's source tree, and
// keeps it in a cache keyed by its inputs like the kernels: the recipe
// (build-bench.sh), the arch, the compilers, the source files it is built
// from and the kernel BTF it is built against.
//
// Only the trigger benchmarks are built (BENCH_SET=trigger: trig-* and
// count-*, one BPF object): they are the ones lab's benchmarks mirror, and
// the only ones that compile against any kernel's BTF (the rest include
// vmlinux.h, and crypto's needs a kernel with BPF crypto).
package bpfbench

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"lab/internal/arch"
	"lab/internal/digest"
	"lab/internal/gitcmd"
	"lab/internal/proc"
)

// script is the recipe: it stages the parts of the tree bench needs and
// runs the tree's selftests Makefile with a static link.
//
//go:embed build-bench.sh
var script []byte

// Set is the benchmarks built: trig-* and count-* only.
const Set = "trigger"

// LeftOut says what the trigger set leaves out of the tree's bench, and why.
const LeftOut = "every benchmark outside benchs/bench_trigger.c and bench_count.c (BENCH_SET=trigger): " +
	"lab compares trig-* only, and the others' BPF objects include vmlinux.h, which a lab kernel's BTF " +
	"does not always complete (crypto-* needs struct bpf_crypto_params, local-storage-create needs CONFIG_NET's socket types)"

// Clang is the compiler of the BPF objects: Debian 12's newest.
const Clang = "clang-19"

// StagePaths are the tree's paths the recipe copies and builds from: the
// only source files bench depends on, so the only ones in its key. The
// script owns the list; this reads it.
func StagePaths() []string {
	m := regexp.MustCompile(`(?s)\nstage_paths=\((.*?)\n\)`).FindSubmatch(script)
	if m == nil {
		return nil
	}
	var paths []string
	for _, line := range strings.Split(string(m[1]), "\n") {
		line, _, _ = strings.Cut(line, "#")
		paths = append(paths, strings.Fields(line)...)
	}
	return paths
}

// Inputs is everything a bench binary depends on.
type Inputs struct {
	Arch string `json:"arch"`
	// Sources identifies the content of StagePaths at Commit (git object
	// ids), the same for the same files whatever commit holds them.
	Sources   string `json:"sources"`
	BTFSHA256 string `json:"btf_sha256"`
	Clang     string `json:"clang"` // first line of clang --version
	CC        string `json:"cc"`    // first line of $CROSS_COMPILE gcc --version
	// Provenance, not part of the key.
	SourceID string `json:"source_id,omitempty"`
	Commit   string `json:"commit,omitempty"`
}

// Key hashes the inputs and the recipe.
func (in Inputs) Key() (string, error) {
	if in.Sources == "" || in.BTFSHA256 == "" {
		return "", errors.New("bench inputs without sources or BTF")
	}
	h := sha256.New()
	fmt.Fprintf(h, "recipe=%x\nset=%s\narch=%s\nsources=%s\nbtf=%s\nclang=%s\ncc=%s\n",
		sha256.Sum256(script), Set, in.Arch, in.Sources, in.BTFSHA256, in.Clang, in.CC)
	return hex.EncodeToString(h.Sum(nil))[:24], nil
}

// Info describes a built bench; it is stored beside the binary.
type Info struct {
	Key      string        `json:"key"`
	Inputs   Inputs        `json:"inputs"`
	Path     string        `json:"path"`
	SHA256   string        `json:"sha256"`
	Size     int64         `json:"size"`
	Set      string        `json:"set"`
	LeftOut  string        `json:"left_out"`
	Duration time.Duration `json:"duration_ns"`
	Cached   bool          `json:"-"`
}

// Builder builds bench for one source tree.
type Builder struct {
	CacheDir string
	SourceID string // source.Tree.ID: the work folders are per source
	Jobs     int
	Log      io.Writer // the recipe's output
	// Sandboxed runs the recipe (the tree's Makefiles) in a bubblewrap
	// namespace, as kernel builds are.
	Sandboxed bool
}

func (b *Builder) dir(key string) string { return filepath.Join(b.CacheDir, "bpfbench", key) }

// WorkDir is the recipe's OUT_DIR for a source: kept between builds, so a
// bench for another commit or kernel is an incremental build. The source
// tree's lock (held while lab builds) keeps two builds out of it.
func (b *Builder) WorkDir() string {
	return filepath.Join(b.CacheDir, "bpfbench", "work", b.SourceID)
}

// Lookup returns the cached bench for in, nil when there is none.
func (b *Builder) Lookup(in Inputs) (*Info, error) {
	key, err := in.Key()
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(b.dir(key), "info.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var info Info
	if err := json.Unmarshal(data, &info); err != nil {
		return nil, b.evict(key, "unreadable info.json")
	}
	info.Path = filepath.Join(b.dir(key), "bench")
	if sum, err := digest.File(info.Path); err != nil || sum != info.SHA256 {
		return nil, b.evict(key, "bench does not match its recorded sha256")
	}
	info.Cached = true
	return &info, nil
}

// evict removes a damaged entry, so that the caller builds it again.
func (b *Builder) evict(key, why string) error {
	if err := os.RemoveAll(b.dir(key)); err != nil {
		return fmt.Errorf("bench cache %s (%s): %w", key, why, err)
	}
	return nil
}

// Build runs the recipe on srcDir (checked out at in.Commit) against the
// kernel BTF in btf, and caches the binary.
func (b *Builder) Build(ctx context.Context, a arch.Arch, in Inputs, srcDir, btf string) (*Info, error) {
	key, err := in.Key()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	work := b.WorkDir()
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, err
	}
	recipe := filepath.Join(work, "build-bench.sh")
	if err := os.WriteFile(recipe, script, 0o755); err != nil {
		return nil, err
	}
	var sb *proc.Sandbox
	if b.Sandboxed {
		sb = &proc.Sandbox{Writable: []string{work}, ReadOnly: []string{srcDir, filepath.Dir(btf)}}
	}
	cmd := sb.Command(ctx, "bash", recipe, a.Name, srcDir, btf, work)
	cmd.Env = append(os.Environ(), "BENCH_SET="+Set, "CLANG="+Clang, "STRIP=1",
		fmt.Sprintf("JOBS=%d", max(b.Jobs, 1)), "CROSS_COMPILE="+cross(a))
	var tail tailWriter
	out := io.Writer(&tail)
	if b.Log != nil {
		out = io.MultiWriter(b.Log, &tail)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("build the selftests' bench for %s at %s: %w\n%s", a.Name, gitcmd.Short(in.Commit), err, tail.String())
	}
	dir := b.dir(key)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	info := &Info{Key: key, Inputs: in, Set: Set, LeftOut: LeftOut, Path: filepath.Join(dir, "bench")}
	if err := copyFile(filepath.Join(work, a.Name, "bench"), info.Path); err != nil {
		return nil, err
	}
	if info.SHA256, err = digest.File(info.Path); err != nil {
		return nil, err
	}
	st, err := os.Stat(info.Path)
	if err != nil {
		return nil, err
	}
	info.Size = st.Size()
	info.Duration = time.Since(start)
	// info.json last and atomically: an entry without it is a miss.
	data, _ := json.MarshalIndent(info, "", "  ")
	tmp := filepath.Join(dir, "info.json.tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return nil, err
	}
	return info, os.Rename(tmp, filepath.Join(dir, "info.json"))
}

// cross is the prefix of a's compilers on this host.
func cross(a arch.Arch) string {
	if a.Native() {
		return ""
	}
	return a.CrossCompile
}

// Versions are the first lines of the compilers' --version, for Inputs.
func Versions(ctx context.Context, a arch.Arch) (clang, cc string, err error) {
	if clang, err = version(ctx, Clang); err != nil {
		return "", "", err
	}
	cc, err = version(ctx, cross(a)+"gcc")
	return clang, cc, err
}

func version(ctx context.Context, bin string) (string, error) {
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w (./scripts/install-deps --bpf-bench installs it)", bin, err)
	}
	line, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(line), nil
}

// tailWriter keeps the last lines written, for an error message.
type tailWriter struct{ buf []byte }

func (t *tailWriter) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if len(t.buf) > 64<<10 {
		t.buf = t.buf[len(t.buf)-32<<10:]
	}
	return len(p), nil
}

// String is the last 20 lines, error lines first when there are any.
func (t *tailWriter) String() string {
	lines := strings.Split(strings.TrimRight(string(t.buf), "\n"), "\n")
	var errs []string
	for _, l := range lines {
		if strings.Contains(l, "error:") || strings.Contains(l, "Error ") || strings.HasPrefix(l, "ERROR") {
			errs = append(errs, l)
		}
	}
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	if len(errs) > 10 {
		errs = errs[:10]
	}
	return "  " + strings.Join(append(errs, lines...), "\n  ")
}

func copyFile(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	tmp := dst + ".tmp"
	if err := os.WriteFile(tmp, data, 0o755); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}
