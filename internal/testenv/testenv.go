// Package testenv says which tests may run: plain `go test ./...` is the
// fast suite, and the tests that build and boot real kernels, or need
// Chromium, run when LAB_E2E=1 is set, as ./scripts/test does.
package testenv

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"lab/internal/source"
)

// Var is the environment variable that turns the end-to-end tests on.
const Var = "LAB_E2E"

// Enabled reports whether the end-to-end tests run.
func Enabled() bool { return os.Getenv(Var) != "" }

// E2E skips t unless the end-to-end tests run.
func E2E(t testing.TB, what string) {
	t.Helper()
	if !Enabled() {
		t.Skipf("end-to-end (%s): set %s=1 to run it, as ./scripts/test does", what, Var)
	}
}

// Edit is one patch of a series written at test time: a file of the kernel
// tree and how to change it.
type Edit struct {
	Subject, File string
	Change        func(string) string
}

// Replace changes the first old into new; the test fails if old is not
// there (the tree is not what the test expects).
func Replace(old, new string) func(string) string {
	return func(s string) string { return strings.Replace(s, old, new, 1) }
}

// Checkout makes a lab checkout for a test in a temp folder: labs/,
// kernel-config/ (a copy of lab's own fragments) and patches/. It returns
// its root.
func Checkout(t testing.TB, moduleRoot string) string {
	t.Helper()
	root := t.TempDir()
	for _, d := range []string{"labs", "patches", "kernel-config"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	frags, _ := filepath.Glob(filepath.Join(moduleRoot, "kernel-config", "*.config"))
	for _, f := range frags {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(root, "kernel-config", filepath.Base(f)), data, 0o644)
	}
	return root
}

// Git is git run in dir as a test runs it: with lab's test identity and no
// signing, failing t on an error, and returning the trimmed output.
func Git(t testing.TB, dir string) func(args ...string) string {
	return func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=lab test", "-c", "user.email=lab@localhost", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v in %s: %v\n%s", args, dir, err, out)
		}
		return strings.TrimSpace(string(out))
	}
}

// WriteSeries writes the edits as a series of git format-patch files into
// root/patches/name, made from the files of tree's unmodified source (from
// git's objects: another test's run may hold the work tree at its own
// commit).
func WriteSeries(t testing.TB, tree *source.Tree, root, name string, edits []Edit) {
	t.Helper()
	scratch := t.TempDir()
	git := Git(t, scratch)
	git("init", "-q")
	for _, e := range edits {
		data, err := tree.BaseFile(t.Context(), e.File)
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Join(scratch, filepath.Dir(e.File)), 0o755)
		os.WriteFile(filepath.Join(scratch, e.File), data, 0o644)
	}
	git("add", ".")
	git("commit", "-q", "-m", "base")
	for _, e := range edits {
		p := filepath.Join(scratch, e.File)
		data, _ := os.ReadFile(p)
		changed := e.Change(string(data))
		if changed == string(data) {
			t.Fatalf("patch %q changes nothing in %s: the kernel source is not what the test expects", e.Subject, e.File)
		}
		os.WriteFile(p, []byte(changed), 0o644)
		git("commit", "-q", "-a", "-m", e.Subject)
	}
	dir := filepath.Join(root, "patches", name)
	os.MkdirAll(dir, 0o755)
	git("format-patch", "-q", "-o", dir, fmt.Sprintf("HEAD~%d", len(edits)))
}

// WriteLab writes root/labs/name.yaml.
func WriteLab(t testing.TB, root, name, text string) string {
	t.Helper()
	p := filepath.Join(root, "labs", name+".yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// DebianKernelVersion is the upstream kernel version of the installed Debian
// package pkg ("6.12.118" for linux-source-6.12 6.12.118-1~deb12u1): what a
// tree extracted from its tarball must call itself. Tests read it rather than
// pin a point release, which Debian moves under every machine.
func DebianKernelVersion(t testing.TB, pkg string) string {
	t.Helper()
	out, err := exec.Command("dpkg-query", "-W", "-f=${Version}", pkg).Output()
	if err != nil {
		t.Fatalf("dpkg-query %s: %v (is it installed? ./scripts/install-deps)", pkg, err)
	}
	return UpstreamVersion(string(out))
}

// UpstreamVersion is a Debian package version without its epoch and Debian
// revision: "1:6.12.118-1~deb12u1" is "6.12.118".
func UpstreamVersion(debian string) string {
	v := strings.TrimSpace(debian)
	if i := strings.Index(v, ":"); i >= 0 {
		v = v[i+1:]
	}
	if i := strings.LastIndex(v, "-"); i >= 0 {
		v = v[:i]
	}
	return v
}

// CommitBranch writes the edits as commits on base in the git repository
// gitDir, with a scratch index (no work tree is touched), and returns
// them, oldest first.
func CommitBranch(t testing.TB, gitDir, base string, edits []Edit) []string {
	t.Helper()
	index := filepath.Join(t.TempDir(), "index")
	git := func(stdin string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=lab test", "-c", "user.email=lab@localhost"}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_DIR="+gitDir, "GIT_INDEX_FILE="+index)
		cmd.Stdin = strings.NewReader(stdin)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, errOut.String())
		}
		return strings.TrimSpace(out.String())
	}
	head := base
	git("", "read-tree", head)
	var commits []string
	for _, e := range edits {
		old := git("", "show", head+":"+e.File) + "\n"
		changed := e.Change(old)
		if changed == old {
			t.Fatalf("%q changes nothing in %s: the kernel source is not what the test expects", e.Subject, e.File)
		}
		blob := git(changed, "hash-object", "-w", "--stdin")
		git("", "update-index", "--cacheinfo", "100644,"+blob+","+e.File)
		tree := git("", "write-tree")
		head = git("", "commit-tree", tree, "-p", head, "-m", e.Subject)
		commits = append(commits, head)
	}
	return commits
}

// UserTree is a git repository that stands for a user's kernel tree, at a
// fixed place under the lab cache (cache/test-trees/name): its objects are
// those of the git directory objects (alternates), nothing is checked out,
// and branch points at tip with HEAD on it. It is kept between runs, as
// the cache's kernels are: lab adds its work tree of a user's tree under
// the cache, a checkout of the whole kernel (about 25 s here), so a tree
// at a new temp path each run would pay that every run.
func UserTree(t testing.TB, cache, name, objects, branch, tip string) string {
	t.Helper()
	dir := filepath.Join(cache, "test-trees", name)
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v in %s: %v\n%s", args, dir, err, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".git")); err != nil {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		git("init", "-q")
	}
	if err := os.WriteFile(filepath.Join(dir, ".git", "objects", "info", "alternates"), []byte(objects+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("update-ref", "refs/heads/"+branch, tip)
	git("symbolic-ref", "HEAD", "refs/heads/"+branch)
	return dir
}

// labBinary is lab's binary built for this test process, in a folder
// Main removes.
var labBinary struct {
	sync.Mutex
	path string
}

// LabBinary is lab's binary, built once per test process (go build
// lab/cmd/lab), for tests that run lab as a user does: as a process, to be
// signalled. A package that calls it runs its tests through Main, which
// removes the binary after them.
func LabBinary() (string, error) {
	labBinary.Lock()
	defer labBinary.Unlock()
	if labBinary.path != "" {
		return labBinary.path, nil
	}
	dir, err := os.MkdirTemp("", "lab-bin-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "lab")
	if out, err := exec.Command("go", "build", "-o", bin, "lab/cmd/lab").CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	labBinary.path = bin
	return bin, nil
}

// Main runs m's tests, then removes the lab binary they built, if any: a
// package whose tests call LabBinary has
// func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }.
func Main(m *testing.M) int {
	code := m.Run()
	labBinary.Lock()
	defer labBinary.Unlock()
	if labBinary.path != "" {
		os.RemoveAll(filepath.Dir(labBinary.path))
		labBinary.path = ""
	}
	return code
}

// Edits of Debian's 6.12 that end-to-end tests of several packages share,
// so that the kernels they make are one cache entry whichever test builds
// it first (a tree's kernel is keyed by its content).
var (
	// DocNote changes documentation only: the image stays.
	DocNote = Edit{Subject: "docs: uprobetracer: a note", File: "Documentation/trace/uprobetracer.rst",
		Change: func(s string) string { return s + "\n.. lab bisect test: documentation only\n" }}
	// InitLogLine moves a log string: another image, and no code a
	// benchmark runs.
	InitLogLine = Edit{Subject: "init: say \"the init process\"", File: "init/main.c",
		Change: Replace(`pr_info("Run %s as init process\n", init_filename);`, `pr_info("Run %s as the init process\n", init_filename);`)}
	// SpinOnEveryHit lengthens the uprobe hit path by 32 turns of a loop.
	SpinOnEveryHit = Edit{Subject: "uprobes: spin on every hit", File: "kernel/events/uprobes.c",
		Change: Replace("\tint is_swbp;\n\n\tbp_vaddr = uprobe_get_swbp_addr(regs);\n",
			"\tint is_swbp;\n\tvolatile int lab_spin;\n\n\tbp_vaddr = uprobe_get_swbp_addr(regs);\n\tfor (lab_spin = 0; lab_spin < 32; lab_spin++)\n\t\t;\n")}
)
