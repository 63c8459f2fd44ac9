package source

import (
	"context"
	"fmt"

	"lab/internal/series"
	"lab/internal/variant"
)

// Several is how a run of several series (v1, v2 of one series, or two
// approaches) makes its kernels: one baseline, and each series applied on
// it.
type Several struct {
	Baseline string       // the baseline's commit
	Mode     string       // apply: the baseline is the source; revert: the source without one series
	Why      string       // how the baseline was chosen
	Each     []Resolution // each series' commits: the baseline, and it applied on the baseline
}

// ResolveSeveral chooses the baseline of several series and makes each
// series' commit on it. When some series is already in the source (it
// applies in reverse), the baseline is the source with the one of most
// patches reverted (the first of them on a tie), so that every version is
// measured on the base they were written for; otherwise it is the source.
// Each series is then applied forward on the baseline (git am), so a
// series that is in the source reproduces the source's tree, and its
// kernel is the cached one. Mode apply (the lab's) takes the source as the
// baseline whatever it carries; revert needs a series in the source.
func (t *Tree) ResolveSeveral(ctx context.Context, list []*series.Series, mode string) (Several, error) {
	var out Several
	chosen := -1
	if mode != series.ModeApply {
		for i, s := range list {
			pair, err := t.Variants(ctx, s, series.ModeRevert)
			if err != nil {
				continue // not in the source: it goes on forward, or fails below
			}
			if chosen < 0 || len(s.Patches) > len(list[chosen].Patches) {
				chosen, out.Baseline = i, pair.Baseline
			}
		}
	}
	switch {
	case chosen >= 0:
		s := list[chosen]
		out.Mode = series.ModeRevert
		out.Why = fmt.Sprintf("revert: series %s is in the source (%s, each applies in reverse; of the series in the source, the one with the most patches): the baseline is the source without it, and each series is applied on that baseline",
			s.Name, patches(len(s.Patches)))
	case mode == series.ModeRevert:
		return out, fmt.Errorf("mode revert: none of the %d series applies in reverse on %s: the source carries none of them (mode apply or auto takes the source as the baseline)", len(list), t.Desc)
	default:
		out.Baseline, out.Mode = t.BaseHash, series.ModeApply
		out.Why = "apply: no series is in the source (none applies in reverse): the baseline is the source, and each series is applied on it"
		if mode == series.ModeApply {
			out.Why = "apply: the lab's mode: the baseline is the source, and each series is applied on it"
		}
	}
	for _, s := range list {
		commit, err := t.ApplyOn(ctx, s, out.Baseline)
		if err != nil {
			return Several{}, fmt.Errorf("series %s on the baseline (%s): %w", s.Name, out.Mode, err)
		}
		out.Each = append(out.Each, Resolution{Commits: variant.Pair[string]{Baseline: out.Baseline, Patched: commit}, Mode: out.Mode, Why: out.Why})
	}
	return out, nil
}

func patches(n int) string {
	if n == 1 {
		return "1 patch"
	}
	return fmt.Sprintf("%d patches", n)
}

// ApplyOn returns the commit of series s applied forward on commit base,
// making it on first use and keeping it under refs/lab/ (on the source's
// own commit it is the patched commit of Variants in mode apply). A series
// that does not apply leaves the tree at the source's commit.
func (t *Tree) ApplyOn(ctx context.Context, s *series.Series, base string) (string, error) {
	ref := fmt.Sprintf("refs/lab/%s-%s-%s", base[:12], series.ModeApply, s.Hash()[:16])
	if commit, err := t.git.Output(ctx, "rev-parse", "--verify", "-q", ref); err == nil && commit != "" {
		return commit, nil
	}
	if err := t.Checkout(ctx, base); err != nil {
		return "", err
	}
	if err := s.Apply(ctx, t.git); err != nil {
		if cerr := t.Checkout(ctx, t.BaseHash); cerr != nil {
			return "", fmt.Errorf("%w (and resetting the tree: %v)", err, cerr)
		}
		return "", err
	}
	commit, err := t.git.Output(ctx, "rev-parse", "HEAD")
	if err != nil {
		return "", err
	}
	if _, err := t.git.Run(ctx, "update-ref", ref, commit); err != nil {
		return "", err
	}
	return commit, nil
}
