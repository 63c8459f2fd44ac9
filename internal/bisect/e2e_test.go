package bisect

// End-to-end: a series written at test time onto Debian's 6.12 tree, built
// step by step and booted under icount, bisected for real.

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"lab/internal/arch"
	"lab/internal/results"
	"lab/internal/run"
	"lab/internal/source"
	"lab/internal/spec"
	"lab/internal/testenv"
)

// edit is one patch of the test series: a file and how to change it.
type edit struct {
	subject, file string
	change        func(string) string
}

func replace(old, new string) func(string) string {
	return func(s string) string { return strings.Replace(s, old, new, 1) }
}

// testSeries: a doc-only patch, a harmless string change, a patch that
// breaks the build and the next that mends it, one that lengthens the uprobe
// hit path (the culprit: step 5), and a harmless last one.
var testSeries = []edit{
	{"docs: uprobetracer: a note", "Documentation/trace/uprobetracer.rst", func(s string) string { return s + "\n.. lab bisect test: documentation only\n" }},
	{"init: say \"the init process\"", "init/main.c", replace(`pr_info("Run %s as init process\n", init_filename);`, `pr_info("Run %s as the init process\n", init_filename);`)},
	{"uprobes: a declaration that does not compile", "kernel/events/uprobes.c", func(s string) string { return s + "\nint lab_bisect_broken = ;\n" }},
	{"uprobes: mend the declaration", "kernel/events/uprobes.c", replace("\nint lab_bisect_broken = ;\n", "")},
	{"uprobes: spin on every hit", "kernel/events/uprobes.c", func(s string) string {
		s = strings.Replace(s, "\tint is_swbp;\n\n\tbp_vaddr = uprobe_get_swbp_addr(regs);\n",
			"\tint is_swbp;\n\tvolatile int lab_spin;\n\n\tbp_vaddr = uprobe_get_swbp_addr(regs);\n\tfor (lab_spin = 0; lab_spin < 32; lab_spin++)\n\t\t;\n", 1)
		return s
	}},
	{"init: say it once more", "init/main.c", replace(`pr_info("Run %s as the init process\n", init_filename);`, `pr_info("Run %s as the init process.\n", init_filename);`)},
}

// writeSeries makes the patches with git format-patch, from the files of
// the lab's source tree, into a lab checkout of its own.
func writeSeries(t *testing.T, tree *source.Tree, root string) {
	t.Helper()
	scratch := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=lab test", "-c", "user.email=lab@localhost", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = scratch
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	files := map[string]bool{}
	for _, e := range testSeries {
		files[e.file] = true
	}
	for f := range files {
		data, err := os.ReadFile(filepath.Join(tree.Dir, f))
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Join(scratch, filepath.Dir(f)), 0o755)
		os.WriteFile(filepath.Join(scratch, f), data, 0o644)
	}
	git("add", ".")
	git("commit", "-q", "-m", "base")
	for _, e := range testSeries {
		p := filepath.Join(scratch, e.file)
		data, _ := os.ReadFile(p)
		changed := e.change(string(data))
		if changed == string(data) {
			t.Fatalf("patch %q changes nothing in %s: the 6.12 source is not what the test expects", e.subject, e.file)
		}
		os.WriteFile(p, []byte(changed), 0o644)
		git("commit", "-q", "-a", "-m", e.subject)
	}
	dir := filepath.Join(root, "patches", "bisect-e2e")
	os.MkdirAll(dir, 0o755)
	git("format-patch", "-q", "-o", dir, "HEAD~6")
}

// TestBisectFindsThePatch bisects the test series under icount on x86_64:
// lab must name the patch that lengthens the uprobe hit path, skip the step
// that does not build (naming the compiler's file and the patch), and build
// the documentation-only step into the same image as its parent.
func TestBisectFindsThePatch(t *testing.T) {
	testenv.E2E(t, "builds and boots a series of real kernels")
	ctx := context.Background()
	cache := run.DefaultCache()
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "labs"), 0o755)
	os.MkdirAll(filepath.Join(root, "kernel-config"), 0o755)
	for _, f := range []string{"common.config", "x86_64.config"} {
		data, err := os.ReadFile(filepath.Join("../../kernel-config", f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(root, "kernel-config", f), data, 0o644)
	}
	tree, err := source.Prepare(ctx, spec.Source{Tarball: spec.DefaultTarball, Package: spec.DefaultPackage}, cache, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	writeSeries(t, tree, root)
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
  duration: 1s
  warmup: 0s
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
	files, ferr := Files(res)
	if ferr != nil {
		t.Fatal(ferr)
	}
	t.Logf("%s\n%s", dir, files["report.md"])
	if bi.Outcome != Found || bi.Culprit != 5 {
		t.Fatalf("outcome %s, culprit step %d: want the culprit at step 5 (%s)", bi.Outcome, bi.Culprit, testSeries[4].subject)
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
	tree, err = source.Prepare(ctx, lab.Source, cache, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	a, _ := arch.Lookup("x86_64")
	k := &run.Kernels{Tree: tree, CacheDir: cache, Fragments: lab.Fragments("x86_64"), Logf: t.Logf}
	doc, err := k.Get(ctx, a, bi.Steps[1].Commit, "step 1")
	if err != nil {
		t.Fatal(err)
	}
	if doc.Info.ImageSHA256 != bi.Steps[0].Kernel.Info.ImageSHA256 {
		t.Errorf("a documentation-only patch changed the image: %s vs %s (builds are not reproducible)", short(doc.Info.ImageSHA256), short(bi.Steps[0].Kernel.Info.ImageSHA256))
	}
	if err := tree.Checkout(ctx, tree.BaseHash); err != nil {
		t.Error(err)
	}
}
