package bisect

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeEnv gives each step a true figure; boots add noise (tiny under
// icount, a few percent under the wall clock). Nothing is built or booted.
// Boots may come side by side (Mode.Parallel): it counts how many at once.
type fakeEnv struct {
	mu      sync.Mutex
	delay   time.Duration // how long a boot takes
	running int           // boots in progress
	most    int           // the most boots in progress at once
	// gate, when set, holds each boot (up to half a second) until gate
	// boots have run at once: a loaded machine may start one boot a
	// millisecond after another has ended, and the count would then say
	// nothing of what the search asked for. filled is closed then, and
	// gate set to 0.
	gate    int
	filled  chan struct{}
	vals    []float64      // true figure per step, 0..N
	noise   float64        // relative sd of a boot
	skip    map[int]string // steps that do not build ("build") or boot ("boot")
	sameAs  map[int]int    // steps whose image is another step's
	infraAt int            // the boot number at which the infrastructure fails (0: never)
	rng     *rand.Rand
	boots   []int // steps in the order booted
	images  map[int]bool
}

func newFake(vals []float64, noise float64) *fakeEnv {
	return &fakeEnv{vals: vals, noise: noise, skip: map[int]string{}, sameAs: map[int]int{}, rng: rand.New(rand.NewPCG(7, 9)), images: map[int]bool{}}
}

func (f *fakeEnv) Steps() int { return len(f.vals) - 1 }

func (f *fakeEnv) Image(ctx context.Context, k int) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.running > 0 {
		return "", fmt.Errorf("step %d built while %d boots run: one source tree, one build at a time", k, f.running)
	}
	f.images[k] = true
	if f.skip[k] == "build" {
		return "", &SkipError{Why: "does not build", Err: errors.New("drivers/x.c:3: error: expected ';'")}
	}
	if j, ok := f.sameAs[k]; ok {
		k = j
	}
	return fmt.Sprintf("image-%d", k), nil
}

func (f *fakeEnv) Measure(ctx context.Context, k int) (Obs, error) {
	f.mu.Lock()
	f.running++
	f.most = max(f.most, f.running)
	if f.gate > 0 && f.running >= f.gate {
		close(f.filled)
		f.gate = 0 // once
	}
	filled := f.filled
	f.mu.Unlock()
	if filled != nil {
		select {
		case <-filled:
		case <-time.After(500 * time.Millisecond):
		case <-ctx.Done():
		}
	}
	select {
	case <-time.After(f.delay):
	case <-ctx.Done():
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.running--
	if ctx.Err() != nil {
		return Obs{}, fmt.Errorf("boot interrupted: %w", ctx.Err())
	}
	f.boots = append(f.boots, k)
	if f.infraAt > 0 && len(f.boots) == f.infraAt {
		return Obs{}, errors.New("start qemu-system-x86_64: no such file")
	}
	if f.skip[k] == "boot" {
		return Obs{}, &SkipError{Why: "does not boot", Err: errors.New("kernel panic")}
	}
	v := f.vals[k] * (1 + f.noise*f.rng.NormFloat64())
	return Obs{Value: v, Controls: map[string]float64{"syscall-count": 3.86e6 * (1 + f.noise*f.rng.NormFloat64())}}, nil
}

func step(c, n int, size float64) []float64 {
	v := make([]float64, n+1)
	for k := range v {
		v[k] = 1e6
		if k >= c {
			v[k] = 1e6 * (1 + size)
		}
	}
	return v
}

var icount = Mode{ICount: true}
var wall = Mode{MinBoots: 4, MaxBoots: 16}

// One culprit at every position of every series of 1..9 patches is found,
// under icount in ⌈log2 n⌉ steps at most, with one boot a step.
func TestSingleCulpritEverywhere(t *testing.T) {
	for n := 1; n <= 9; n++ {
		for c := 1; c <= n; c++ {
			env := newFake(step(c, n, 0.07), 1e-6)
			r, err := Search(context.Background(), env, icount)
			if err != nil {
				t.Fatal(err)
			}
			if r.Outcome != Found || r.Culprit != c {
				t.Errorf("n=%d culprit %d: %s %d (%v)", n, c, r.Outcome, r.Culprit, r.Notes)
			}
			steps := 0
			for _, st := range r.Steps[1:n] {
				if len(st.Obs) > 0 {
					steps++
				}
			}
			if max := int(math.Ceil(math.Log2(float64(n)))); steps > max {
				t.Errorf("n=%d culprit %d: %d steps measured, want at most %d", n, c, steps, max)
			}
			if r.Measured != 4+steps {
				t.Errorf("n=%d culprit %d: %d boots for %d steps (2 per end + 1 per step)", n, c, r.Measured, steps)
			}
			if r.Explains < 0.99 || r.Explains > 1.01 {
				t.Errorf("n=%d culprit %d explains %.2f of the change", n, c, r.Explains)
			}
		}
	}
}

// The same under the wall clock, with noise: more boots, the same answer.
func TestSingleCulpritWallClock(t *testing.T) {
	for _, c := range []int{1, 3, 6} {
		env := newFake(step(c, 6, 0.20), 0.03)
		r, err := Search(context.Background(), env, wall)
		if err != nil {
			t.Fatal(err)
		}
		if r.Outcome != Found || r.Culprit != c {
			t.Errorf("culprit %d: %s %d %v", c, r.Outcome, r.Culprit, r.Notes)
		}
		// Each step's boots are interleaved with the ends'.
		if env.boots[8] == env.boots[9] {
			t.Errorf("boots not interleaved: %v", env.boots)
		}
	}
}

func TestEndsThatDoNotDiffer(t *testing.T) {
	env := newFake(step(3, 5, 0.00001), 1e-6)
	r, err := Search(context.Background(), env, icount)
	if err != nil {
		t.Fatal(err)
	}
	if r.Outcome != NoChange || len(env.boots) != 4 {
		t.Errorf("%s after %d boots: %v", r.Outcome, len(env.boots), r.Notes)
	}
	env = newFake(step(3, 5, 0.01), 0.05)
	if r, _ := Search(context.Background(), env, wall); r.Outcome != NoChange {
		t.Errorf("1 %% under 5 %% noise: %s", r.Outcome)
	}
}

// A step that does not build, next to the culprit, leaves a range.
func TestSkippedNextToCulprit(t *testing.T) {
	for _, how := range []string{"build", "boot"} {
		env := newFake(step(4, 6, 0.07), 1e-6)
		env.skip[3] = how
		r, err := Search(context.Background(), env, icount)
		if err != nil {
			t.Fatal(err)
		}
		if r.Outcome != Range || r.First != 3 || r.Culprit != 4 || r.Steps[3].Verdict != Skipped {
			t.Errorf("%s: %s %d..%d, step 3 %s", how, r.Outcome, r.First, r.Culprit, r.Steps[3].Verdict)
		}
	}
	// Skipped but not next to the culprit: the neighbour is tried.
	env := newFake(step(6, 8, 0.07), 1e-6)
	env.skip[4] = "build" // the first midpoint
	r, _ := Search(context.Background(), env, icount)
	if r.Outcome != Found || r.Culprit != 6 || r.Steps[4].Verdict != Skipped {
		t.Errorf("skip away from the culprit: %s %d %v", r.Outcome, r.Culprit, r.Notes)
	}
}

// A step whose boots cannot decide it (noise far above the change) stays
// unclear at the cap and is reported, never guessed.
func TestUnclearStep(t *testing.T) {
	vals := step(3, 4, 0.20)
	env := newFake(vals, 0.02)
	noisy := &noisyStep{fakeEnv: env, step: 2, noise: 0.5}
	r, err := Search(context.Background(), noisy, Mode{MinBoots: 4, MaxBoots: 8})
	if err != nil {
		t.Fatal(err)
	}
	if r.Outcome != Doubt || r.Steps[2].Verdict != Unclear || len(r.Steps[2].Obs) != 8 {
		t.Errorf("%s, step 2 %s after %d boots: %v", r.Outcome, r.Steps[2].Verdict, len(r.Steps[2].Obs), r.Notes)
	}
}

type noisyStep struct {
	*fakeEnv
	step  int
	noise float64
}

func (n *noisyStep) Measure(ctx context.Context, k int) (Obs, error) {
	o, err := n.fakeEnv.Measure(ctx, k)
	if k == n.step {
		o.Value = n.vals[k] * (1 + n.noise*n.rng.NormFloat64())
	}
	return o, err
}

// Two culprits, or a figure that goes up then down: no confident single
// answer; the report says so and suggests --each.
func TestNotMonotonic(t *testing.T) {
	two := step(2, 8, 0.03)
	for k := 5; k <= 8; k++ {
		two[k] = 1e6 * 1.07
	}
	upDown := step(3, 8, 0.10)
	for k := 6; k <= 8; k++ {
		upDown[k] = 1e6 * 1.02
	}
	for name, vals := range map[string][]float64{"two culprits": two, "up then down": upDown} {
		r, err := Search(context.Background(), newFake(vals, 1e-6), icount)
		if err != nil {
			t.Fatal(err)
		}
		if r.Outcome != Doubt || !strings.Contains(strings.Join(r.Notes, "\n"), "--each") {
			t.Errorf("%s: %s %d %v", name, r.Outcome, r.Culprit, r.Notes)
		}
	}
}

// --each measures every step and shares out the change.
func TestEach(t *testing.T) {
	vals := []float64{1e6, 1.05e6, 1.05e6, 1.07e6}
	r, err := Each(context.Background(), newFake(vals, 1e-6), icount)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range r.Steps {
		if len(st.Obs) == 0 {
			t.Errorf("step %d not measured", st.Index)
		}
	}
	if r.Outcome != Attributed || r.Culprit != 1 {
		t.Errorf("%s %d", r.Outcome, r.Culprit)
	}
}

// A step that changes no code has its parent's image: judged like the
// measured step with the same image, without a boot.
func TestNoCodeChange(t *testing.T) {
	env := newFake(step(3, 4, 0.07), 1e-6)
	env.sameAs[2] = 0 // a comment-only patch: the image of step 0 (already measured)
	env.vals[2] = env.vals[0]
	r, err := Search(context.Background(), env, icount)
	if err != nil {
		t.Fatal(err)
	}
	if r.Outcome != Found || r.Culprit != 3 || r.Steps[2].Verdict != NoCode || len(r.Steps[2].Obs) != 0 {
		t.Errorf("%s %d, step 2 %s with %d boots", r.Outcome, r.Culprit, r.Steps[2].Verdict, len(r.Steps[2].Obs))
	}
	if notes := strings.Join(r.Notes, "\n"); !strings.Contains(notes, "steps 1-2 change no code: the same kernel image as step 0 (step 2 judged like step 0, no boot)") {
		t.Errorf("notes do not say which steps change no code:\n%s", notes)
	}
	// The culprit builds the bad end's image: it changed the code, the
	// steps after it did not.
	env = newFake(step(3, 5, 0.07), 1e-6)
	env.sameAs[3], env.sameAs[4] = 5, 5
	r, err = Search(context.Background(), env, icount)
	if err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(r.Notes, "\n")
	if r.Outcome != Found || r.Culprit != 3 || !strings.Contains(notes, "steps 4-5 change no code: the same kernel image as step 3") || strings.Contains(notes, "step 3: no code") {
		t.Errorf("%s %d; notes:\n%s", r.Outcome, r.Culprit, notes)
	}
	// Both ends the same image: nothing to bisect, no boot at all.
	env = newFake(step(1, 2, 0.07), 1e-6)
	env.sameAs[2] = 0
	if r, _ := Search(context.Background(), env, icount); r.Outcome != NoChange || len(env.boots) != 0 {
		t.Errorf("same image at both ends: %s after %d boots", r.Outcome, len(env.boots))
	}
}

// A step that changes no code is never booted, wherever the search lands:
// the step before it with the same image is booted in its place (the
// culprit itself, or a like-good step).
func TestNoCodeStepIsNeverBooted(t *testing.T) {
	for _, tc := range []struct {
		name    string
		vals    []float64
		sameAs  map[int]int
		culprit int
	}{
		// 0 good, 1 the culprit, 2 a documentation commit, 3, 4 bad: the
		// middle is step 2.
		{"after the culprit", step(1, 4, 0.2), map[int]int{2: 1}, 1},
		// 0 good, 1, 2 a comment commit, 3 the culprit, 4 bad.
		{"before the culprit", step(3, 4, -0.08), map[int]int{2: 1}, 3},
		// two in a row after the culprit: 0, 1 culprit, 2, 3 docs, 4, 5, 6 bad.
		{"two in a row", step(1, 6, 0.1), map[int]int{2: 1, 3: 1}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newFake(tc.vals, 1e-6)
			env.sameAs = tc.sameAs
			r, err := Search(context.Background(), env, icount)
			if err != nil {
				t.Fatal(err)
			}
			if r.Outcome != Found || r.Culprit != tc.culprit {
				t.Errorf("%s at step %d, want found at %d", r.Outcome, r.Culprit, tc.culprit)
			}
			for _, k := range env.boots {
				if _, ok := tc.sameAs[k]; ok {
					t.Errorf("step %d booted (%v): it has step %d's image", k, env.boots, tc.sameAs[k])
				}
			}
		})
	}
}

// An infrastructure failure stops the search with the error.
func TestInfraStops(t *testing.T) {
	env := newFake(step(3, 6, 0.07), 1e-6)
	env.infraAt = 5
	if _, err := Search(context.Background(), env, icount); err == nil || !strings.Contains(err.Error(), "qemu") {
		t.Errorf("err = %v", err)
	}
	env = newFake(step(3, 6, 0.07), 1e-6)
	env.skip[0] = "build"
	if _, err := Search(context.Background(), env, icount); err == nil || !strings.Contains(err.Error(), "good end") {
		t.Errorf("an end that does not build: %v", err)
	}
}

// Under icount with short or cold samples the figure repeats less well
// than the controls: the floor takes the ends' own spread, so a step within
// it is like an end, not "neither".
func TestFloorIncludesTheFiguresSpread(t *testing.T) {
	vals := step(1, 2, 0.07)
	env := newFake(vals, 0.0004)
	r, err := Each(context.Background(), env, icount)
	if err != nil {
		t.Fatal(err)
	}
	if r.FloorPct <= 0.01 || r.Steps[1].Verdict != LikeBad {
		t.Errorf("floor %.4f %%, step 1 %s (ends %v / %v)", r.FloorPct, r.Steps[1].Verdict, r.Steps[0].Values(), r.Steps[2].Values())
	}
}

// --run judges one step for git bisect run: like good before the culprit,
// like bad from it on, skipped when it does not build or boot.
func TestProbe(t *testing.T) {
	for _, tc := range []struct {
		name    string
		vals    []float64
		skip    string
		mode    Mode
		noise   float64
		want    string
		outcome string
	}{
		{"before the culprit", []float64{1e6, 1e6, 1.1e6}, "", icount, 1e-6, LikeGood, Probed},
		{"the culprit", []float64{1e6, 1.1e6, 1.1e6}, "", icount, 1e-6, LikeBad, Probed},
		{"half way", []float64{1e6, 1.05e6, 1.1e6}, "", icount, 1e-6, Neither, Probed},
		// The figures of the test that failed in CI: a later patch edits
		// only a string, and moves the figure by 0.06 % (6× the floor).
		{"the culprit, a string edit after it", []float64{1.10613e6, 0.90794e6, 0.90737e6}, "", icount, 1e-6, LikeBad, Probed},
		{"before the culprit, a string edit", []float64{1.10613e6, 1.10545e6, 0.90737e6}, "", icount, 1e-6, LikeGood, Probed},
		{"a tenth of the way", []float64{1e6, 1.012e6, 1.1e6}, "", icount, 1e-6, Neither, Probed},
		{"does not build", []float64{1e6, 1e6, 1.1e6}, "build", icount, 1e-6, Skipped, Probed},
		{"does not boot", []float64{1e6, 1e6, 1.1e6}, "boot", icount, 1e-6, Skipped, Probed},
		{"wall clock", []float64{1e6, 1.2e6, 1.2e6}, "", wall, 0.03, LikeBad, Probed},
		{"ends alike", []float64{1e6, 1e6, 1e6}, "", icount, 1e-6, Untested, NoChange},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newFake(tc.vals, tc.noise)
			if tc.skip != "" {
				env.skip[1] = tc.skip
			}
			r, err := Probe(context.Background(), env, tc.mode, 1)
			if err != nil {
				t.Fatal(err)
			}
			if r.Outcome != tc.outcome || r.Steps[1].Verdict != tc.want {
				t.Errorf("%s, step verdict %q; want %s, %q (%v)", r.Outcome, r.Steps[1].Verdict, tc.outcome, tc.want, r.Notes)
			}
		})
	}
	// A step with an end's image is judged like that end, without a boot:
	// with the good end's it changes no code; with the bad end's it is the
	// culprit, and git bisect run must hear "bad".
	for same, want := range map[int]string{0: NoCode, 2: LikeBad} {
		env := newFake([]float64{1e6, 1e6, 1.1e6}, 1e-6)
		env.sameAs[1] = same
		env.vals[1] = env.vals[same]
		if r, err := Probe(context.Background(), env, icount, 1); err != nil || r.Steps[1].Verdict != want || len(r.Steps[1].Obs) != 0 {
			t.Errorf("step 1 with the image of step %d: %q after %d boots (%v), want %q", same, r.Steps[1].Verdict, len(r.Steps[1].Obs), err, want)
		}
	}
	if _, err := Probe(context.Background(), newFake([]float64{1, 2}, 0), icount, 1); err == nil {
		t.Error("probed an end")
	}
}

// Under icount boots run side by side (Mode.Parallel) where the search
// allows: the ends, and --each's steps. The answer is the serial one, boot
// for boot, and no kernel is built while a boot runs. The wall clock boots
// one at a time whatever Parallel says.
func TestParallelBootsGiveTheSerialAnswer(t *testing.T) {
	for _, tc := range []struct {
		name     string
		mode     Mode
		each     bool
		skip     map[int]string
		sameAs   map[int]int
		wantMost int
	}{
		{name: "search icount", mode: Mode{ICount: true, Parallel: 2}, wantMost: 2},
		{name: "search icount, 4 at once", mode: Mode{ICount: true, Parallel: 4, EndBoots: 2}, wantMost: 4},
		{name: "each icount", mode: Mode{ICount: true, Parallel: 2}, each: true, wantMost: 2},
		{name: "each icount, steps that do not build or boot", mode: Mode{ICount: true, Parallel: 3}, each: true,
			skip: map[int]string{2: "build", 4: "boot"}, sameAs: map[int]int{1: 0}, wantMost: 3},
		{name: "search wall clock", mode: Mode{MinBoots: 4, MaxBoots: 16, Parallel: 2}, wantMost: 1},
		{name: "each wall clock", mode: Mode{MinBoots: 4, MaxBoots: 16, Parallel: 2}, each: true, wantMost: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			noise := 1e-6
			if !tc.mode.ICount {
				noise = 0.01
			}
			var results [2]*Result
			var envs [2]*fakeEnv
			for i, parallel := range []int{1, tc.mode.Parallel} {
				env := newFake(step(5, 6, 0.07), noise)
				env.delay = time.Millisecond
				if parallel > 1 && tc.wantMost > 1 {
					env.gate, env.filled = tc.wantMost, make(chan struct{})
				}
				for k, v := range tc.skip {
					env.skip[k] = v
				}
				for k, v := range tc.sameAs {
					env.sameAs[k] = v
				}
				mode := tc.mode
				mode.Parallel = parallel
				search := Search
				if tc.each {
					search = Each
				}
				r, err := search(context.Background(), env, mode)
				if err != nil {
					t.Fatalf("parallel %d: %v", parallel, err)
				}
				results[i], envs[i] = r, env
			}
			serial, par := results[0], results[1]
			if envs[0].most != 1 {
				t.Errorf("serial: %d boots at once", envs[0].most)
			}
			if envs[1].most != tc.wantMost {
				t.Errorf("parallel %d: at most %d boots at once, want %d", tc.mode.Parallel, envs[1].most, tc.wantMost)
			}
			if par.Outcome != serial.Outcome || par.Culprit != serial.Culprit || par.First != serial.First || par.Measured != serial.Measured {
				t.Errorf("parallel: %s %d..%d in %d boots; serial: %s %d..%d in %d boots",
					par.Outcome, par.First, par.Culprit, par.Measured, serial.Outcome, serial.First, serial.Culprit, serial.Measured)
			}
			for k := range serial.Steps {
				s, p := serial.Steps[k], par.Steps[k]
				if s.Verdict != p.Verdict || len(s.Obs) != len(p.Obs) || s.SameAs != p.SameAs {
					t.Errorf("step %d: parallel %s (%d boots, same as %d), serial %s (%d boots, same as %d)",
						k, p.Verdict, len(p.Obs), p.SameAs, s.Verdict, len(s.Obs), s.SameAs)
				}
			}
		})
	}
}

// A boot that fails the infrastructure stops a batch of boots side by side:
// no further boot starts, the running ones are cancelled, and the error
// reported is the failure, not a cancelled boot's.
func TestParallelBootsStopAtInfraFailure(t *testing.T) {
	env := newFake(step(3, 6, 0.07), 1e-6)
	env.delay = 5 * time.Millisecond
	env.infraAt = 2
	_, err := Search(context.Background(), env, Mode{ICount: true, Parallel: 2, EndBoots: 4})
	if err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("err = %v, want the infrastructure's failure", err)
	}
	if len(env.boots) > 3 {
		t.Errorf("%d boots after the failure at the second: %v", len(env.boots), env.boots)
	}
}
