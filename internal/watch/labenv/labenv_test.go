package labenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"lab/internal/bisect"
	"lab/internal/bisectreport"
	"lab/internal/kbuild"
	"lab/internal/listseries"
	"lab/internal/report"
	"lab/internal/results"
	"lab/internal/run"
	"lab/internal/runfolder"
	"lab/internal/series"
	"lab/internal/source"
	"lab/internal/spec"
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
		{&source.NeitherWayError{Series: "v2", Forward: &series.ApplyError{}, Reverse: errors.New("no")}, watch.NotApplied, "neither forward nor in reverse"},
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
			e.attribute(context.Background(), *lab, v, "/tmp/v2.mbx", d, out)
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
			if !strings.Contains(out.Summary, "Which patch made it slower") || !strings.Contains(out.Summary, bisectreport.Plain(bisected)) {
				t.Errorf("summary lacks the bisect's report:\n%s", out.Summary)
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
