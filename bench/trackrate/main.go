// Command trackrate measures how many one-file commits an hour lab track
// measures on this machine under icount (1 vCPU, uprobe-nop and
// syscall-count for 1 s each): the target is at least 120.
//
// It writes -commits commits onto Debian's 6.12 tree (from lab's cache;
// each changes one log line of init/main.c, unique to this run, so every
// build is real) in a user's git tree new to lab (a new path: lab adds its
// work tree and build folder as for any tree it has not seen), and times
// the first lab track of it from the base, whose kernel lab has built
// before (the bench builds it first when the cache lacks it): what a user
// pays tracking a branch the first time. The tree's build folder starts as
// a copy of the Debian tree's (kbuild's seed), not cold. It prints the wall
// time, the commits an hour, and where the time went: builds (overlapping
// the boots) and boots. With -prebuild the commits are built first in lab's
// Debian tree (incrementally, into the content cache), so that the rate is
// of the boots and lab track's own work alone.
//
//	go run ./bench/trackrate [-commits 12] [-cache DIR] [-prebuild]
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"lab/internal/arch"
	"lab/internal/initramfs"
	"lab/internal/results"
	"lab/internal/source"
	"lab/internal/spec"
	"lab/internal/testbed"
	"lab/internal/track"
)

func main() {
	commits := flag.Int("commits", 12, "commits to measure after the warm-up")
	cache := flag.String("cache", testbed.DefaultCache(), "lab's cache")
	prebuild := flag.Bool("prebuild", false, "build the commits in lab's Debian tree first: the rate of the boots alone")
	flag.Parse()
	if err := bench(context.Background(), *commits, *cache, *prebuild); err != nil {
		fmt.Fprintln(os.Stderr, "trackrate:", err)
		os.Exit(1)
	}
}

func bench(ctx context.Context, n int, cache string, prebuild bool) error {
	root, err := initramfs.FindModuleRoot(".")
	if err != nil {
		return err
	}
	tree, err := source.Prepare(ctx, source.Origin{Tarball: spec.DefaultTarball, Package: spec.DefaultPackage}, cache, func(string, ...any) {})
	if err != nil {
		return err
	}
	base := tree.BaseHash
	gitDir := filepath.Join(tree.Dir, ".git")
	defer tree.Close()
	nonce := time.Now().UTC().Format("20060102T150405")
	chain, err := commitLogLines(gitDir, base, n, nonce)
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "trackrate-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	user, err := userTree(work, gitDir, chain[len(chain)-1])
	if err != nil {
		return err
	}
	defer forget(cache, user)
	lab, err := writeLab(work, user, base)
	if err != nil {
		return err
	}
	// The base's kernel is cached, as for a tree lab has built before, and
	// lab's last build in its Debian tree is a commit of its own beside
	// the chain (what seeds the user's tree's build folder); with
	// -prebuild the commits' kernels are cached too.
	own, err := commitLogLines(gitDir, base, 1, nonce+"-debian")
	if err != nil {
		return err
	}
	todo := []string{base, own[0]}
	if prebuild {
		todo = append(todo, chain...)
	}
	prebuilt, err := prebuildChain(ctx, tree, cache, lab, todo)
	if err != nil {
		return err
	}
	tree.Close()
	opt := track.Options{Lab: lab, From: base, To: chain[len(chain)-1], History: filepath.Join(work, "history.db"), CacheDir: cache,
		ResultsDir: filepath.Join(work, "results"), ModuleRoot: root, Accel: "tcg", Command: []string{"trackrate"}, Out: os.Stderr}
	start := time.Now()
	res, err := track.Run(ctx, opt)
	if err != nil {
		return err
	}
	took := time.Since(start)
	printRate(res, n, took, prebuild, prebuilt, len(chain))
	return nil
}

// forget removes what lab keeps of the bench's user tree: its work tree
// and build folder in the cache, so that the next bench's is new too.
func forget(cache, user string) {
	dir := source.GitTreeDir(cache, user)
	os.RemoveAll(filepath.Join(cache, "build", filepath.Base(dir)))
	os.RemoveAll(dir)
}

// userTree makes the user's tree in work: a path lab has not seen,
// borrowing the lab tree's objects (alternates), with main at head.
func userTree(work, gitDir, head string) (string, error) {
	user := filepath.Join(work, "linux")
	if err := os.MkdirAll(user, 0o755); err != nil {
		return "", err
	}
	if err := git(user, "", "init", "-q"); err != nil {
		return "", err
	}
	os.WriteFile(filepath.Join(user, ".git", "objects", "info", "alternates"), []byte(filepath.Join(gitDir, "objects")+"\n"), 0o644)
	return user, git(user, "", "update-ref", "refs/heads/main", head)
}

// writeLab writes the bench's lab: the user's tree at base, 1 vCPU icount.
func writeLab(work, user, base string) (*spec.Lab, error) {
	labFile := filepath.Join(work, "trackrate.yaml")
	// A lab names a series; lab track measures the branch and ignores it.
	os.WriteFile(labFile, []byte(fmt.Sprintf(`name: trackrate
series: uprobe-srcu
mode: revert
source:
  git: %s
  base: %s
matrix:
  arch: [x86_64]
  cpus: [1]
  benchmarks: [uprobe-nop, syscall-count]
  producers: [1]
  boots: 1
  duration: 1s
  warmup: 0s
  measure: icount
`, user, base)), 0o644)
	return spec.Load(labFile)
}

// prebuildChain builds commits in lab's Debian tree (cached ones cost
// nothing) and says how long that took.
func prebuildChain(ctx context.Context, tree *source.Tree, cache string, lab *spec.Lab, commits []string) (time.Duration, error) {
	start := time.Now()
	a, err := arch.Lookup("x86_64")
	if err != nil {
		return 0, err
	}
	k := &testbed.Kernels{Tree: tree, CacheDir: cache, Fragments: lab.Fragments("x86_64"), Logf: func(f string, args ...any) { fmt.Fprintf(os.Stderr, f+"\n", args...) }}
	for _, c := range commits {
		if _, err := k.Get(ctx, a, c, c[:12]); err != nil {
			return 0, err
		}
	}
	if err := tree.Checkout(ctx, tree.BaseHash); err != nil {
		return 0, err
	}
	prebuilt := time.Since(start)
	fmt.Printf("  before the track: %d commit(s) built or found in lab's Debian tree in %s\n", len(commits), prebuilt.Round(time.Second))
	return prebuilt, nil
}

// printRate prints the commits an hour of the timed track, and where its
// time went.
func printRate(res *track.Result, n int, took time.Duration, prebuild bool, prebuilt time.Duration, chainLen int) {
	measured, build, boot := 0, 0.0, 0.0
	for _, o := range res.Outcomes {
		if o.State == track.Measured {
			measured++
		}
	}
	seeded := ""
	for _, st := range res.Run.Bisect.Steps {
		build += st.BuildSeconds
		if st.Kernel != nil && st.Kernel.Info.Seeded != "" {
			seeded = st.Kernel.Info.Seeded
		}
	}
	for _, b := range res.Run.Boots {
		boot += bootSeconds(b)
	}
	fmt.Printf("trackrate: the first track of a new tree, %d one-file commits (init/main.c) from a cached base, x86_64 1 vCPU icount, uprobe-nop + syscall-count 1 s, %d boots at a time\n",
		n, res.Run.Bisect.Parallel)
	if seeded != "" {
		fmt.Printf("  its build folder started as a copy of %s\n", seeded)
	} else if !prebuild {
		fmt.Printf("  its build folder started cold (no seed)\n")
	}
	fmt.Printf("  %d commits in %s: %.0f commits an hour (target 120); %d measured\n", len(res.Outcomes), took.Round(time.Second),
		float64(len(res.Outcomes))/took.Hours(), measured)
	if prebuild {
		// The builds and the boots one after the other: the rate without
		// the overlap, a floor of what lab track does building itself.
		all := took + prebuilt*time.Duration(len(res.Outcomes))/time.Duration(chainLen)
		fmt.Printf("  with their builds, not overlapped: %.0f commits an hour\n", float64(len(res.Outcomes))/all.Hours())
	}
	fmt.Printf("  builds %.0f s (%.0f s a commit), boots %.0f s (%.0f s a commit), overlapping\n",
		build, build/float64(max(len(res.Outcomes), 1)), boot, boot/float64(max(len(res.Run.Boots), 1)))
}

// bootSeconds is a boot's time from QEMU's start to its end.
func bootSeconds(b results.Boot) float64 {
	if b.Outcome == nil {
		return 0
	}
	return b.Outcome.Wall.Seconds()
}

// commitLogLines writes n commits on base in gitDir (a scratch index: the
// work tree is not touched), commit k setting init's log line to one of
// this run's, and returns them oldest first.
func commitLogLines(gitDir, base string, n int, nonce string) ([]string, error) {
	index := filepath.Join(os.TempDir(), "trackrate-index-"+nonce)
	defer os.Remove(index)
	env := []string{"GIT_DIR=" + gitDir, "GIT_INDEX_FILE=" + index}
	out := func(stdin string, args ...string) (string, error) {
		cmd := exec.Command("git", append([]string{"-c", "user.name=lab bench", "-c", "user.email=lab@localhost"}, args...)...)
		cmd.Env = append(os.Environ(), env...)
		cmd.Stdin = strings.NewReader(stdin)
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("git %v: %w: %s", args, err, e.String())
		}
		return strings.TrimSpace(o.String()), nil
	}
	if _, err := out("", "read-tree", base); err != nil {
		return nil, err
	}
	orig, err := out("", "show", base+":init/main.c")
	if err != nil {
		return nil, err
	}
	const line = "Run %s as init process"
	if !strings.Contains(orig, line) {
		return nil, fmt.Errorf("init/main.c of %s has no %q: not the tree this bench expects", base, line)
	}
	head := base
	var chain []string
	for k := 1; k <= n; k++ {
		changed := strings.Replace(orig, line, fmt.Sprintf("Run %%s as init process (bench %s/%d)", nonce, k), 1) + "\n"
		blob, err := out(changed, "hash-object", "-w", "--stdin")
		if err != nil {
			return nil, err
		}
		if _, err := out("", "update-index", "--cacheinfo", "100644,"+blob+",init/main.c"); err != nil {
			return nil, err
		}
		tree, err := out("", "write-tree")
		if err != nil {
			return nil, err
		}
		if head, err = out("", "commit-tree", tree, "-p", head, "-m", fmt.Sprintf("init: log line %d", k)); err != nil {
			return nil, err
		}
		chain = append(chain, head)
	}
	return chain, nil
}

func git(dir, stdin string, args ...string) error {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(stdin)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git %v: %w: %s", args, err, out)
	}
	return nil
}
