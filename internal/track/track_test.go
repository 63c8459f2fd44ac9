package track

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"lab/internal/bisect"
	"lab/internal/shard"
)

// chain is commits c1..cn at places 1..n after from (c0).
func chain(n int) (from Commit, cs []Commit) {
	for i := 1; i <= n; i++ {
		cs = append(cs, Commit{Hash: fmt.Sprintf("c%d", i), Subject: fmt.Sprintf("commit %d", i), Seq: i})
	}
	return Commit{Hash: "c0", Seq: 0}, cs
}

func hashes(cs []Commit) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Hash)
	}
	return out
}

// fakeEnv: images by commit (a commit missing has its own image), builds
// that fail, boots that panic; it logs every build and boot.
type fakeEnv struct {
	images  map[string]string
	noBuild map[string]bool
	panics  map[string]bool
	infra   string // a boot of this commit stops the track
	boots   int
	mu      *sync.Mutex
	built   []string
	booted  []string
	active  int // boots running now
	most    int // the most that ran at once
}

func (e *fakeEnv) Image(ctx context.Context, c Commit) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.built = append(e.built, c.Hash)
	if e.noBuild[c.Hash] {
		return "", &bisect.SkipError{Why: "does not build", Err: errors.New("kernel/events/uprobes.c:12: error")}
	}
	if img, ok := e.images[c.Hash]; ok {
		return img, nil
	}
	return "img-" + c.Hash, nil
}

func (e *fakeEnv) Boots() int { return max(e.boots, 1) }

func (e *fakeEnv) Boot(ctx context.Context, c Commit, j int) error {
	e.mu.Lock()
	e.active++
	e.most = max(e.most, e.active)
	e.booted = append(e.booted, c.Hash)
	e.mu.Unlock()
	defer func() { e.mu.Lock(); e.active--; e.mu.Unlock() }()
	switch {
	case e.infra == c.Hash:
		return errors.New("qemu: cannot start")
	case e.panics[c.Hash]:
		return &bisect.SkipError{Why: "does not boot (panic)", Err: errors.New("Kernel panic")}
	}
	return ctx.Err()
}

func states(out []Disposition) map[string]string {
	m := map[string]string{}
	for _, o := range out {
		m[o.Hash] = o.State
	}
	return m
}

func TestSelect(t *testing.T) {
	_, cs := chain(10)
	for _, tc := range []struct {
		every int
		want  []string
	}{
		{0, hashes(cs)},
		{1, hashes(cs)},
		{3, []string{"c3", "c6", "c9", "c10"}},
		{5, []string{"c5", "c10"}},
		{20, []string{"c10"}}, // to, always
	} {
		if got := hashes(Select(cs, tc.every)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("every %d: %v, want %v", tc.every, got, tc.want)
		}
	}
	// By place along the branch: a later, longer range picks the same.
	_, longer := chain(13)
	if got := hashes(Select(longer, 3)); !reflect.DeepEqual(got, []string{"c3", "c6", "c9", "c12", "c13"}) {
		t.Errorf("every 3 of 13: %v", got)
	}
}

func TestDeal(t *testing.T) {
	for _, tc := range []struct {
		n, shards int
	}{{10, 1}, {10, 3}, {3, 4}, {12, 4}, {1, 2}} {
		seen := make([]int, tc.n)
		prevHi := 0
		for k := range tc.shards {
			lo, hi := Deal(tc.n, shard.Shard{K: k, N: tc.shards})
			if lo != prevHi || hi < lo {
				t.Errorf("%d commits, shard %d/%d: [%d,%d) after %d: not contiguous", tc.n, k, tc.shards, lo, hi, prevHi)
			}
			if hi-lo > tc.n/tc.shards+1 || hi-lo < tc.n/tc.shards {
				t.Errorf("%d commits, shard %d/%d: %d commits: unbalanced", tc.n, k, tc.shards, hi-lo)
			}
			for i := lo; i < hi; i++ {
				seen[i]++
			}
			prevHi = hi
		}
		for i, n := range seen {
			if n != 1 {
				t.Errorf("%d commits over %d shards: commit %d dealt %d times", tc.n, tc.shards, i, n)
			}
		}
	}
}

func TestWalk(t *testing.T) {
	from, cs := chain(8)
	for _, tc := range []struct {
		name    string
		env     *fakeEnv
		opt     WalkOptions
		want    map[string]string
		booted  []string
		built   []string // nil: not checked
		wantErr bool
	}{
		{
			name:   "every commit measured, the parent built for the first comparison",
			env:    &fakeEnv{},
			want:   map[string]string{"c1": Measured, "c2": Measured, "c3": Measured, "c4": Measured, "c5": Measured, "c6": Measured, "c7": Measured, "c8": Measured},
			booted: hashes(cs),
			built:  append([]string{"c0"}, hashes(cs)...),
		},
		{
			name:   "a commit whose image is its parent's is not booted",
			env:    &fakeEnv{images: map[string]string{"c0": "A", "c1": "A", "c2": "B", "c3": "B", "c4": "B", "c5": "C", "c6": "A", "c7": "A", "c8": "D"}},
			want:   map[string]string{"c1": NoCode, "c2": Measured, "c3": NoCode, "c4": NoCode, "c5": Measured, "c6": Measured, "c7": NoCode, "c8": Measured},
			booted: []string{"c2", "c5", "c6", "c8"},
		},
		{
			name:   "resume: commits in the history are neither built nor booted, their images still compared",
			env:    &fakeEnv{images: map[string]string{"c4": "img-c3"}},
			opt:    WalkOptions{Done: map[string]string{"c0": "img-c0", "c1": "img-c1", "c2": "img-c2", "c3": "img-c3"}},
			want:   map[string]string{"c1": InHistory, "c2": InHistory, "c3": InHistory, "c4": NoCode, "c5": Measured, "c6": Measured, "c7": Measured, "c8": Measured},
			booted: []string{"c5", "c6", "c7", "c8"},
			built:  []string{"c4", "c5", "c6", "c7", "c8"},
		},
		{
			name:   "shard 1/3 takes its block; its first parent is the block before's last",
			env:    &fakeEnv{},
			opt:    WalkOptions{Shard: shard.Shard{K: 1, N: 3}},
			want:   map[string]string{"c1": OtherShard, "c2": OtherShard, "c3": OtherShard, "c4": Measured, "c5": Measured, "c6": Measured, "c7": OtherShard, "c8": OtherShard},
			booted: []string{"c4", "c5", "c6"},
			built:  []string{"c3", "c4", "c5", "c6"},
		},
		{
			name:   "a commit that does not build, a kernel that panics: recorded, the track goes on",
			env:    &fakeEnv{noBuild: map[string]bool{"c2": true}, panics: map[string]bool{"c3": true}},
			want:   map[string]string{"c1": Measured, "c2": NoBuild, "c3": BootFailed, "c4": Measured, "c5": Measured, "c6": Measured, "c7": Measured, "c8": Measured},
			booted: []string{"c1", "c3", "c4", "c5", "c6", "c7", "c8"},
		},
		{
			name:    "QEMU failing stops the track; what did not boot is not reached",
			env:     &fakeEnv{infra: "c3"},
			want:    map[string]string{"c1": Measured, "c2": Measured, "c3": NotReached, "c4": NotReached, "c5": NotReached, "c6": NotReached, "c7": NotReached, "c8": NotReached},
			booted:  []string{"c1", "c2", "c3"},
			wantErr: true,
		},
		{
			name:   "three boots a commit under the wall clock, one at a time",
			env:    &fakeEnv{boots: 3, images: map[string]string{"c2": "img-c1", "c3": "img-c1", "c4": "img-c1", "c5": "img-c1", "c6": "img-c1", "c7": "img-c1", "c8": "img-c1"}},
			want:   map[string]string{"c1": Measured, "c2": NoCode, "c3": NoCode, "c4": NoCode, "c5": NoCode, "c6": NoCode, "c7": NoCode, "c8": NoCode},
			booted: []string{"c1", "c1", "c1"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := tc.env
			env.mu = &sync.Mutex{}
			out, err := Walk(context.Background(), env, from, cs, tc.opt)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, want an error: %v", err, tc.wantErr)
			}
			if got := states(out); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("states\n got %v\nwant %v", got, tc.want)
			}
			if !reflect.DeepEqual(env.booted, tc.booted) {
				t.Errorf("booted %v, want %v", env.booted, tc.booted)
			}
			if tc.built != nil && !reflect.DeepEqual(env.built, tc.built) {
				t.Errorf("built %v, want %v", env.built, tc.built)
			}
			if env.most > 1 {
				t.Errorf("%d boots at once without Parallel", env.most)
			}
		})
	}
}

// With --every K a selected commit's parent was not measured: one whose
// image is its parent's is still not booted (a documentation commit at a
// selected place), and the parent is built only to compare.
func TestWalkEveryKComparesWithTheParent(t *testing.T) {
	from, cs := chain(8)
	for i := range cs {
		cs[i].Parent = from.Hash
		if i > 0 {
			cs[i].Parent = cs[i-1].Hash
		}
	}
	sel := Select(cs, 2) // c2 c4 c6 c8
	env := &fakeEnv{mu: &sync.Mutex{}, images: map[string]string{"c3": "X", "c4": "X"}, noBuild: map[string]bool{"c7": true}}
	out, err := Walk(context.Background(), env, from, sel, WalkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"c2": Measured, "c4": NoCode, "c6": Measured, "c8": Measured}
	if got := states(out); !reflect.DeepEqual(got, want) {
		t.Errorf("states %v, want %v", got, want)
	}
	if out[1].SameAs != "c3" {
		t.Errorf("c4 has the image of %q, want its parent c3", out[1].SameAs)
	}
	if want := []string{"c2", "c6", "c8"}; !reflect.DeepEqual(env.booted, want) {
		t.Errorf("booted %v, want %v", env.booted, want)
	}
	if want := []string{"c0", "c2", "c1", "c4", "c3", "c6", "c5", "c8", "c7"}; !reflect.DeepEqual(env.built, want) {
		t.Errorf("built %v, want %v", env.built, want)
	}
}

func TestWalkOverlapsBuildsWithBoots(t *testing.T) {
	from, cs := chain(4)
	// The boot of c(k) waits for the build of c(k+1): without the
	// overlap, the walk would never end.
	env := &overlapEnv{fakeEnv: &fakeEnv{mu: &sync.Mutex{}}, built: map[string]chan struct{}{}, waits: map[string]chan struct{}{}}
	for k := 0; k+1 < len(cs); k++ {
		ch := make(chan struct{})
		env.waits[cs[k].Hash], env.built[cs[k+1].Hash] = ch, ch
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := Walk(ctx, env, from, cs, WalkOptions{Parallel: 2, Overlap: true})
	if err != nil {
		t.Fatalf("%v: the builder waited for the boots", err)
	}
	for _, o := range out {
		if o.State != Measured {
			t.Errorf("%s: %s, want measured", o.Hash, o.State)
		}
	}
	slices.Sort(env.booted)
	if !reflect.DeepEqual(env.booted, hashes(cs)) {
		t.Errorf("booted %v", env.booted)
	}
}

// overlapEnv: the boot of commit k waits for the build of commit k+1.
type overlapEnv struct {
	*fakeEnv
	built map[string]chan struct{} // closed when the commit is built
	waits map[string]chan struct{} // what the commit's boot waits for
}

func (e *overlapEnv) Image(ctx context.Context, c Commit) (string, error) {
	img, err := e.fakeEnv.Image(ctx, c)
	if ch, ok := e.built[c.Hash]; ok {
		close(ch)
	}
	return img, err
}

func (e *overlapEnv) Boot(ctx context.Context, c Commit, j int) error {
	e.mu.Lock()
	e.active++
	e.mu.Unlock()
	defer func() { e.mu.Lock(); e.active--; e.booted = append(e.booted, c.Hash); e.mu.Unlock() }()
	if ch, ok := e.waits[c.Hash]; ok {
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
