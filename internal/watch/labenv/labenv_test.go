package labenv

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"lab/internal/kbuild"
	"lab/internal/run"
	"lab/internal/series"
	"lab/internal/source"
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
