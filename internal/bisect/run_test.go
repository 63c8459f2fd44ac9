package bisect

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"lab/initramfs/protocol"
	"lab/internal/progress"
	"lab/internal/results"
	"lab/internal/spec"
)

// --parallel is for icount bisects: under the wall clock guests side by
// side slow each other and a step is judged against boots of the ends, so
// lab says no before it builds anything.
func TestWallClockBisectRefusesParallel(t *testing.T) {
	lab, err := spec.Load("../../labs/uprobe-srcu.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lab.Matrix.CPUs, lab.Matrix.Measure = []int{2}, spec.MeasureWall
	var out bytes.Buffer
	_, _, err = Run(context.Background(), Options{Lab: lab, CacheDir: t.TempDir(), ResultsDir: t.TempDir(), Accel: "tcg",
		Out: &out, Figure: &results.Figure{Benchmark: "uprobe-nop", Producers: 1}, Parallel: 2})
	if err == nil || !strings.Contains(err.Error(), "--parallel 2") || !strings.Contains(err.Error(), "wall clock") {
		t.Fatalf("err = %v, want --parallel refused under the wall clock", err)
	}
}

// TestFollowKeepsTheLabsOrder: the job cut down to a figure and the
// controls keeps the lab's order, so the ends' boots a track made with
// the lab's job and the bisect's own boots run their benchmarks alike.
func TestFollowKeepsTheLabsOrder(t *testing.T) {
	for _, tc := range []struct {
		name   string
		lab    []string
		figure string
		want   []string
	}{
		{"controls after the figure", []string{"uprobe-nop", "syscall-count", "usermode-count"}, "uprobe-nop", []string{"uprobe-nop", "syscall-count", "usermode-count"}},
		{"controls first", []string{"usermode-count", "kprobe", "uprobe-nop", "syscall-count"}, "uprobe-nop", []string{"usermode-count", "uprobe-nop", "syscall-count"}},
		{"figure not in the lab's job", []string{"syscall-count"}, "kretprobe", []string{"kretprobe", "syscall-count"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &bisector{fullJob: protocol.Job{Benchmarks: tc.lab, Producers: []int{1}}}
			b.follow(results.Figure{Benchmark: tc.figure, Producers: 1}, "test")
			if !slices.Equal(b.plan.Job.Benchmarks, tc.want) {
				t.Errorf("job %v, want %v", b.plan.Job.Benchmarks, tc.want)
			}
		})
	}
}

// A bisect that lab track hands the history's boots of its ends to takes
// them as the ends' boots under icount, where one image gives one figure:
// it boots neither end again. Without them an icount bisect boots each end
// once (spec.DefaultSeeds), and under the wall clock the search's own
// count of end boots holds.
func TestHistoryEndsStandUnderICount(t *testing.T) {
	one := &Ends{Good: []Obs{{Value: 1}}, Bad: []Obs{{Value: 2}}}
	for _, tc := range []struct {
		name  string
		clock string
		ends  *Ends
		want  int
	}{
		{"icount, the history's ends", results.ClockICount, one, 1},
		{"icount, two of one end", results.ClockICount, &Ends{Good: []Obs{{Value: 1}, {Value: 1}}, Bad: []Obs{{Value: 2}}}, 1},
		{"icount, no history", results.ClockICount, nil, 1},
		{"icount, one end missing", results.ClockICount, &Ends{Good: []Obs{{Value: 1}}}, 1},
		{"wall clock", results.ClockWall, one, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &bisector{opt: Options{Ends: tc.ends}, pending: map[int][]given{}, steps: make([]results.BisectStep, 3)}
			b.plan.Clock = tc.clock
			if tc.ends != nil { // as prepare queues them
				b.give(0, tc.ends.Good, historyBoot)
				b.give(2, tc.ends.Bad, historyBoot)
			}
			if got := b.searchMode().EndBoots; got != tc.want {
				t.Errorf("EndBoots %d, want %d (0: the search's default)", got, tc.want)
			}
		})
	}
	// Boots this bisect made to choose its figure are its own: they do
	// not lower the count of end boots.
	b := &bisector{pending: map[int][]given{}, steps: make([]results.BisectStep, 3)}
	b.plan.Clock = results.ClockICount
	b.pending[0] = []given{{Obs: Obs{Value: 1}, from: choosingBoot}}
	b.pending[2] = []given{{Obs: Obs{Value: 2}, from: choosingBoot}}
	if got := b.searchMode().EndBoots; got != 1 {
		t.Errorf("ends that chose the figure: EndBoots %d, want 1 (an icount end's one boot)", got)
	}
	// The search with one boot of each end given boots neither again.
	env := newFake(step(2, 4, 0.05), 1e-6)
	pending := map[int]int{0: 1, 4: 1}
	given := &givenEnds{fakeEnv: env, pending: pending}
	res, err := Search(context.Background(), given, Mode{ICount: true, EndBoots: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Culprit != 2 {
		t.Errorf("culprit %d, want 2", res.Culprit)
	}
	for _, k := range env.boots {
		if k == 0 || k == 4 {
			t.Errorf("end %d booted again (boots %v)", k, env.boots)
		}
	}
}

// givenEnds answers an end's first Measure from figures measured before,
// as the bisector does with the history's boots.
type givenEnds struct {
	*fakeEnv
	pending map[int]int
}

func (g *givenEnds) Measure(ctx context.Context, k int) (Obs, error) {
	if g.pending[k] > 0 {
		g.pending[k]--
		return Obs{Value: g.vals[k], Controls: map[string]float64{"syscall-count": 3.86e6}}, nil
	}
	return g.fakeEnv.Measure(ctx, k)
}

// A figure the search takes instead of a boot says where it came from,
// and only those from before this bisect count as earlier: the boots made
// to choose the figure were spent by it.
func TestGivenFiguresSayWhereTheyCameFrom(t *testing.T) {
	var out bytes.Buffer
	b := &bisector{rep: progress.New(&out, time.Now()), pending: map[int][]given{},
		steps: make([]results.BisectStep, 3)}
	b.give(0, []Obs{{Value: 1}}, historyBoot)
	b.pending[2] = append(b.pending[2], given{Obs: Obs{Value: 2}, from: choosingBoot})
	for k, want := range map[int]float64{0: 1, 2: 2} {
		o, err := b.Measure(context.Background(), k)
		if err != nil || o.Value != want {
			t.Fatalf("step %d: %+v, %v; want the given figure %v", k, o, err, want)
		}
	}
	if b.earlier != 1 {
		t.Errorf("earlier %d, want 1 (the history's; not the boot that chose the figure)", b.earlier)
	}
	for _, w := range []string{"step 0 (): figure from " + historyBoot, "step 2 (): figure from " + choosingBoot} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("output lacks %q:\n%s", w, out.String())
		}
	}
}
