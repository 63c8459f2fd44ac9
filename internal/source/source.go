// Package source prepares a kernel source tree lab can build variants in: a
// git work tree owned by lab, made from Debian's linux-source tarball or from
// the user's own git tree, with one commit per variant.
//
// Variants are commits of the same work tree, so switching variant rewrites
// only the files the series touches and kbuild rebuilds only what depends on
// them: the second variant is an incremental build.
package source

import (
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
	"strconv"
	"strings"
	"syscall"
	"time"

	"lab/internal/digest"
	"lab/internal/gitcmd"
	"lab/internal/proc"
	"lab/internal/series"
	"lab/internal/variant"
)

// Origin is where a kernel source comes from: a tarball (Debian's
// linux-source) or a local git tree at a base ref. A lab file's source
// converts to it (spec.Source has the same fields).
type Origin struct {
	Tarball string // path of a linux source tarball
	Package string // the Debian package that installs Tarball, for hints
	Git     string // path of a local git tree
	Base    string // the ref in Git to build from
}

// Tree is a prepared source work tree.
type Tree struct {
	ID       string // stable identity, used in cache keys and paths
	Dir      string // the work tree
	Desc     string // human description of where it came from
	Version  string // kernel version (make kernelversion)
	BaseHash string // commit of the unmodified source
	git      *gitcmd.Git
	// lock is the work tree's lock while this run holds it: from its
	// first checkout (or extraction) until Close. A run whose kernels are
	// all cached reads only git objects and never takes it, so it does not
	// wait behind a run that builds.
	lock *os.File
}

// Info is recorded next to a tarball tree once it is complete.
type info struct {
	Tarball string `json:"tarball"`
	SHA256  string `json:"sha256"`
	Package string `json:"package,omitempty"`
	Version string `json:"package_version,omitempty"`
	Commit  string `json:"commit"`
}

// Logf reports progress.
type Logf func(format string, args ...any)

// Prepare returns the work tree for src, extracting or adding a worktree the
// first time. The work tree is locked from its first checkout until Close,
// so that two lab runs sharing a cache cannot switch variants under each
// other; what Prepare itself reads comes from git's objects, without the
// lock, once the tree is complete. extracted, when given, is
// told the tree's folder and id as soon as a tarball is extracted, before
// git stores it (half a minute and more of one core), so that work that
// reads the files alone can run beside the import.
func Prepare(ctx context.Context, src Origin, cacheDir string, logf Logf, extracted ...func(dir, id string)) (*Tree, error) {
	if err := Check(ctx, src); err != nil {
		return nil, err
	}
	if src.Git != "" {
		return prepareGit(ctx, src, cacheDir, logf)
	}
	return prepareTarball(ctx, src, cacheDir, logf, extracted)
}

func prepareTarball(ctx context.Context, src Origin, cacheDir string, logf Logf, extracted []func(dir, id string)) (*Tree, error) {
	sum, err := digest.File(src.Tarball)
	if err != nil {
		return nil, fmt.Errorf("read kernel source %s: %w", src.Tarball, err)
	}
	id := "tarball-" + sum[:12]
	dir := filepath.Join(cacheDir, "src", id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("make the source tree's folder in the cache: %w", err)
	}
	t := &Tree{ID: id, Dir: dir, git: &gitcmd.Git{Dir: dir}}
	infoPath := filepath.Join(cacheDir, "src", id+".json")
	var inf info
	complete := func() bool {
		data, err := os.ReadFile(infoPath)
		return err == nil && json.Unmarshal(data, &inf) == nil && inf.Commit != ""
	}
	// A tree another run is extracting is complete once its record is
	// written: wait for that, not for the builds the extracting run goes
	// on to with the lock.
	if !complete() {
		if _, err := t.HoldUnless(ctx, complete); err != nil {
			return nil, err
		}
	}
	if complete() {
		t.BaseHash = inf.Commit
	} else {
		logf("extract %s into %s", src.Tarball, dir)
		if err := t.extract(ctx, src.Tarball, extracted); err != nil {
			t.Close()
			return nil, err
		}
		inf = info{Tarball: src.Tarball, SHA256: sum, Package: src.Package, Commit: t.BaseHash}
		if src.Package != "" {
			if out, err := exec.CommandContext(ctx, "dpkg-query", "-W", "-f=${Version}", src.Package).Output(); err == nil {
				inf.Version = string(out)
			}
		}
		data, _ := json.MarshalIndent(inf, "", "  ")
		if err := os.WriteFile(infoPath, data, 0o644); err != nil {
			t.Close()
			return nil, fmt.Errorf("record the extracted source: %w", err)
		}
	}
	t.Desc = fmt.Sprintf("%s (sha256 %s)", src.Tarball, sum)
	if inf.Package != "" {
		t.Desc = fmt.Sprintf("Debian %s %s, %s", inf.Package, inf.Version, t.Desc)
	}
	if err := t.finish(ctx); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

// extract unpacks the tarball and commits it, so that variants are commits.
func (t *Tree) extract(ctx context.Context, tarball string, extracted []func(dir, id string)) error {
	ents, _ := os.ReadDir(t.Dir)
	for _, e := range ents {
		if e.Name() != ".lab-lock" {
			if err := os.RemoveAll(filepath.Join(t.Dir, e.Name())); err != nil {
				return fmt.Errorf("clear %s before extracting: %w", t.Dir, err)
			}
		}
	}
	for _, args := range [][]string{
		{"init", "-q"},
		// The lock file must not be part of any commit.
		{"config", "core.excludesFile", "/dev/null"},
		// zlib's fastest level for what a series adds: at the default
		// level (6) compressing took 2.5 times as long (3.3 against 1.4 s
		// for 147 MB of drivers/net here). The import's own pack is not
		// compressed at all (fastImport).
		{"config", "core.looseCompression", "1"},
	} {
		if _, err := t.git.Run(ctx, args...); err != nil {
			return fmt.Errorf("import %s: %w", tarball, err)
		}
	}
	if err := untar(ctx, tarball, t.Dir); err != nil {
		return err
	}
	for _, f := range extracted {
		f(t.Dir, t.ID)
	}
	entries, err := storeObjects(ctx, t.git, t.Dir)
	if err != nil {
		return fmt.Errorf("import %s: %w", tarball, err)
	}
	// The commit and the index git add -f -A and git commit made (-f:
	// Debian's .gitignore ignores every top-level path), without hashing
	// the tree a second time.
	if err := commitEntries(ctx, t.git, "import "+filepath.Base(tarball), entries); err != nil {
		return fmt.Errorf("import %s: %w", tarball, err)
	}
	if err := writeIndex(filepath.Join(t.Dir, ".git", "index"), entries); err != nil {
		return fmt.Errorf("import %s: %w", tarball, err)
	}
	if err := os.WriteFile(filepath.Join(t.Dir, ".git", "info", "exclude"), []byte("/.lab-lock\n"), 0o644); err != nil {
		return fmt.Errorf("import %s: %w", tarball, err)
	}
	h, err := t.git.Output(ctx, "rev-parse", "HEAD")
	t.BaseHash = h
	return err
}

// untar extracts the tarball into dir, on every core for an xz one: it
// is several blocks (Debian's 6.12 has 62), and xz decompresses blocks in
// parallel only when told to (8.2 s instead of 12.6 here for 1.4 GB).
// git stores the files after tar, not while it runs: tar already keeps
// both cores busy, and git update-index fed member by member took twice as
// long as one git add of the whole tree (78 s against 34 s here, its index
// insertions unsorted and its writes racing tar's).
func untar(ctx context.Context, tarball, dir string) error {
	args := []string{"-xf", tarball, "--strip-components=1", "-C", dir}
	if f, err := os.Open(tarball); err == nil {
		head := make([]byte, 8)
		n, _ := io.ReadFull(f, head)
		f.Close()
		if tarKind(head[:n]) == "xz" {
			args = append([]string{"--use-compress-program=xz -T0"}, args...)
		}
	}
	var stderr bytes.Buffer
	tar := proc.Command(ctx, "tar", args...)
	tar.Stderr = &stderr
	if err := tar.Run(); err != nil {
		return fmt.Errorf("extract %s: %w: %s", tarball, err, bytes.TrimSpace(stderr.Bytes()))
	}
	return nil
}

func prepareGit(ctx context.Context, src Origin, cacheDir string, logf Logf) (*Tree, error) {
	repo, err := filepath.Abs(src.Git)
	if err != nil {
		return nil, fmt.Errorf("source.git %s: %w", src.Git, err)
	}
	user := &gitcmd.Git{Dir: repo}
	base, err := user.Output(ctx, "rev-parse", "--verify", src.Base+"^{commit}")
	if err != nil {
		return nil, fmt.Errorf("source.base %q in %s: %w", src.Base, repo, err)
	}
	id, dir := gitTree(cacheDir, repo)
	if _, err := os.Stat(filepath.Join(dir, ".git")); err != nil {
		logf("add a lab worktree of %s at %s", repo, dir)
		if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
			return nil, fmt.Errorf("make the source trees' folder in the cache: %w", err)
		}
		user.Run(ctx, "worktree", "prune")
		if _, err := user.Run(ctx, "worktree", "add", "--detach", dir, base); err != nil {
			return nil, fmt.Errorf("add lab's worktree of %s at %s: %w", repo, dir, err)
		}
	}
	t := &Tree{ID: id, Dir: dir, BaseHash: base, git: &gitcmd.Git{Dir: dir}}
	t.Desc = fmt.Sprintf("git %s at %s (%s)", repo, src.Base, base)
	if err := t.finish(ctx); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

// gitTree is the id and folder of lab's work tree of the user's git tree
// at repo (an absolute path).
func gitTree(cacheDir, repo string) (id, dir string) {
	sum := sha256.Sum256([]byte(repo))
	id = "git-" + hex.EncodeToString(sum[:6])
	return id, filepath.Join(cacheDir, "src", id)
}

// GitTreeDir is the folder of lab's work tree of the git tree at repo.
func GitTreeDir(cacheDir, repo string) string {
	abs, _ := filepath.Abs(repo)
	_, dir := gitTree(cacheDir, abs)
	return dir
}

// finish reads the kernel's version from the base commit's Makefile, as
// make kernelversion prints it, from git's objects: the work tree may be
// another run's.
func (t *Tree) finish(ctx context.Context) error {
	makefile, err := t.git.Output(ctx, "show", t.BaseHash+":Makefile")
	if err != nil {
		return fmt.Errorf("the Makefile of %s in %s (is it a Linux source tree?): %w", gitShort(t.BaseHash), t.Dir, err)
	}
	v, err := KernelVersion(makefile)
	if err != nil {
		return fmt.Errorf("the Makefile of %s in %s (is it a Linux source tree?): %w", gitShort(t.BaseHash), t.Dir, err)
	}
	t.Version = v
	return nil
}

func gitShort(commit string) string { return commit[:min(12, len(commit))] }

// KernelVersion is the version a top-level Linux Makefile gives, as make
// kernelversion prints it: VERSION[.PATCHLEVEL[.SUBLEVEL]]EXTRAVERSION.
func KernelVersion(makefile string) (string, error) {
	vars := map[string]string{}
	for _, l := range strings.Split(makefile, "\n") {
		name, value, ok := strings.Cut(l, "=")
		name = strings.TrimSpace(name)
		switch name {
		case "VERSION", "PATCHLEVEL", "SUBLEVEL", "EXTRAVERSION":
			if _, seen := vars[name]; ok && !seen {
				vars[name] = strings.TrimSpace(value)
			}
		}
	}
	v := vars["VERSION"]
	if v == "" {
		return "", errors.New("no VERSION = line")
	}
	if p := vars["PATCHLEVEL"]; p != "" {
		v += "." + p
		if s := vars["SUBLEVEL"]; s != "" {
			v += "." + s
		}
	}
	return v + vars["EXTRAVERSION"], nil
}

// hold takes the work tree's lock unless this run has it: another run
// that switches variants in it (or extracts it) is waited for.
func (t *Tree) hold(ctx context.Context) error {
	_, err := t.HoldUnless(ctx, nil)
	return err
}

// lockPoll is how often a run waiting for the work tree tries its lock
// again and asks whether it still needs it.
const lockPoll = 500 * time.Millisecond

// HoldUnless takes the work tree's lock, as a checkout does, unless ready
// (nil: never) says first that this run no longer needs it: the tree
// another run was extracting is complete, or the kernel this run waited to
// build is in the cache. A run that extracts or builds keeps the lock
// through its builds, which waiters needing neither waited out before
// (the suite's x86_64 runs waited 5 minutes for an arm64 build with their
// kernels cached). held says whether this run has the lock now.
func (t *Tree) HoldUnless(ctx context.Context, ready func() bool) (held bool, err error) {
	if t.lock != nil {
		return true, nil
	}
	f, err := os.OpenFile(filepath.Join(t.Dir, ".lab-lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return false, fmt.Errorf("lock source tree %s: %w", t.Dir, err)
	}
	held, err = waitFlock(ctx, f, ready, func() {
		// Another lab run is switching variants in this tree.
		fmt.Fprintf(os.Stderr, "lab: waiting for another lab run using %s\n", t.Dir)
	})
	if err != nil || !held {
		f.Close()
		if err != nil {
			return false, fmt.Errorf("lock source tree %s: %w", t.Dir, err)
		}
		return false, nil
	}
	t.lock = f
	return true, nil
}

// waitFlock takes f's exclusive lock, trying again every lockPoll until
// ctx ends or ready (nil: never) says the lock is no longer needed (held
// false). waiting (nil: nothing) is called once, when the first try finds
// the lock held by another.
func waitFlock(ctx context.Context, f *os.File, ready func() bool, waiting func()) (held bool, err error) {
	for waited := false; ; waited = true {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case !errors.Is(err, syscall.EWOULDBLOCK):
			return false, err
		case ready != nil && ready():
			return false, nil
		case !waited && waiting != nil:
			waiting()
		}
		select {
		case <-ctx.Done():
			return false, context.Cause(ctx)
		case <-time.After(lockPoll):
		}
	}
}

// lockScratch takes the lock of the tree's scratch work trees (see
// commitOffTree), a file beside the work tree. Not the work tree's own
// lock: a run keeps that through its builds, a cold one minutes long, and
// a scratch tree never touches the work tree. Under that lock the suite's
// x86_64 runs whose kernels were cached waited 15 minutes at "patch:
// revert series", behind the x86_64 and the arm64 cold builds, for a
// commit that takes a second to make.
func (t *Tree) lockScratch(ctx context.Context) (unlock func(), err error) {
	f, err := os.OpenFile(t.Dir+".scratch-lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err == nil {
		_, err = waitFlock(ctx, f, nil, nil)
		if err != nil {
			f.Close()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("lock the scratch work trees of %s: %w", t.Dir, err)
	}
	return func() { f.Close() }, nil
}

// BaseFile is a file of the unmodified source, from git's objects: the
// work tree may be at another run's commit.
func (t *Tree) BaseFile(ctx context.Context, path string) ([]byte, error) {
	out, err := t.git.Command(ctx, "show", t.BaseHash+":"+filepath.ToSlash(path)).Output()
	if err != nil {
		return nil, fmt.Errorf("%s at %s in %s: %w", path, gitShort(t.BaseHash), t.Dir, err)
	}
	return out, nil
}

// Held says whether this run holds the work tree: it checked a commit out
// (or extracted the tree) and has not closed it.
func (t *Tree) Held() bool { return t.lock != nil }

// Close releases the tree's lock, if this run took it.
func (t *Tree) Close() error {
	if t.lock == nil {
		return nil
	}
	err := t.lock.Close()
	t.lock = nil
	return err
}

// Checkout switches the work tree to commit, touching only files that
// differ. The work tree is this run's from here until Close.
func (t *Tree) Checkout(ctx context.Context, commit string) error {
	if err := t.hold(ctx); err != nil {
		return err
	}
	if _, err := t.git.Run(ctx, "checkout", "-q", "-f", "--detach", commit); err != nil {
		return fmt.Errorf("checkout %s in %s: %w", commit, t.Dir, err)
	}
	return nil
}

// Variants returns the commits of the baseline and the patched variant of
// the series in mode, creating them on first use (off the work tree: see
// commitOffTree). They are kept under refs/lab/ so that later runs reuse
// them.
func (t *Tree) Variants(ctx context.Context, s *series.Series, mode string) (variant.Pair[string], error) {
	ref := fmt.Sprintf("refs/lab/%s-%s-%s", t.BaseHash[:12], mode, s.Hash()[:16])
	other, err := t.commitOnce(ctx, ref, t.BaseHash, s, func(g *gitcmd.Git) error {
		if mode == series.ModeRevert {
			return s.Revert(ctx, g)
		}
		return s.Apply(ctx, g)
	})
	if err != nil {
		return variant.Pair[string]{}, err
	}
	if mode == series.ModeRevert {
		return variant.Pair[string]{Baseline: other, Patched: t.BaseHash}, nil
	}
	return variant.Pair[string]{Baseline: t.BaseHash, Patched: other}, nil
}

// commitOnce returns the commit ref points at, making it on base with
// commitOffTree the first time. A run that waited for the scratch lock
// looks again: another run may have made the same commit meanwhile.
func (t *Tree) commitOnce(ctx context.Context, ref, base string, s *series.Series, commit func(*gitcmd.Git) error) (string, error) {
	lookup := func() string {
		c, err := t.git.Output(ctx, "rev-parse", "--verify", "-q", ref)
		if err != nil {
			return ""
		}
		return c
	}
	if c := lookup(); c != "" {
		return c, nil
	}
	unlock, err := t.lockScratch(ctx)
	if err != nil {
		return "", err
	}
	defer unlock()
	if c := lookup(); c != "" {
		return c, nil
	}
	c, err := t.commitOffTree(ctx, base, s, commit)
	if err != nil {
		return "", err
	}
	if _, err := t.git.Run(ctx, "update-ref", ref, c); err != nil {
		return "", err
	}
	return c, nil
}

// scratchSuffix names, beside the work tree, the scratch work trees
// commitOffTree makes.
const scratchSuffix = ".commit-"

// commitOffTree runs commit (git am, or a revert) in a scratch work tree of
// this repository checked out at base, and returns the commit it leaves
// there. The scratch tree holds only the files the series names (all of
// them when its paths cannot all be read), so it costs well under a second
// on a kernel tree. The work tree itself is not touched: build folders'
// objects were compiled from its files, and make judges them by mtime, so
// writing a series' files there and back (to try whether it goes on, or to
// make a variant's commit) made the next build recompile everything that
// includes them, content unchanged: 67 files, a minute on 2 cores, for the
// objpool series' include/linux/kprobes.h.
func (t *Tree) commitOffTree(ctx context.Context, base string, s *series.Series, commit func(*gitcmd.Git) error) (string, error) {
	// Scratch trees a killed run left: the caller holds the scratch lock
	// (commitOnce), so no other run uses them.
	stale, _ := filepath.Glob(t.Dir + scratchSuffix + "*")
	for _, d := range stale {
		t.removeScratch(context.WithoutCancel(ctx), d)
	}
	dir, err := os.MkdirTemp(filepath.Dir(t.Dir), filepath.Base(t.Dir)+scratchSuffix)
	if err != nil {
		return "", err
	}
	defer t.removeScratch(context.WithoutCancel(ctx), dir)
	if _, err := t.git.Run(ctx, "worktree", "add", "-q", "--no-checkout", "--detach", dir, base); err != nil {
		return "", fmt.Errorf("scratch work tree for series %s: %w", s.Name, err)
	}
	g := &gitcmd.Git{Dir: dir}
	if err := checkoutOnly(ctx, g, base, s); err != nil {
		return "", fmt.Errorf("scratch work tree for series %s: %w", s.Name, err)
	}
	if err := commit(g); err != nil {
		return "", err
	}
	return g.Output(ctx, "rev-parse", "HEAD")
}

// removeScratch removes a scratch work tree and git's record of it. Not
// git worktree prune: in a user's own repository that would also drop
// records of the user's work trees.
func (t *Tree) removeScratch(ctx context.Context, dir string) {
	t.git.Run(ctx, "worktree", "remove", "--force", dir)
	os.RemoveAll(dir)
}

// checkoutOnly fills the scratch work tree of g, whose HEAD is base, with
// the files of base that series s names: its index is all of base, so git
// am and git apply --index see the rest as unchanged, merely absent.
func checkoutOnly(ctx context.Context, g *gitcmd.Git, base string, s *series.Series) error {
	paths, complete, err := s.Paths()
	if err != nil {
		return err
	}
	if !complete {
		_, err := g.Run(ctx, "checkout", "-q", "--detach", base)
		return err
	}
	if _, err := g.Run(ctx, "read-tree", base); err != nil {
		return err
	}
	if len(paths) == 0 {
		return nil
	}
	// Only paths base has: a patch creates the others.
	out, err := g.Output(ctx, append([]string{"--literal-pathspecs", "ls-tree", "-r", "-z", "--name-only", base, "--"}, paths...)...)
	if err != nil || out == "" {
		return err
	}
	have := strings.Split(strings.TrimRight(out, "\x00"), "\x00")
	_, err = g.Run(ctx, append([]string{"--literal-pathspecs", "checkout", "--"}, have...)...)
	return err
}

// Chain lists the first-parent commits after from up to and including to,
// oldest first: the steps of a git range, or of a series lab committed.
func (t *Tree) Chain(ctx context.Context, from, to string) ([]string, error) {
	out, err := t.git.Output(ctx, "rev-list", "--first-parent", "--reverse", from+".."+to)
	if err != nil {
		return nil, err
	}
	if out == "" {
		return nil, fmt.Errorf("no commits between %s and %s (is %s an ancestor of %s?)", from, to, from, to)
	}
	return strings.Fields(out), nil
}

// Place is commit's place along its branch: how many commits its
// first-parent line holds, itself included (git rev-list --count
// --first-parent), the order the history keeps a branch's commits in.
func (t *Tree) Place(ctx context.Context, commit string) (int, error) {
	out, err := t.git.Output(ctx, "rev-list", "--count", "--first-parent", commit)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		return 0, fmt.Errorf("the place of %s along its branch: %q", commit, out)
	}
	return n, nil
}

// Resolve turns a ref (tag, branch, sha) into a commit of the tree.
func (t *Tree) Resolve(ctx context.Context, ref string) (string, error) {
	c, err := t.git.Output(ctx, "rev-parse", "--verify", ref+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("%s in %s: %w", ref, t.Dir, err)
	}
	return c, nil
}

// Changed lists the files that differ between two commits. A renamed file
// is both of its paths: git's rename detection would name only the new one,
// and hide that the old path is gone (a Kconfig moved under Documentation/
// is a change to the build). Paths are NUL-separated, as a path may hold a
// space.
func (t *Tree) Changed(ctx context.Context, from, to string) ([]string, error) {
	out, err := t.git.Run(ctx, "diff", "--no-renames", "--name-only", "-z", from, to)
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, p := range strings.Split(out, "\x00") {
		if p != "" {
			paths = append(paths, p)
		}
	}
	return paths, nil
}

// AtTag reports whether commit is where an annotated tag points (git
// describe --exact-match): there the kernel's release string has no "+"
// (scripts/setlocalversion), one commit later it has.
func (t *Tree) AtTag(ctx context.Context, commit string) bool {
	_, err := t.git.Run(ctx, "describe", "--exact-match", commit)
	return err == nil
}

// Subject is a commit's subject line.
func (t *Tree) Subject(ctx context.Context, commit string) (string, error) {
	return t.git.Output(ctx, "log", "-1", "--format=%s", commit)
}

// TreeHash is the git tree hash of commit: the content of the source, the
// same for the same files whatever commit, lab or series led to them.
func (t *Tree) TreeHash(ctx context.Context, commit string) (string, error) {
	return t.git.Output(ctx, "rev-parse", "--verify", commit+"^{tree}")
}

// PathsID identifies the content of some paths of commit (files or
// folders) by their git object ids: the same for the same files whatever
// commit holds them. A path the commit lacks counts as absent.
func (t *Tree) PathsID(ctx context.Context, commit string, paths []string) (string, error) {
	out, err := t.git.Run(ctx, append([]string{"ls-tree", "--full-tree", commit, "--"}, paths...)...)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(out))
	return hex.EncodeToString(sum[:]), nil
}

// KconfigID identifies the Kconfig files of the checked-out commit by their
// git blob ids: a change to any of them can change the merged .config.
func (t *Tree) KconfigID(ctx context.Context) (string, error) {
	out, err := t.git.Run(ctx, "ls-tree", "-r", "HEAD")
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "Kconfig") {
			fmt.Fprintln(h, l)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Resolution is where a series goes on a tree: the two variants' commits,
// the mode they were made in, and why that mode.
type Resolution struct {
	Commits variant.Pair[string]
	Mode    string // series.ModeApply or series.ModeRevert
	Why     string // "revert: every patch applies in reverse: ..."
}

// ModeAuto asks ResolveSeries to find the mode (spec.ModeAuto).
const ModeAuto = "auto"

// summary is one line of why a series did not go on: the patch and git's
// first "error:" line.
func summary(err error) string {
	var ae *series.ApplyError
	if errors.As(err, &ae) && len(ae.Details) > 0 {
		return fmt.Sprintf("%s does not: %s", filepath.Base(ae.Patch), strings.TrimPrefix(ae.Details[0], "error: "))
	}
	first, _, _ := strings.Cut(err.Error(), "\n")
	return first
}

// NeitherWayError is a series that applies neither forward nor in reverse
// on the source (mode auto). It unwraps to the forward attempt's error, a
// *series.ApplyError naming the patch, the file and the hunk.
type NeitherWayError struct {
	Series           string
	Forward, Reverse error
}

func (e *NeitherWayError) Error() string {
	return fmt.Sprintf("series %s applies neither forward nor in reverse on the source:\n%s\nin reverse it fails too: %s",
		e.Series, e.Forward, summary(e.Reverse))
}

func (e *NeitherWayError) Unwrap() error { return e.Forward }
