package source

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"unicode/utf8"

	"lab/internal/gitcmd"
)

// Error is a problem with the source a lab file names. Key is the lab
// file's key it is about (tarball, git or base, under source:), so that
// the lab can put the message at that key's line.
type Error struct {
	Key string
	Msg string
}

func (e *Error) Error() string { return e.Msg }

// LabKey is the lab file's key path the error is about, nil for a ref
// the lab file does not give (lab bisect's --good and --bad).
func (e *Error) LabKey() []string {
	if e.Key == "" {
		return nil
	}
	return []string{"source", e.Key}
}

// Check looks at o without changing anything, in well under a second: the
// tarball is there and is a tar archive (by its first bytes; nothing is
// decompressed), or the git tree is a git repository of Linux that has the
// base ref, and the refs the caller will ask of it (lab bisect's --good and
// --bad). A run and a bisect call it before they make their folder, and
// Prepare before it extracts or adds a worktree.
func Check(ctx context.Context, o Origin, refs ...string) error {
	if o.Git != "" {
		return checkGit(ctx, o, refs)
	}
	return checkTarball(o)
}

func checkTarball(o Origin) error {
	bad := func(format string, args ...any) error {
		return &Error{Key: "tarball", Msg: fmt.Sprintf("kernel source %s: ", o.Tarball) + fmt.Sprintf(format, args...)}
	}
	fi, err := os.Stat(o.Tarball)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if o.Package != "" {
			return bad("no such file (install it with: apt-get install %s)", o.Package)
		}
		return bad("no such file")
	case err != nil:
		return bad("%v", pathErr(err))
	case fi.IsDir():
		return bad("a folder, not a tarball: give source.tarball a linux source tarball (.tar.xz), or source.git a git tree and source.base a ref")
	case fi.Size() == 0:
		return bad("an empty file, not a tarball")
	}
	f, err := os.Open(o.Tarball)
	if err != nil {
		return bad("%v", pathErr(err))
	}
	defer f.Close()
	head := make([]byte, 512)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return bad("%v", pathErr(err))
	}
	head = head[:n]
	if kind := tarKind(head); kind != "" {
		return nil
	}
	what := "neither a compressed nor a plain tar archive"
	if utf8.Valid(head) && !bytes.ContainsRune(head, 0) {
		what = "a text file, not a tarball"
	}
	return bad("%s: give a linux source tarball, e.g. /usr/src/linux-source-6.12.tar.xz (apt-get install linux-source-6.12)", what)
}

// tarMagic are the first bytes of what tar -x reads: the compressions GNU
// tar recognises by their magic bytes.
var tarMagic = []struct {
	kind  string
	magic []byte
}{
	{"xz", []byte{0xfd, '7', 'z', 'X', 'Z', 0x00}},
	{"gzip", []byte{0x1f, 0x8b}},
	{"bzip2", []byte("BZh")},
	{"zstd", []byte{0x28, 0xb5, 0x2f, 0xfd}},
	{"lzip", []byte("LZIP")},
	{"lz4", []byte{0x04, 0x22, 0x4d, 0x18}},
	{"compress", []byte{0x1f, 0x9d}},
}

// tarKind names the archive head starts, "" when it is none tar reads.
func tarKind(head []byte) string {
	for _, m := range tarMagic {
		if bytes.HasPrefix(head, m.magic) {
			return m.kind
		}
	}
	// A plain tar: "ustar" at offset 257 of its first header.
	if len(head) >= 262 && string(head[257:262]) == "ustar" {
		return "tar"
	}
	return ""
}

func checkGit(ctx context.Context, o Origin, refs []string) error {
	bad := func(key, format string, args ...any) error {
		return &Error{Key: key, Msg: fmt.Sprintf(format, args...)}
	}
	fi, err := os.Stat(o.Git)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return bad("git", "source.git %s: no such folder: give the folder of a git clone of Linux", o.Git)
	case err != nil:
		return bad("git", "source.git %s: %v", o.Git, pathErr(err))
	case !fi.IsDir():
		return bad("git", "source.git %s is a file, not a git tree: give the folder of a git clone of Linux", o.Git)
	}
	if _, err := exec.LookPath("git"); err != nil {
		return bad("git", "source.git %s: git is not installed (Debian package git)", o.Git)
	}
	abs, err := filepath.Abs(o.Git)
	if err != nil {
		return bad("git", "source.git %s: %v", o.Git, err)
	}
	if o.Base == "" {
		return bad("base", "source.git %s needs source.base: the ref to build from", o.Git)
	}
	g := &gitcmd.Git{Dir: abs}
	if _, err := g.Output(ctx, "rev-parse", "--git-dir"); err != nil {
		return bad("git", "source.git %s is not a git repository: give the folder of a git clone of Linux", o.Git)
	}
	commit := func(ref string) bool {
		_, err := g.Output(ctx, "rev-parse", "--verify", "--quiet", "--end-of-options", ref+"^{commit}")
		return err == nil
	}
	if !commit(o.Base) {
		return bad("base", "source.base %q is not a commit of %s: give a tag, branch or commit the tree has (git -C %s log --oneline -1 %s says more)", o.Base, o.Git, o.Git, o.Base)
	}
	// What make needs of a Linux tree, at the commit lab builds.
	for _, f := range []string{"Makefile", "Kconfig"} {
		if !blob(ctx, g, o.Base+":"+f) {
			return bad("git", "source.git %s has no top-level %s at %s: not a Linux source tree", o.Git, f, o.Base)
		}
	}
	for _, ref := range refs {
		if ref != "" && !commit(ref) {
			return bad("", "%q is not a commit of %s (source.git): give a tag, branch or commit the tree has", ref, o.Git)
		}
	}
	return nil
}

// blob reports whether the object spec (commit:path) is a file.
func blob(ctx context.Context, g *gitcmd.Git, spec string) bool {
	t, err := g.Output(ctx, "cat-file", "-t", spec)
	return err == nil && t == "blob"
}

// pathErr is err without the path the message already names.
func pathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
