package bisect

// End-to-end: a series written at test time onto Debian's 6.12 tree, built
// step by step and booted under icount, bisected for real.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"lab/internal/arch"
	"lab/internal/gitcmd"
	"lab/internal/results"
	"lab/internal/series"
	"lab/internal/source"
	"lab/internal/spec"
	"lab/internal/testbed"
	"lab/internal/testenv"
)

// testSeries: a doc-only patch, a harmless string change, a patch that
// breaks the build and the next that mends it, one that lengthens the uprobe
// hit path (the culprit: step 5), and a harmless last one.
var testSeries = []testenv.Edit{
	testenv.DocNote,
	testenv.InitLogLine,
	{Subject: "uprobes: a declaration that does not compile", File: "kernel/events/uprobes.c", Change: func(s string) string { return s + "\nint lab_bisect_broken = ;\n" }},
	{Subject: "uprobes: mend the declaration", File: "kernel/events/uprobes.c", Change: testenv.Replace("\nint lab_bisect_broken = ;\n", "")},
	testenv.SpinOnEveryHit,
	{Subject: "init: say it once more", File: "init/main.c", Change: testenv.Replace(`pr_info("Run %s as the init process\n", init_filename);`, `pr_info("Run %s as the init process.\n", init_filename);`)},
}

// TestBisectFindsThePatch bisects the test series under icount on x86_64:
// lab must name the patch that lengthens the uprobe hit path, skip the step
// that does not build (naming the compiler's file and the patch), and build
// the documentation-only step into the same image as its parent.
func TestBisectFindsThePatch(t *testing.T) {
	testenv.E2E(t, "builds and boots a series of real kernels")
	ctx := context.Background()
	cache := testbed.DefaultCache()
	root := testenv.Checkout(t, "../..")
	tree, err := source.Prepare(ctx, source.Origin{Tarball: spec.DefaultTarball, Package: spec.DefaultPackage}, cache, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	testenv.WriteSeries(t, tree, root, "bisect-e2e", testSeries)
	tree.Close()
	labFile := filepath.Join(root, "labs", "bisect-e2e.yaml")
	os.WriteFile(labFile, []byte(`name: bisect-e2e
series: bisect-e2e
mode: apply
matrix:
  arch: [x86_64]
  cpus: [1]
  benchmarks: [uprobe-nop]
  producers: [1]
  boots: 1
  duration: 250ms
  warmup: 0s
  controls: false # the bisect follows uprobe-nop; a control is a guest second a boot
  measure: icount
`), 0o644)
	lab, err := spec.Load(labFile)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	moduleRoot, _ := filepath.Abs("../..")
	res, dir, err := Run(ctx, Options{Lab: lab, CacheDir: cache, ResultsDir: t.TempDir(), ModuleRoot: moduleRoot,
		Command: []string{"lab", "bisect", labFile}, Out: &out, Figure: &results.Figure{Benchmark: "uprobe-nop", Producers: 1}})
	t.Log(out.String())
	if err != nil {
		t.Fatal(err)
	}
	bi := res.Bisect
	t.Logf("%s: %s, culprit step %d; notes %q", dir, bi.Outcome, bi.Culprit, bi.Notes)
	if bi.Outcome != Found || bi.Culprit != 5 {
		t.Fatalf("outcome %s, culprit step %d: want the culprit at step 5 (%s)", bi.Outcome, bi.Culprit, testSeries[4].Subject)
	}
	if !strings.Contains(bi.Steps[5].Name, "spin-on-every-hit") || bi.Change.Pct > -5 {
		t.Errorf("culprit %s, change %+.2f %%: want 0005-…spin-on-every-hit, slower by several percent", bi.Steps[5].Name, bi.Change.Pct)
	}
	broken := bi.Steps[3]
	if broken.Verdict != Skipped || !strings.Contains(broken.Skip, "kernel/events/uprobes.c") || !strings.Contains(broken.Skip, "0003-") {
		t.Errorf("step 3: %s %q: want skipped, naming uprobes.c and the patch", broken.Verdict, broken.Skip)
	}
	// The documentation-only step builds the image of its parent.
	if bi.Steps[0].Kernel == nil {
		t.Fatal("step 0 has no kernel")
	}
	tree, err = source.Prepare(ctx, source.Origin(lab.Source), cache, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	a, _ := arch.Lookup("x86_64")
	k := &testbed.Kernels{Tree: tree, CacheDir: cache, Fragments: lab.Fragments("x86_64"), Logf: t.Logf}
	doc, err := k.Get(ctx, a, bi.Steps[1].Commit, "step 1")
	if err != nil {
		t.Fatal(err)
	}
	if doc.Info.ImageSHA256 != bi.Steps[0].Kernel.Info.ImageSHA256 {
		t.Errorf("a documentation-only patch changed the image: %s vs %s (builds are not reproducible)", gitcmd.Short(doc.Info.ImageSHA256), gitcmd.Short(bi.Steps[0].Kernel.Info.ImageSHA256))
	}
	if err := tree.Checkout(ctx, tree.BaseHash); err != nil {
		t.Error(err)
	}
}

// TestGitBisectRun lets git drive: git bisect run calls lab bisect --run on
// each commit git picks, in a user's git tree (no checkout: lab builds in
// its own work tree, so git bisect --no-checkout does). Of doc, spin (the
// culprit) and a harmless change, git must name the spin commit; the ends
// are booted in the first step only (icount: cached for the next).
func TestGitBisectRun(t *testing.T) {
	testenv.E2E(t, "builds and boots real kernels under git bisect run")
	ctx := context.Background()
	cache := testbed.DefaultCache()
	root := testenv.Checkout(t, "../..")
	edits := []testenv.Edit{testSeries[0], testSeries[4], testSeries[1]}
	tree, err := source.Prepare(ctx, source.Origin{Tarball: spec.DefaultTarball, Package: spec.DefaultPackage}, cache, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	testenv.WriteSeries(t, tree, root, "git-run", edits)
	ser, err := series.Load(filepath.Join(root, "patches", "git-run"))
	if err != nil {
		t.Fatal(err)
	}
	commits, err := tree.Variants(ctx, ser, spec.ModeApply)
	if err != nil {
		t.Fatal(err)
	}
	good, bad := tree.BaseHash, commits.Patched
	chain, err := tree.Chain(ctx, good, bad)
	if err != nil || len(chain) != 3 {
		t.Fatalf("chain %v, %v", chain, err)
	}
	treeGit := filepath.Join(tree.Dir, ".git")

	// The user's tree: git's objects are the lab tree's (alternates), no
	// files checked out.
	user := testenv.UserTree(t, cache, "git-bisect-run", filepath.Join(treeGit, "objects"), "series", bad)
	git := testenv.Git(t, user)
	// A bisect an earlier run left (it stopped midway) would refuse to start.
	git("bisect", "reset")
	labFile := filepath.Join(root, "labs", "git-run.yaml")
	os.WriteFile(labFile, []byte(fmt.Sprintf(`name: git-run
series: git-run
mode: apply
source:
  git: %s
  base: %s
matrix:
  arch: [x86_64]
  cpus: [1]
  benchmarks: [uprobe-nop]
  producers: [1]
  boots: 1
  duration: 250ms
  warmup: 0s
  controls: false # the bisect follows uprobe-nop; a control is a guest second a boot
  measure: icount
`, user, good)), 0o644)
	lab, err := spec.Load(labFile)
	if err != nil {
		t.Fatal(err)
	}

	// Every commit's kernel into the content-keyed cache now, as
	// incremental builds of the tarball's tree: the git source's own build
	// folder would start cold.
	a, _ := arch.Lookup("x86_64")
	k := &testbed.Kernels{Tree: tree, CacheDir: cache, Fragments: lab.Fragments("x86_64"), Logf: t.Logf}
	for _, c := range chain {
		if _, err := k.Get(ctx, a, c, gitcmd.Short(c)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tree.Checkout(ctx, tree.BaseHash); err != nil {
		t.Fatal(err)
	}
	tree.Close()

	bin := filepath.Join(t.TempDir(), "lab")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/lab").CombinedOutput(); err != nil {
		t.Fatalf("build lab: %v\n%s", err, out)
	}
	moduleRoot, _ := filepath.Abs("../..")
	results := t.TempDir()
	git("bisect", "start", "--no-checkout", bad, good)
	cmd := exec.Command("git", "bisect", "run", bin, "bisect", "--run", "--good", good, "--bad", bad,
		"--benchmark", "uprobe-nop", "--cache", cache, "--results", results, labFile)
	cmd.Dir = user
	// git runs lab in the kernel tree: LAB_ROOT says where lab's checkout
	// (the guest agent's source) is.
	cmd.Env = append(os.Environ(), "LAB_ROOT="+moduleRoot)
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("git bisect run: %v", err)
	}
	culprit := chain[1]
	if !strings.Contains(string(out), culprit+" is the first bad commit") {
		t.Errorf("git bisect run did not name %s (%s)", gitcmd.Short(culprit), edits[1].Subject)
	}
	// One lab bisect --run per commit git tried, the ends booted by the
	// first alone.
	runs, _ := filepath.Glob(filepath.Join(results, "git-run", "bisect-*", "results.json"))
	boots := 0
	for _, r := range runs {
		data, _ := os.ReadFile(r)
		boots += strings.Count(string(data), `"console_log"`)
	}
	t.Logf("%d lab bisect --run invocations, %d boots", len(runs), boots)
	if len(runs) < 2 || boots > 4+len(runs) {
		t.Errorf("%d invocations and %d boots: want the ends (4 boots) once, then one boot a commit", len(runs), boots)
	}
	git("bisect", "reset")
}
