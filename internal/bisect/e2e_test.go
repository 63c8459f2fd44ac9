package bisect

// End-to-end: a series written at test time onto Debian's 6.12 tree, built
// step by step and booted under icount, bisected for real.

import (
	"bytes"
	"context"
	"os"
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

// testSeries: a doc-only patch, a harmless string change, a patch that
// breaks the build and the next that mends it, one that lengthens the uprobe
// hit path (the culprit: step 5), and a harmless last one.
var testSeries = []testenv.Edit{
	{Subject: "docs: uprobetracer: a note", File: "Documentation/trace/uprobetracer.rst", Change: func(s string) string { return s + "\n.. lab bisect test: documentation only\n" }},
	{Subject: "init: say \"the init process\"", File: "init/main.c", Change: testenv.Replace(`pr_info("Run %s as init process\n", init_filename);`, `pr_info("Run %s as the init process\n", init_filename);`)},
	{Subject: "uprobes: a declaration that does not compile", File: "kernel/events/uprobes.c", Change: func(s string) string { return s + "\nint lab_bisect_broken = ;\n" }},
	{Subject: "uprobes: mend the declaration", File: "kernel/events/uprobes.c", Change: testenv.Replace("\nint lab_bisect_broken = ;\n", "")},
	{Subject: "uprobes: spin on every hit", File: "kernel/events/uprobes.c", Change: func(s string) string {
		s = strings.Replace(s, "\tint is_swbp;\n\n\tbp_vaddr = uprobe_get_swbp_addr(regs);\n",
			"\tint is_swbp;\n\tvolatile int lab_spin;\n\n\tbp_vaddr = uprobe_get_swbp_addr(regs);\n\tfor (lab_spin = 0; lab_spin < 32; lab_spin++)\n\t\t;\n", 1)
		return s
	}},
	{Subject: "init: say it once more", File: "init/main.c", Change: testenv.Replace(`pr_info("Run %s as the init process\n", init_filename);`, `pr_info("Run %s as the init process.\n", init_filename);`)},
}

// TestBisectFindsThePatch bisects the test series under icount on x86_64:
// lab must name the patch that lengthens the uprobe hit path, skip the step
// that does not build (naming the compiler's file and the patch), and build
// the documentation-only step into the same image as its parent.
func TestBisectFindsThePatch(t *testing.T) {
	testenv.E2E(t, "builds and boots a series of real kernels")
	ctx := context.Background()
	cache := run.DefaultCache()
	root := testenv.Checkout(t, "../..")
	tree, err := source.Prepare(ctx, spec.Source{Tarball: spec.DefaultTarball, Package: spec.DefaultPackage}, cache, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	testenv.WriteSeries(t, tree.Dir, root, "bisect-e2e", testSeries)
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
		t.Fatalf("outcome %s, culprit step %d: want the culprit at step 5 (%s)", bi.Outcome, bi.Culprit, testSeries[4].Subject)
	}
	if !strings.Contains(bi.Steps[5].Name, "spin-on-every-hit") || bi.Change.Pct > -5 {
		t.Errorf("culprit %s, change %+.2f %%: want 0005-…spin-on-every-hit, slower by several percent", bi.Steps[5].Name, bi.Change.Pct)
	}
	_ = files
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
