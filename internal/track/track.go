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
	"lab/internal/shard"
)

// Commit is one commit of the tracked branch.
type Commit struct {
	Hash    string
	Subject string
	Seq     int // its place along the branch: git rev-list --count --first-parent
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

// Outcome is what the track did with one selected commit.
type Outcome struct {
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
func Walk(ctx context.Context, env Env, parent Commit, sel []Commit, opt WalkOptions) ([]Outcome, error) {
	logf := opt.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	out := make([]Outcome, len(sel))
	lo, hi := Deal(len(sel), opt.Shard)
	for i, c := range sel {
		out[i] = Outcome{Commit: c, State: NotReached}
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
	// The parent's image: the history's, or built (from the cache when an
	// earlier track or a neighbouring shard built it).
	prevImage, known := opt.Done[prev.Hash]
	if !known || prevImage == "" {
		img, err := env.Image(ctx, prev)
		var skip *bisect.SkipError
		switch {
		case errors.As(err, &skip):
			prevImage = "" // a parent that does not build: its child is measured
		case err != nil:
			return out, fmt.Errorf("the kernel of %s, the parent of the first commit: %w", short(prev.Hash), err)
		default:
			prevImage = img
		}
	}

	// Boots run on workers while the builder goes on to the next commit:
	// the builder hands a commit's boots over one at a time, and a send
	// returns once a worker has taken the boot.
	type bootJob struct{ i, j int }
	jobs := make(chan bootJob)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		mu     sync.Mutex
		wg     sync.WaitGroup
		booted = make([]int, len(sel)) // boots done, failed ones included
	)
	boot := func(b bootJob) {
		err := env.Boot(ctx, sel[b.i], b.j)
		mu.Lock()
		defer mu.Unlock()
		var skip *bisect.SkipError
		switch {
		case errors.As(err, &skip):
			out[b.i].State, out[b.i].Why = BootFailed, skip.Error()
			booted[b.i]++
		case err != nil:
			cancel(err)
		default:
			booted[b.i]++
		}
	}
	workers := max(opt.Parallel, 1)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range jobs {
				if ctx.Err() == nil {
					boot(b)
				}
			}
		}()
	}
	builderErr := func() error {
		for i := lo; i < hi; i++ {
			c := sel[i]
			if img, ok := opt.Done[c.Hash]; ok {
				out[i].State, out[i].Image = InHistory, img
				logf("track: %s %s: in the history already", short(c.Hash), c.Subject)
				if img == "" {
					prevImage = "" // unknown: the next commit is measured
				} else {
					prevImage = img
				}
				prev = c
				continue
			}
			img, err := env.Image(ctx, c)
			var skip *bisect.SkipError
			switch {
			case errors.As(err, &skip):
				mu.Lock()
				out[i].State, out[i].Why = NoBuild, skip.Error()
				mu.Unlock()
				logf("track: %s %s: %s", short(c.Hash), c.Subject, skip.Error())
				prevImage, prev = "", c
				continue
			case err != nil:
				return err
			}
			mu.Lock()
			out[i].Image = img
			mu.Unlock()
			if img == prevImage {
				mu.Lock()
				out[i].State, out[i].SameAs = NoCode, prev.Hash
				mu.Unlock()
				logf("track: %s %s: no code change (the image of %s): not booted", short(c.Hash), c.Subject, short(prev.Hash))
				prev = c
				continue
			}
			mu.Lock()
			out[i].State = Measured
			mu.Unlock()
			prevImage, prev = img, c
			for j := range env.Boots() {
				if !opt.Overlap {
					// Under the wall clock nothing runs beside a boot:
					// not the next build, not another boot.
					boot(bootJob{i, j})
					continue
				}
				select {
				case jobs <- bootJob{i, j}:
				case <-ctx.Done():
					return context.Cause(ctx)
				}
			}
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
		}
		return nil
	}()
	close(jobs)
	wg.Wait()
	if builderErr == nil {
		builderErr = context.Cause(ctx)
	}
	for i := lo; i < hi; i++ {
		if out[i].State == Measured && booted[i] < env.Boots() {
			out[i].State = NotReached // its boots did not all run
		}
	}
	return out, builderErr
}

func short(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}
