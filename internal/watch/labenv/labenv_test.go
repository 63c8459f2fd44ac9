package labenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lab/internal/bisect"
	"lab/internal/bisectreport"
	"lab/internal/cluster"
	"lab/internal/kbuild"
	"lab/internal/listseries"
	"lab/internal/report"
	"lab/internal/results"
	"lab/internal/run"
	"lab/internal/runfolder"
	"lab/internal/series"
	"lab/internal/source"
	"lab/internal/spec"
	"lab/internal/testbed"
	"lab/internal/watch"
)

// What went wrong decides the reply's kind: only the series' own faults
// (does not apply, changes no code, does not build or boot) are said of
// the series; anything else is the infrastructure's.
func TestKindOf(t *testing.T) {
	build := &kbuild.BuildError{Arch: "x86_64", Commit: "abc", Dir: "/b", Err: errors.New("kernel/events/uprobes.c:12:3: error: 'x' undeclared")}
	for _, tc := range []struct {
		err  error
		want watch.Kind
		text string
	}{
		{fmt.Errorf("series: %w", &series.ApplyError{}), watch.NotApplied, ""},
		{&source.NeitherWayError{Series: "v2", Forward: &series.ApplyError{Patch: "/tmp/x/v2/0002-y.patch", Number: 2, Total: 2, Subject: "uprobes: y"}, Reverse: errors.New("no")},
			watch.NotApplied, "applies neither on the lab's source nor in reverse (as a series the source already carries):\n\napply patch 2/2 \"uprobes: y\": does not apply"},
		{&run.SameImageError{Same: []string{"x86_64 baseline and v2"}}, watch.SameImage, "no code change"},
		{fmt.Errorf("kernel: %w", build), watch.BuildFailed, "did not compile:\n\n    kernel/events/uprobes.c:12:3: error: 'x' undeclared"},
		{&run.FailedBootsError{Failed: 2, Kernel: 2}, watch.BootFailed, "the kernel's fault"},
		{&run.FailedBootsError{Failed: 2, Kernel: 0}, watch.Infra, "QEMU"},
		{errors.New("disk full"), watch.Infra, "disk full"},
	} {
		if got := kindOf(tc.err); got != tc.want {
			t.Errorf("%v: %s, want %s", tc.err, got, tc.want)
		}
		if text := explain(tc.err); !strings.Contains(text, tc.text) {
			t.Errorf("%v: explained as %q, want %q in it", tc.err, text, tc.text)
		}
	}
}

func load(t *testing.T, dir string) *results.Run {
	t.Helper()
	_, r, err := runfolder.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A version that made a row slower, of more than one patch, is bisected
// patch by patch (lab bisect --each on its mbox) and the bisect's report
// goes into the reply; one that made nothing slower, or of one patch, is
// not.
func TestAttribute(t *testing.T) {
	regressed := "../../../results/examples/kretprobe-objpool/x86_64-2cpu-quiet"
	quiet := "../../../results/examples/uprobe-lazy-buffer/x86_64-1cpu-icount"
	bisected := load(t, "../../../results/examples/uprobe-lazy-buffer/bisect-x86_64-1cpu-icount")
	lab, err := spec.Load("../../../labs/watch-probes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		run     string
		patches int
		bisect  bool
	}{
		{"slower, 2 patches", regressed, 2, true},
		{"slower, 1 patch", regressed, 1, false},
		{"nothing slower", quiet, 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var asked []bisect.Options
			e := &Env{Out: io.Discard, Bisect: func(_ context.Context, o bisect.Options) (*results.Run, string, error) {
				asked = append(asked, o)
				return bisected, "", nil
			}}
			d := report.Build(load(t, tc.run), tc.run, "test")
			out := &watch.Result{Summary: "the report\n"}
			v := watch.Version{Name: "patched", Posting: &listseries.Posting{Total: tc.patches, Subject: "x"}}
			e.attribute(context.Background(), *lab, v, "/tmp/v2.mbx", d, nil, out)
			if got := len(asked) == 1; got != tc.bisect {
				t.Fatalf("bisected %d times, want %v", len(asked), tc.bisect)
			}
			if !tc.bisect {
				if out.Summary != "the report\n" {
					t.Errorf("summary changed: %q", out.Summary)
				}
				return
			}
			if o := asked[0]; !o.Each || o.Lab.Series != "/tmp/v2.mbx" || o.Lab.Versions != nil {
				t.Errorf("bisect options %+v", o)
			}
			table, _, _ := strings.Cut(bisectreport.Plain(bisected), "reproduce:")
			if !strings.Contains(out.Summary, "Which patch made it slower") || !strings.Contains(out.Summary, table) {
				t.Errorf("summary lacks the bisect's report:\n%s", out.Summary)
			}
			if strings.Contains(out.Summary, "reproduce:") {
				t.Errorf("the bisect's reproduce line, which runs the watcher's command line, is in the reply:\n%s", out.Summary)
			}
		})
	}
}

// A run where nothing moved while a control drifted (the committed
// objpool sanity run: syscall-count +11.5 % on x86_64 at 2 vCPUs, wall
// clock) is a too-noisy reply that quotes the control; a run that moved a
// row keeps its verdict.
func TestNoisy(t *testing.T) {
	for _, tc := range []struct {
		run  string
		want watch.Kind
	}{
		{"../../../results/examples/kretprobe-objpool-sanity/x86_64-2cpu", watch.Noisy},
		{"../../../results/examples/kretprobe-objpool/x86_64-2cpu-quiet", watch.Verdict},
		{"../../../results/examples/uprobe-lazy-buffer/x86_64-1cpu-icount", watch.Verdict},
	} {
		d := report.Build(load(t, tc.run), tc.run, "test")
		out := &watch.Result{Kind: watch.Verdict, Summary: "the report\n"}
		noisy(d, string(d.Kernels[len(d.Kernels)-1]), out)
		if out.Kind != tc.want {
			t.Errorf("%s: %s, want %s", tc.run, out.Kind, tc.want)
		}
		if tc.want == watch.Noisy && (!strings.Contains(out.Summary, "syscall-count p=1 moved +11.5 %") || !strings.HasSuffix(out.Summary, "the report\n")) {
			t.Errorf("%s: summary does not quote the control before the report:\n%s", tc.run, out.Summary)
		}
	}
}

// A submission that made no merged run is told apart by what lab printed
// in its jobs' logs: the messages of the very errors kindOf reads in a run
// of its own, so that a change to one of them shows here.
func TestLogKindsAreTheErrors(t *testing.T) {
	build := &kbuild.BuildError{Arch: "x86_64", Commit: "abc", Dir: "/b", Err: errors.New("kernel/events/uprobes.c:12:3: error: 'x' undeclared")}
	for _, tc := range []struct {
		err  error
		want watch.Kind
	}{
		{fmt.Errorf("series: %w", &series.ApplyError{Patch: "0001-x.patch", Details: []string{"kernel/events/uprobes.c: hunk 1 FAILED"}}), watch.NotApplied},
		{&source.NeitherWayError{Series: "v2", Forward: &series.ApplyError{Patch: "0001-x.patch"}, Reverse: errors.New("no")}, watch.NotApplied},
		{&run.SameImageError{Same: []string{"x86_64 baseline and v2"}}, watch.SameImage},
		{fmt.Errorf("kernel: %w", build), watch.BuildFailed},
		{errors.New("qemu-system-x86_64: cannot allocate memory"), watch.Infra},
	} {
		logs := t.TempDir()
		os.WriteFile(filepath.Join(logs, "build-7.out"), []byte("[   0.0s] source ...\n"), 0o644)
		os.WriteFile(filepath.Join(logs, "boot-8_0.out"), []byte("[   1.0s] kernel x86_64/v2 ...\nlab: "+tc.err.Error()+"\n"), 0o644)
		kind, text := fromLogs(logs)
		said, _, _ := strings.Cut(tc.err.Error(), "\n")
		if kind != tc.want || !strings.Contains(text, said) || !strings.Contains(text, "boot-8_0.out") {
			t.Errorf("%v: %s\n%s", tc.err, kind, text)
		}
	}
}

// Handed to Slurm: Submit writes each version's mbox into the submission
// and submits the three jobs with lab build and lab run given the series,
// mode auto and the watcher's flags; Collect waits while the merge job is
// queued or running, then describes the merged run; a merge job Slurm no
// longer knows has ended too.
func TestSlurmSubmitsAndCollects(t *testing.T) {
	ctx := context.Background()
	lab, err := spec.Load("../../../labs/uprobe-srcu.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var sbatch [][]string
	state := "RUNNING"
	cmd := func(ctx context.Context, args []string) ([]byte, error) {
		switch args[0] {
		case "sbatch":
			sbatch = append(sbatch, args)
			return []byte(fmt.Sprintf("%d\n", 40+len(sbatch))), nil
		case "squeue":
			if state == "" {
				return nil, errors.New("squeue: exit status 1: slurm_load_jobs error: Invalid job id specified")
			}
			return []byte(state + "\n"), nil
		}
		return nil, fmt.Errorf("unexpected %q", args)
	}
	var out strings.Builder
	s := &Slurm{Settings: testbed.Settings{CacheDir: t.TempDir(), ResultsDir: t.TempDir()}, ModuleRoot: "/lab", Exe: "/lab/lab", Shards: 1, Command: cmd, Out: &out,
		Flags: []cluster.Flag{{Name: "accel", Value: "tcg"}, {Name: "cache", Value: "/nope"}}}
	posting := &listseries.Posting{Key: "v2@x", Subject: "x", Version: 2, Total: 1}
	job := watch.Job{Lab: lab, Versions: []watch.Version{{Name: "v1", Mbox: []byte("one"), Posting: posting}, {Name: "v2", Mbox: []byte("two"), Posting: posting}}}
	dir, err := s.Prepare(ctx, job)
	if err != nil {
		t.Fatal(err)
	}
	if len(sbatch) != 0 {
		t.Errorf("Prepare submitted %q", sbatch)
	}
	if err := s.Submit(ctx, job, dir); err != nil {
		t.Fatal(err)
	}
	if mbx, _ := os.ReadFile(filepath.Join(dir, "series", "v2.mbx")); string(mbx) != "two" {
		t.Errorf("v2.mbx: %q", mbx)
	}
	build, _ := os.ReadFile(filepath.Join(dir, "scripts", "build.sh"))
	for _, want := range []string{"/lab/lab build " + lab.Path, "--accel=tcg", "--mode=auto", "--series=" + filepath.Join(dir, "series", "v1.mbx"), "--series=" + filepath.Join(dir, "series", "v2.mbx")} {
		if !strings.Contains(string(build), want) {
			t.Errorf("build.sh lacks %q:\n%s", want, build)
		}
	}
	if strings.Contains(string(build), "/nope") || len(sbatch) != 3 {
		t.Errorf("build.sh passes --cache on, or %d jobs submitted:\n%s", len(sbatch), build)
	}
	for _, st := range []string{"PENDING", "RUNNING", "COMPLETING"} {
		state = st
		if res, err := s.Collect(ctx, job, dir); res != nil || err != nil {
			t.Errorf("merge job %s: %+v, %v", st, res, err)
		}
	}
	// The merge ended without a run: the logs say why.
	state = "FAILED"
	os.WriteFile(filepath.Join(dir, "logs", "build-41.out"), []byte("lab: "+(&run.SameImageError{Same: []string{"x86_64 baseline and v2"}}).Error()+"\n"), 0o644)
	if res, err := s.Collect(ctx, job, dir); err != nil || res == nil || res.Kind != watch.SameImage {
		t.Errorf("a merge after a build that found no code change: %+v, %v", res, err)
	}
	// The merge made its run; Slurm has forgotten the job.
	state = ""
	merged := filepath.Join(dir, "merged")
	os.MkdirAll(merged, 0o755)
	example, err := os.ReadFile("../../../results/examples/uprobe-srcu/x86_64-1cpu-icount/results.json")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(merged, runfolder.ResultsFile), example, 0o644)
	res, err := s.Collect(ctx, job, dir)
	if err != nil || res == nil || res.Kind != watch.Verdict || res.RunDir != merged || !strings.Contains(res.Summary, "uprobe-nop") || len(res.Results) == 0 {
		t.Fatalf("the merged run: %+v, %v", res, err)
	}
	// A series of two patches that made a row slower (the example's
	// kernels swapped): the reply says how to find which patch, which the
	// cluster did not measure.
	swapped := strings.NewReplacer(`"variant": "baseline"`, `"variant": "patched"`, `"variant": "patched"`, `"variant": "baseline"`).Replace(string(example))
	os.WriteFile(filepath.Join(merged, runfolder.ResultsFile), []byte(swapped), 0o644)
	two := &listseries.Posting{Key: "p@x", Subject: "x", Version: 1, Total: 2}
	slower := watch.Job{Lab: lab, Versions: []watch.Version{{Name: "patched", Mbox: []byte("one"), Posting: two}}}
	if res, err := s.Collect(ctx, slower, dir); err != nil || res == nil || !strings.Contains(res.Summary, "lab bisect --each on a copy of "+lab.Path) {
		t.Errorf("a slower series of two patches: %+v, %v", res, err)
	}
}

// What a reply says and attaches names no folder of the watcher's machine:
// the watch's own, the results, the cache, lab's checkout, the lab's
// source and the home folder are named as a reader can place them.
func TestPublicPaths(t *testing.T) {
	home, _ := os.UserHomeDir()
	e := &Env{Settings: testbed.Settings{ResultsDir: "/srv/lab/results", CacheDir: filepath.Join(home, ".cache/lab")}, ModuleRoot: "/opt/lab",
		Command: []string{"/usr/local/bin/lab", "watch", "--inbox", "/var/lib/lists/probes", "--history=/var/lib/lab/history.db"}}
	lab := &spec.Lab{Path: "/opt/lab/labs/watch-probes.yaml", Source: spec.Source{Tarball: "/usr/src/linux-source-6.12.tar.xz"}}
	tmp := filepath.Join(os.TempDir(), "lab-watch-123")
	r := &watch.Result{
		Summary: "apply " + tmp + "/v2/0002-x.patch: does not apply\nreproduce: ./lab run /srv/lab/results/watch-probes/20261204-132843/lab.yaml\n" +
			"try series v2 on Debian linux-source-6.12, /usr/src/linux-source-6.12.tar.xz (sha256 c9)\nlog " + home + "/.cache/lab/kernels/k/build.log and " + home + "/notes " +
			os.TempDir() + "/other/x",
		Base: "git /opt/lab/linux at v6.12",
		Results: []byte(`{"qemu":["-kernel","` + home + `/.cache/lab/kernels/k/vmlinux"],"lab":"/opt/lab/labs/watch-probes.yaml",` +
			`"command":["/usr/local/bin/lab","watch","--inbox","/var/lib/lists/probes","--history=/var/lib/lab/history.db"]}`),
	}
	r.Public(e.publicPaths(tmp, lab))
	all := r.Summary + "\n" + r.Base + "\n" + string(r.Results)
	for _, p := range []string{home + "/", "/srv/", "/opt/", os.TempDir() + "/", "/usr/src/", "/var/", "/usr/local/"} {
		if strings.Contains(all, p) {
			t.Errorf("%s is still named:\n%s", p, all)
		}
	}
	for _, w := range []string{"apply ./v2/0002-x.patch", "results/watch-probes/20261204-132843/lab.yaml", "linux-source-6.12.tar.xz (sha256",
		"$LAB_CACHE/kernels/k/build.log", "~/notes", `"$LAB_CACHE/kernels/k/vmlinux"`, `"labs/watch-probes.yaml"`, "$TMPDIR/other/x",
		`"lab","watch","--inbox","probes","--history=history.db"`} {
		if !strings.Contains(all, w) {
			t.Errorf("lacks %q:\n%s", w, all)
		}
	}
}
