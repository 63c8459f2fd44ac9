// Package track measures a branch into the history: each first-parent
// commit of a range (or every K-th) once, building incrementally from the
// content cache and booting while the next commit builds. A commit whose
// kernel image is its parent's is not booted (it changed no code); one the
// history has already is skipped, so an interrupted track resumes; shards
// take contiguous blocks of commits, so each builds incrementally too.
//
// The walk runs against an Env, so that selection, resume, sharding and
// the pipeline are tested with a fake one; the real Env (env.go) builds
// with lab run's kernels and boots with its booter.
package track

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"lab/internal/bisect"
	"lab/internal/gitcmd"
	"lab/internal/shard"
)

// Commit is one commit of the tracked branch.
type Commit struct {
	Hash    string
	Subject string
	Seq     int // its place along the branch: git rev-list --count --first-parent
	// Parent is its first parent: with --every K, a selected commit's
	// parent is often not the commit measured before it.
	Parent string
}

// Env builds and boots the commits of a track. Image builds a commit's
// kernel (from the cache when it can) and returns its image's sha256; a
// *bisect.SkipError says the commit does not build. Boot boots it for its
// j-th boot of Boots(); a *bisect.SkipError says the kernel failed the
// boot (recorded, the track goes on), any other error stops the track.
type Env interface {
	Image(ctx context.Context, c Commit) (string, error)
	Boots() int
	Boot(ctx context.Context, c Commit, j int) error
}

// States of a commit in a track.
const (
	Measured   = "measured"
	NoCode     = bisect.NoCode // its image is its parent's: not booted
	InHistory  = "in the history"
	NoBuild    = "does not build"
	BootFailed = "boot failed" // the kernel failed a boot (a panic, a hang)
	OtherShard = "another shard's"
	NotReached = "not reached" // the track stopped before it (or before all its boots)
)

// Disposition is what the track did with one selected commit.
type Disposition struct {
	Commit
	State  string
	Image  string // sha256 of its kernel image, once known
	SameAs string // NoCode: the commit whose image it has
	Why    string // NoBuild, BootFailed: the first line of why
}

// Select picks the commits to measure from the chain (from, to], oldest
// first: every commit when every <= 1, else those whose place along the
// branch is a multiple of every, and always the last (to). Places, not
// positions in the range, choose: a later track of a longer range picks
// the same commits, and finds them in the history.
func Select(chain []Commit, every int) []Commit {
	if every <= 1 {
		return chain
	}
	var out []Commit
	for i, c := range chain {
		if c.Seq%every == 0 || i == len(chain)-1 {
			out = append(out, c)
		}
	}
	return out
}

// Deal gives shard sh its contiguous block of the selected commits: the
// first n%N shards take one more. It returns the block's bounds [lo, hi)
// in sel. Blocks, not round-robin: a shard's commits follow each other,
// so its builds are incremental and only its first commit's parent is
// built for the comparison of images.
func Deal(n int, sh shard.Shard) (lo, hi int) {
	if sh.N <= 1 {
		return 0, n
	}
	size, extra := n/sh.N, n%sh.N
	lo = sh.K*size + min(sh.K, extra)
	hi = lo + size
	if sh.K < extra {
		hi++
	}
	return lo, hi
}

// WalkOptions are how a walk goes.
type WalkOptions struct {
	Shard shard.Shard
	// Done maps the commits the history has (in this shape, on this host)
	// to their images ("" when unknown): they are not measured again.
	Done map[string]string
	// Parallel is how many boots run at once (icount: a guest beside
	// another does not change its figures); 0 or 1: one at a time.
	Parallel int
	// Overlap builds the next commit while the last one's boots run
	// (icount only: under the wall clock a build would slow the guests).
	Overlap bool
	Logf    func(format string, args ...any)
}

// Walk measures the selected commits of shard opt.Shard; parent is the
// commit before sel[0] (the range's from). It returns every selected
// commit's outcome (another shard's marked so) and the error that stopped
// it, if any.
func Walk(ctx context.Context, env Env, parent Commit, sel []Commit, opt WalkOptions) ([]Disposition, error) {
	if opt.Logf == nil {
		opt.Logf = func(string, ...any) {}
	}
	out := make([]Disposition, len(sel))
	lo, hi := Deal(len(sel), opt.Shard)
	for i, c := range sel {
		out[i] = Disposition{Commit: c, State: NotReached}
		if i < lo || i >= hi {
			out[i].State = OtherShard
		}
	}
	if lo == hi {
		return out, nil
	}
	prev := parent
	if lo > 0 {
		prev = sel[lo-1]
	}
	prevImage, err := parentImage(ctx, env, prev, opt.Done)
	if err != nil {
		return out, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	w := &walker{env: env, sel: sel, out: out, opt: opt, cancel: cancel, booted: make([]int, len(sel)), jobs: make(chan bootJob)}
	wg := w.startWorkers(ctx)
	builderErr := w.build(ctx, lo, hi, prev, prevImage)
	close(w.jobs)
	wg.Wait()
	if builderErr == nil {
		builderErr = context.Cause(ctx)
	}
	for i := lo; i < hi; i++ {
		if out[i].State == Measured && w.booted[i] < env.Boots() {
			out[i].State = NotReached // its boots did not all run
		}
	}
	return out, builderErr
}

// parentImage is the image of the commit before the shard's first: the
// history's, or built (from the cache when an earlier track or a
// neighbouring shard built it); "" when it does not build, so that its
// child is measured.
func parentImage(ctx context.Context, env Env, prev Commit, done map[string]string) (string, error) {
	if prev.Hash == "" {
		return "", nil // no commit before: the first is measured
	}
	if img, known := done[prev.Hash]; known && img != "" {
		return img, nil
	}
	img, err := env.Image(ctx, prev)
	var skip *bisect.SkipError
	switch {
	case errors.As(err, &skip):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("the kernel of %s, the parent of the first commit: %w", gitcmd.Short(prev.Hash), err)
	}
	return img, nil
}

// bootJob is boot j of selected commit i.
type bootJob struct{ i, j int }

// walker is one Walk: boots run on workers while the builder goes on to
// the next commit; the builder hands a commit's boots over one at a time,
// and a send returns once a worker has taken the boot.
type walker struct {
	env    Env
	sel    []Commit
	opt    WalkOptions
	cancel context.CancelCauseFunc
	jobs   chan bootJob
	mu     sync.Mutex // guards out and booted: workers and the builder write them
	out    []Disposition
	booted []int // boots done per commit, failed ones included
}

func (w *walker) startWorkers(ctx context.Context) *sync.WaitGroup {
	var wg sync.WaitGroup
	for range max(w.opt.Parallel, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range w.jobs {
				if ctx.Err() == nil {
					w.boot(ctx, b)
				}
			}
		}()
	}
	return &wg
}

// boot runs one boot; a boot that fails is the commit's, anything else
// stops the walk.
func (w *walker) boot(ctx context.Context, b bootJob) {
	err := w.env.Boot(ctx, w.sel[b.i], b.j)
	w.mu.Lock()
	defer w.mu.Unlock()
	var skip *bisect.SkipError
	switch {
	case errors.As(err, &skip):
		w.out[b.i].State, w.out[b.i].Why = BootFailed, skip.Error()
		w.booted[b.i]++
	case err != nil:
		w.cancel(err)
	default:
		w.booted[b.i]++
	}
}

// set records what became of commit i.
func (w *walker) set(i int, f func(o *Disposition)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f(&w.out[i])
}

// build goes through the shard's commits: each one in the history is
// skipped, each whose image is its parent's is not booted, the others'
// boots are handed to the workers (or run here, without overlap).
func (w *walker) build(ctx context.Context, lo, hi int, prev Commit, prevImage string) error {
	logf := w.opt.Logf
	for i := lo; i < hi; i++ {
		c := w.sel[i]
		if img, ok := w.opt.Done[c.Hash]; ok {
			w.set(i, func(o *Disposition) { o.State, o.Image = InHistory, img })
			logf("track: %s %s: in the history already", gitcmd.Short(c.Hash), c.Subject)
			prevImage, prev = img, c // "" when unknown: the next commit is measured
			continue
		}
		img, err := w.env.Image(ctx, c)
		var skip *bisect.SkipError
		switch {
		case errors.As(err, &skip):
			w.set(i, func(o *Disposition) { o.State, o.Why = NoBuild, skip.Error() })
			logf("track: %s %s: %s", gitcmd.Short(c.Hash), c.Subject, skip.Error())
			prevImage, prev = "", c
			continue
		case err != nil:
			return err
		}
		same := prev
		if img != prevImage {
			var err error
			if same, err = w.sameAsParent(ctx, c, prev, img); err != nil {
				return err
			}
		}
		if same.Hash != "" {
			w.set(i, func(o *Disposition) { o.Image, o.State, o.SameAs = img, NoCode, same.Hash })
			logf("track: %s %s: no code change (the image of %s): not booted", gitcmd.Short(c.Hash), c.Subject, gitcmd.Short(same.Hash))
			prev = c
			continue
		}
		w.set(i, func(o *Disposition) { o.Image, o.State = img, Measured })
		prevImage, prev = img, c
		if err := w.hand(ctx, i); err != nil {
			return err
		}
	}
	return nil
}

// sameAsParent is c's first parent when c has its image and the parent
// was not the commit measured before c (a track of every K-th commit): a
// documentation- or comment-only commit is not booted whatever its place.
// The parent's build is incremental (c is one commit from it); a parent
// that does not build says nothing, and c is measured.
func (w *walker) sameAsParent(ctx context.Context, c, prev Commit, img string) (Commit, error) {
	if c.Parent == "" || c.Parent == prev.Hash {
		return Commit{}, nil
	}
	parent := Commit{Hash: c.Parent, Subject: "the parent of " + gitcmd.Short(c.Hash), Seq: c.Seq - 1}
	pimg, err := w.env.Image(ctx, parent)
	var skip *bisect.SkipError
	switch {
	case errors.As(err, &skip):
		return Commit{}, nil
	case err != nil:
		return Commit{}, err
	case pimg == img:
		return parent, nil
	}
	return Commit{}, nil
}

// hand gives commit i's boots to the workers, or, without overlap (the
// wall clock: nothing runs beside a boot, not the next build, not another
// boot), runs them here.
func (w *walker) hand(ctx context.Context, i int) error {
	for j := range w.env.Boots() {
		if !w.opt.Overlap {
			w.boot(ctx, bootJob{i, j})
			continue
		}
		select {
		case w.jobs <- bootJob{i, j}:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return nil
}
