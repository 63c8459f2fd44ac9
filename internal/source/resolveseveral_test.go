package source

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"lab/internal/series"
)

// versions are the versions of one series: v1 its first patch, v2 both,
// made with git format-patch from uprobes.c as bodies[0], then bodies[1],
// then bodies[2].
func versions(t *testing.T, bodies ...string) (v1, v2 *series.Series) {
	load := uprobesHistory(t, bodies[0], change{"uprobes: change 1", bodies[1]}, change{"uprobes: change 2", bodies[2]})
	return load("v1", 1), load("v2", 2)
}

// lines is a file of n numbered lines, with line k (from 1) replaced by
// each of with's values.
func lines(n int, with map[int]string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if w, ok := with[i]; ok {
			b.WriteString(w + "\n")
			continue
		}
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

// The baseline of several series: the source without the series in it of
// most patches, or the source when none is in it; each series applied on
// the baseline, and a series in the source reproduces its tree.
func TestResolveSeveralSeries(t *testing.T) {
	ctx := context.Background()
	a := lines(30, nil)
	b := lines(30, map[int]string{5: "patch one"})
	c := lines(30, map[int]string{5: "patch one", 25: "patch two"})
	v1, v2 := versions(t, a, b, c)
	for _, tc := range []struct {
		name, source, mode string
		want               string // mode chosen; "" for an error
		baseline           string // the baseline's uprobes.c
		why                string // in Why or the error
	}{
		{"v2 in the source: revert", c, ModeAuto, series.ModeRevert, a, "revert: series v2 is in the source (2 patches, each applies in reverse"},
		{"v1 in the source", b, ModeAuto, series.ModeRevert, a, "revert: series v1 is in the source (1 patch, each applies in reverse"},
		{"neither: apply", a, ModeAuto, series.ModeApply, a, "apply: no series is in the source"},
		{"asked apply on a source with v2", c, series.ModeApply, "", "", "series v1 on the baseline (apply): "},
		{"asked revert, none in it", a, series.ModeRevert, "", "", "mode revert: no series applies in reverse on "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tree, err := Prepare(ctx, Origin{Tarball: fakeTarball(t, "6.12.999", tc.source)}, t.TempDir(), t.Logf)
			if err != nil {
				t.Fatal(err)
			}
			defer tree.Close()
			got, err := tree.ResolveSeries(ctx, []*series.Series{v1, v2}, tc.mode)
			if tc.want == "" {
				if err == nil || !strings.Contains(err.Error(), tc.why) {
					t.Fatalf("err = %v, want %q", err, tc.why)
				}
				if head, _ := tree.git.Output(ctx, "rev-parse", "HEAD"); head != tree.BaseHash {
					t.Errorf("tree left at %s after a failure, want the base %s", head, tree.BaseHash)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Mode != tc.want || !strings.HasPrefix(got.Why, tc.why) {
				t.Errorf("mode %s, why %q; want %s, %q...", got.Mode, got.Why, tc.want, tc.why)
			}
			file := func(commit string) string {
				out, err := tree.git.Output(ctx, "show", commit+":kernel/events/uprobes.c")
				if err != nil {
					t.Fatal(err)
				}
				return out + "\n"
			}
			if f := file(got.Baseline); f != tc.baseline {
				t.Errorf("baseline's file:\n%s\nwant:\n%s", f, tc.baseline)
			}
			if len(got.Each) != 2 {
				t.Fatalf("each: %+v", got.Each)
			}
			for i, want := range []string{b, c} {
				e := got.Each[i]
				if e.Commits.Baseline != got.Baseline || file(e.Commits.Patched) != want {
					t.Errorf("series %d: commits %+v, file:\n%s", i+1, e.Commits, file(e.Commits.Patched))
				}
			}
			// The series in the source is the source's tree: its kernel
			// is the one the cache holds for the source.
			srcTree, _ := tree.TreeHash(ctx, tree.BaseHash)
			for i, body := range []string{b, c} {
				th, _ := tree.TreeHash(ctx, got.Each[i].Commits.Patched)
				if (th == srcTree) != (body == tc.source) {
					t.Errorf("series %d: tree %s, the source's %s", i+1, th, srcTree)
				}
			}
			again, err := tree.ResolveSeries(ctx, []*series.Series{v1, v2}, tc.mode)
			if err != nil || again.Baseline != got.Baseline || again.Each[1] != got.Each[1] {
				t.Errorf("again: %+v, %v; want %+v", again, err, got)
			}
		})
	}
}
