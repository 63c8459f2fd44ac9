// Package initramfs builds the guest's initramfs with u-root's image builder:
// lab's guest agent from initramfs/agent as /init, and /dev/console. Images
// are cached by the agent's sources (every package of this module it
// imports), the image's recipe and the target GOARCH.
package initramfs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"github.com/u-root/gobusybox/src/pkg/golang"
	"github.com/u-root/mkuimage/cpio"
	"github.com/u-root/mkuimage/uimage"
	"github.com/u-root/uio/llog"
)

// AgentPackage is the guest agent's import path.
const AgentPackage = "lab/initramfs/agent"

// recipe names how an image is laid out; it is part of the key, so that a
// change of layout is a new image. "agent-init": the agent is /init (u-root's
// init then the agent as uinit took 0.5 s of a 2-vCPU x86_64 boot to the
// agent under TCG: two Go programs starting, translated as they ran), and the
// agent has its symbol table but no DWARF (1.4 MB less to unpack at boot).
const recipe = "agent-init"

// Image is a built initramfs.
type Image struct {
	Path   string
	Key    string
	Cached bool
}

// File is a host file put into the image beside the agent, e.g. a guest
// tool (the selftests' bench).
type File struct {
	Host  string // path on the host
	Guest string // path in the image, without the leading /
}

// Key hashes what goes into the image: the source files of every package of
// this module the agent is built from (whatever folder they are in), the
// module's go.mod and go.sum (which pin everything else), the Go version,
// GOARCH and the extra files (by content).
func Key(ctx context.Context, moduleRoot, goarch string, extra ...File) (string, error) {
	// Files are hashed by their path relative to the root, and go list
	// gives absolute paths: a relative root ("../..", as tests give it)
	// made every path "" and so a second key for the same image.
	moduleRoot, err := filepath.Abs(moduleRoot)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "go=%s goarch=%s recipe=%s\n", runtime.Version(), goarch, recipe)
	for _, f := range extra {
		data, err := os.ReadFile(f.Host)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "extra %s %x\n", f.Guest, sha256.Sum256(data))
	}
	files, err := agentFiles(ctx, moduleRoot, goarch)
	if err != nil {
		return "", err
	}
	files = append(files, filepath.Join(moduleRoot, "go.mod"), filepath.Join(moduleRoot, "go.sum"))
	sort.Strings(files)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		rel, err := filepath.Rel(moduleRoot, f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %x\n", rel, sha256.Sum256(data))
	}
	return hex.EncodeToString(h.Sum(nil))[:24], nil
}

// agentFiles lists the source files of the agent and of every package of
// this module it imports, as `go list -deps` sees them for the guest.
func agentFiles(ctx context.Context, moduleRoot, goarch string) ([]string, error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-deps", "-json=ImportPath,Dir,GoFiles,SFiles,HFiles,EmbedFiles", AgentPackage)
	cmd.Dir = moduleRoot
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+goarch, "CGO_ENABLED=0")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list the agent's packages: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	var files []string
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var pkg struct {
			ImportPath, Dir                     string
			GoFiles, SFiles, HFiles, EmbedFiles []string
		}
		if err := dec.Decode(&pkg); err != nil {
			return nil, fmt.Errorf("go list the agent's packages: %w", err)
		}
		if pkg.ImportPath != "lab" && !strings.HasPrefix(pkg.ImportPath, "lab/") {
			continue
		}
		for _, group := range [][]string{pkg.GoFiles, pkg.SFiles, pkg.HFiles, pkg.EmbedFiles} {
			for _, f := range group {
				files = append(files, filepath.Join(pkg.Dir, f))
			}
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("go list found no sources of %s in %s", AgentPackage, moduleRoot)
	}
	return files, nil
}

// Build returns the initramfs for goarch, building it with u-root unless the
// cache in cacheDir has it. moduleRoot is lab's source checkout; extra files
// go in beside the agent.
func Build(ctx context.Context, moduleRoot, goarch, cacheDir string, log io.Writer, extra ...File) (*Image, error) {
	key, err := Key(ctx, moduleRoot, goarch, extra...)
	if err != nil {
		return nil, fmt.Errorf("initramfs key: %w", err)
	}
	dir := filepath.Join(cacheDir, "initramfs")
	out := filepath.Join(dir, fmt.Sprintf("%s-%s.cpio", goarch, key))
	if _, err := os.Stat(out); err == nil {
		return &Image{Path: out, Key: key, Cached: true}, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	partial := filepath.Join(tmp, "initramfs.cpio")
	l := llog.New(slog.LevelInfo, llog.WritePrintf(log))
	// gobusybox passes go build -a (rebuild every package, the standard
	// library too), which made each image a minute or more of compiling on
	// 2 cores; -a=false, given after it, lets the Go build cache serve what
	// has not changed. The cache is keyed by content, so the binaries are
	// the same.
	cached := []string{"-a=false"}
	var files []string
	for _, f := range extra {
		files = append(files, f.Host+":"+f.Guest)
	}
	// The kernel opens /dev/console for init's standard streams before
	// devtmpfs is mounted: without the node the agent would start with no
	// stdout, and its first open file would take descriptor 0.
	base, err := cpio.ArchiveFromRecords([]cpio.Record{
		cpio.Directory("dev", 0o755),
		cpio.CharDev("dev/console", 0o600, 5, 1),
	})
	if err != nil {
		return nil, err
	}
	err = uimage.Create(l,
		uimage.WithBaseArchive(base),
		uimage.WithFiles(files...),
		uimage.WithEnv(golang.WithGOARCH(goarch), golang.DisableCGO(), golang.WithWorkingDir(moduleRoot)),
		// The agent keeps its symbol table (benchmarks find their probe
		// targets through it); -w drops only DWARF, which nothing reads.
		uimage.WithBinaryCommandsOpts(&golang.BuildOpts{NoStrip: true, ExtraArgs: append(cached, "-ldflags=-w")}, AgentPackage),
		uimage.WithInit("agent"),
		uimage.WithUinit(""),
		uimage.WithShell(""),
		uimage.WithSkipLDD(),
		uimage.WithTempDir(tmp),
		uimage.WithCPIOOutput(partial),
	)
	if err != nil {
		return nil, fmt.Errorf("u-root initramfs for %s: %w", goarch, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := os.Rename(partial, out); err != nil {
		return nil, err
	}
	return &Image{Path: out, Key: key}, nil
}

// FindModuleRoot finds lab's source checkout: from the working folder, the
// lab file's checkout (labRoot), $LAB_ROOT, or the lab binary's folder
// (./lab, built in the checkout), in that order. lab runs from elsewhere
// under git bisect run, which runs it in the kernel tree.
func FindModuleRoot(labRoot string) (string, error) {
	dirs := []string{".", labRoot, os.Getenv("LAB_ROOT")}
	if exe, err := os.Executable(); err == nil {
		dirs = append(dirs, filepath.Dir(exe))
	}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if root, err := ModuleRoot(d); err == nil {
			return root, nil
		}
	}
	return "", fmt.Errorf("no lab source checkout (go.mod with module lab) at or above the working folder, the lab file (%s), $LAB_ROOT or the lab binary: run lab from its checkout, or set LAB_ROOT", labRoot)
}

// ModuleRoot finds lab's source checkout from dir upwards: the initramfs is
// built from the agent's sources, so lab runs from (or is pointed at) them.
func ModuleRoot(dir string) (string, error) {
	d, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil && strings.HasPrefix(strings.TrimSpace(string(data)), "module lab\n") {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("no lab source checkout (go.mod with module lab) at or above %s: run lab from its checkout", dir)
		}
		d = parent
	}
}
