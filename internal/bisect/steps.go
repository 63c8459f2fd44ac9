package bisect

import (
	"context"
	"errors"
	"fmt"
	"time"

	"lab/internal/gitcmd"
	"lab/internal/kbuild"
	"lab/internal/results"
	"lab/internal/runfolder"
	"lab/internal/series"
	"lab/internal/source"
	"lab/internal/spec"
	"lab/internal/variant"
)

// seriesSteps: step k is the source with the first k patches of the series.
func (b *bisector) seriesSteps(ctx context.Context) error {
	ser, err := b.lab.OpenSeries()
	if err != nil {
		return err
	}
	defer ser.Close()
	resolved, err := b.tree.ResolveSeries(ctx, []*series.Series{ser}, b.lab.Mode) // mode auto: the mode the series goes on in
	if err != nil {
		return err
	}
	res := resolved.Each[0]
	commits, mode := res.Commits, res.Mode
	bisected := results.Series{Name: ser.Name, Mode: mode, Hash: ser.Hash(), Variants: commits, ModeAsked: b.lab.Mode, ModeReason: res.Why, Variant: variant.Patched}
	for _, p := range ser.Patches {
		bisected.Patches = append(bisected.Patches, results.Patch{Name: p.Name, Subject: p.Subject, SHA256: p.SHA256})
	}
	b.run.Series = []results.Series{bisected}
	n := len(ser.Patches)
	var at []string // the commit of each step
	if mode == spec.ModeRevert {
		// The source has the series; lab reverted it last patch first:
		// base, -pN, -pN-1, ..., -p1 (the baseline).
		chain, err := b.tree.Chain(ctx, b.tree.BaseHash, commits.Baseline)
		if err != nil {
			return err
		}
		if len(chain) != n {
			return fmt.Errorf("revert of %s: %d commits for %d patches", ser.Name, len(chain), n)
		}
		at = make([]string, n+1)
		at[n] = b.tree.BaseHash
		for k := 0; k < n; k++ {
			at[k] = chain[n-1-k]
		}
	} else {
		chain, err := b.tree.Chain(ctx, b.tree.BaseHash, commits.Patched)
		if err != nil {
			return err
		}
		if len(chain) != n {
			return fmt.Errorf("git am of %s: %d commits for %d patches", ser.Name, len(chain), n)
		}
		at = append([]string{b.tree.BaseHash}, chain...)
	}
	b.run.Bisect.Range = fmt.Sprintf("series %s (%s mode, %d patches)", ser.Name, mode, n)
	b.steps = []results.BisectStep{{Index: 0, Name: "baseline", Subject: "the source without the series", Commit: at[0], SameAs: -1}}
	for k, p := range ser.Patches {
		b.steps = append(b.steps, results.BisectStep{Index: k + 1, Name: p.Name, Subject: p.Subject, Commit: at[k+1], SameAs: -1})
	}
	return nil
}

// resolveEnds resolves --good and --bad to commits of the lab's git source.
func (b *bisector) resolveEnds(ctx context.Context) (good, bad string, err error) {
	if good, err = b.tree.Resolve(ctx, b.opt.Good); err != nil {
		return "", "", err
	}
	if bad, err = b.tree.Resolve(ctx, b.opt.Bad); err != nil {
		return "", "", err
	}
	return good, bad, nil
}

// rangeSteps: step 0 is --good, step k the k-th first-parent commit after
// it, up to --bad.
func (b *bisector) rangeSteps(ctx context.Context) error {
	good, bad, err := b.resolveEnds(ctx)
	if err != nil {
		return err
	}
	chain, err := b.tree.Chain(ctx, good, bad)
	if err != nil {
		return err
	}
	b.run.Bisect.Range = fmt.Sprintf("git %s..%s (%d first-parent commits)", b.opt.Good, b.opt.Bad, len(chain))
	b.run.Series = []results.Series{{Name: "git " + b.opt.Good + ".." + b.opt.Bad, Variants: variant.Pair[string]{Baseline: good, Patched: bad}, Variant: variant.Patched}}
	top, err := b.tree.Place(ctx, bad)
	if err != nil {
		return err
	}
	// The chain is bad's first-parent line back to good: places count
	// down from bad's.
	first := top - len(chain) + 1
	b.steps = []results.BisectStep{{Index: 0, Name: gitcmd.Short(good), Subject: subjectOf(ctx, b.tree, good), Commit: good, SameAs: -1, Seq: first - 1}}
	for k, c := range chain {
		b.steps = append(b.steps, results.BisectStep{Index: k + 1, Name: gitcmd.Short(c), Subject: subjectOf(ctx, b.tree, c), Commit: c, SameAs: -1, Seq: first + k})
	}
	return nil
}

// probeSteps: --good, the git source's HEAD (where git bisect stands),
// --bad.
func (b *bisector) probeSteps(ctx context.Context) error {
	good, bad, err := b.resolveEnds(ctx)
	if err != nil {
		return err
	}
	// git bisect --no-checkout (lab builds in its own work tree, so the
	// user's need not be rewritten) moves BISECT_HEAD, not HEAD.
	user := &gitcmd.Git{Dir: b.lab.Source.Git}
	head, err := user.Output(ctx, "rev-parse", "--verify", "-q", "BISECT_HEAD^{commit}")
	if err != nil {
		if head, err = user.Output(ctx, "rev-parse", "--verify", "HEAD^{commit}"); err != nil {
			return fmt.Errorf("--run: the HEAD of %s: %w", b.lab.Source.Git, err)
		}
	}
	if head == good || head == bad {
		return fmt.Errorf("--run: HEAD of %s is the %s end itself (%s)", b.lab.Source.Git, map[bool]string{true: "good", false: "bad"}[head == good], gitcmd.Short(head))
	}
	b.run.Bisect.Range = fmt.Sprintf("git bisect run: HEAD %s between %s and %s", gitcmd.Short(head), b.opt.Good, b.opt.Bad)
	b.run.Series = []results.Series{{Name: "git " + b.opt.Good + ".." + b.opt.Bad, Variants: variant.Pair[string]{Baseline: good, Patched: bad}, Variant: variant.Patched}}
	for k, c := range []string{good, head, bad} {
		b.steps = append(b.steps, results.BisectStep{Index: k, Name: gitcmd.Short(c), Subject: subjectOf(ctx, b.tree, c), Commit: c, SameAs: -1})
	}
	return nil
}

func subjectOf(ctx context.Context, t *source.Tree, c string) string {
	s, _ := t.Subject(ctx, c)
	return s
}

// Steps is the number of patches (or commits): the search's N.
func (b *bisector) Steps() int { return len(b.steps) - 1 }

// Image builds step k's kernel, from the cache when it can.
func (b *bisector) Image(ctx context.Context, k int) (string, error) {
	st := &b.steps[k]
	if st.Kernel != nil {
		return st.Kernel.Info.ImageSHA256, nil
	}
	start := time.Now()
	label := fmt.Sprintf("step %d (%s)", k, st.Name)
	kern, err := b.bench.Kernel(ctx, b.plan.Arch, st.Commit, label)
	b.rep.BuildDone(label)
	var be *kbuild.BuildError
	if errors.As(err, &be) {
		return "", &SkipError{Why: "does not build", Err: errors.New(b.blame(ctx, k, be))}
	}
	if err != nil {
		return "", err
	}
	if !kern.Cached {
		st.BuildSeconds = time.Since(start).Seconds()
	}
	kern.Variant = b.variantOf(k)
	b.mu.Lock()
	defer b.mu.Unlock()
	st.Kernel = &kern
	b.run.Kernels = append(b.run.Kernels, kern)
	return kern.Info.ImageSHA256, runfolder.Folder{Dir: b.dir}.Save(b.run)
}

// blame says why a step does not compile, first line first: the
// compiler's error (file and line, relative to the tree) and the step that
// last touched that file; make's output follows.
func (b *bisector) blame(ctx context.Context, k int, be *kbuild.BuildError) string {
	msg := be.Err.Error()
	line, ok := kbuild.Blame(be, func(file string) (string, []string) {
		for j := k; j >= 1; j-- {
			changed, err := b.tree.Changed(ctx, b.steps[j-1].Commit, b.steps[j].Commit)
			if err != nil {
				break
			}
			for _, c := range changed {
				if kbuild.SameFile(file, c) {
					return c, []string{b.steps[j].Name}
				}
			}
		}
		return "", nil
	})
	if !ok {
		return msg
	}
	return line + "\n" + msg
}

func (b *bisector) variantOf(k int) variant.Variant {
	switch k {
	case 0:
		return variant.Baseline
	case len(b.steps) - 1:
		return variant.Patched
	}
	return ""
}
