package source

import (
	"context"
	"errors"
	"fmt"

	"lab/internal/gitcmd"
	"lab/internal/series"
	"lab/internal/variant"
)

// Resolved is how a run makes its kernels from its series: one baseline,
// and each series' commit on it.
type Resolved struct {
	Baseline string       // the baseline's commit
	Mode     string       // revert: the baseline is the source without a series it carries; apply: the source
	Why      string       // how the baseline was chosen
	Each     []Resolution // each series': the baseline and its own commit
}

// ResolveSeries chooses the baseline of a run's series and makes each series'
// commit on it; one series is the case of one.
//
// A series the source already carries applies in reverse on it (Debian's
// 6.12 carries the three seed series), one it lacks forward. Mode revert
// and auto take as the baseline the source without the series in it of
// most patches (the first of them on a tie), so that every version is
// measured on the base it was written for; that series' kernel is the
// source itself, and every other series is applied forward (git am) on
// the baseline. Mode apply, and auto when no series is in the source,
// take the source as the baseline. Auto also tries each series forward on
// the source: one that applies both ways (the lines it changes are there
// before and after it) is an error asking for the mode, and one that goes
// on neither way is a *NeitherWayError naming the patch, file and hunk of
// each attempt. Commits are kept under refs/lab/, so resolving again
// gives the same ones.
func (t *Tree) ResolveSeries(ctx context.Context, list []*series.Series, mode string) (Resolved, error) {
	tries, err := t.tryOnSource(ctx, list, mode)
	if err != nil {
		return Resolved{}, err
	}
	out, chosen, err := t.chooseBaseline(list, mode, tries)
	if err != nil {
		return Resolved{}, err
	}
	for i, s := range list {
		commit := t.BaseHash // the series in the source: its kernel is the source's
		if i != chosen {
			if commit, err = t.ApplyOn(ctx, s, out.Baseline); err != nil {
				return Resolved{}, applyError(s, out, mode, tries[i], err)
			}
		}
		out.Each = append(out.Each, Resolution{Commits: variant.Pair[string]{Baseline: out.Baseline, Patched: commit}, Mode: out.Mode, Why: out.Why})
	}
	return out, nil
}

// onSource is how one series went on the source: in reverse and (mode
// auto) forward.
type onSource struct {
	reverse       variant.Pair[string]
	rerr, forward error
}

// tryOnSource tries each series in reverse on the source (unless the mode
// is apply) and, for mode auto, forward too, refusing one that goes on
// both ways.
func (t *Tree) tryOnSource(ctx context.Context, list []*series.Series, mode string) ([]onSource, error) {
	tries := make([]onSource, len(list))
	for i, s := range list {
		tries[i].rerr = errors.New("not tried")
		if mode != series.ModeApply {
			tries[i].reverse, tries[i].rerr = t.Variants(ctx, s, series.ModeRevert)
		}
		// An interrupted try says nothing of whether the series goes
		// on: never take it for one that does not.
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("try series %s on %s: %w", s.Name, t.Desc, err)
		}
		if mode != ModeAuto {
			continue
		}
		_, tries[i].forward = t.Variants(ctx, s, series.ModeApply)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("try series %s on %s: %w", s.Name, t.Desc, err)
		}
		if tries[i].forward == nil && tries[i].rerr == nil {
			return nil, fmt.Errorf("series %s applies both forward and in reverse on %s: the lines it changes are there before and after it; say which with mode: apply (the source lacks it) or mode: revert (the source has it)", s.Name, t.Desc)
		}
	}
	return tries, nil
}

// chooseBaseline is the baseline of mode for series that went on the
// source as tries say, and the series whose kernel is the source (-1 for
// none).
func (t *Tree) chooseBaseline(list []*series.Series, mode string, tries []onSource) (Resolved, int, error) {
	var out Resolved
	chosen := -1
	for i, s := range list {
		if tries[i].rerr == nil && (chosen < 0 || len(s.Patches) > len(list[chosen].Patches)) {
			chosen = i
		}
	}
	switch {
	case chosen >= 0:
		out.Baseline, out.Mode = tries[chosen].reverse.Baseline, series.ModeRevert
	case mode == series.ModeRevert:
		return out, -1, fmt.Errorf("mode revert: no series applies in reverse on %s, so the source carries none of them (mode apply or auto takes the source as the baseline): %w", t.Desc, tries[0].rerr)
	default:
		out.Baseline, out.Mode = t.BaseHash, series.ModeApply
	}
	out.Why = whyBaseline(list, mode, chosen, tries)
	return out, chosen, nil
}

// whyBaseline says how the baseline was chosen: of one series, the way it
// went on the source; of several, which is the baseline.
func whyBaseline(list []*series.Series, mode string, chosen int, tries []onSource) string {
	switch {
	case mode != ModeAuto && len(list) == 1:
		return mode + ": the lab's mode"
	case mode != ModeAuto && chosen < 0:
		return "apply: the lab's mode: the baseline is the source, and each series is applied on it"
	case len(list) == 1 && chosen == 0:
		return fmt.Sprintf("revert: every patch applies in reverse (%s): the source already carries this series (forward, %s)", patches(len(list[0].Patches)), summary(tries[0].forward))
	case len(list) == 1:
		return fmt.Sprintf("apply: every patch applies forward (%s): the source does not carry this series yet (in reverse, %s)", patches(len(list[0].Patches)), summary(tries[0].rerr))
	case chosen >= 0:
		s := list[chosen]
		return fmt.Sprintf("revert: series %s is in the source (%s, each applies in reverse; of the series in the source, the one with the most patches): the baseline is the source without it, and each series is applied on that baseline",
			s.Name, patches(len(s.Patches)))
	}
	return "apply: no series is in the source (none applies in reverse): the baseline is the source, and each series is applied on it"
}

// applyError is why series s did not go on the baseline: git am's error,
// with the reverse attempt's when the series went on neither way (mode
// auto).
func applyError(s *series.Series, out Resolved, mode string, try onSource, err error) error {
	if mode == ModeAuto && try.rerr != nil {
		return &NeitherWayError{Series: s.Name, Forward: err, Reverse: try.rerr}
	}
	return fmt.Errorf("series %s on the baseline (%s): %w", s.Name, out.Mode, err)
}

func patches(n int) string {
	if n == 1 {
		return "1 patch"
	}
	return fmt.Sprintf("%d patches", n)
}

// ApplyOn returns the commit of series s applied forward on commit base,
// making it on first use, off the work tree (commitOffTree), and keeping it
// under refs/lab/ (on the source's own commit it is the patched commit of
// Variants in mode apply).
func (t *Tree) ApplyOn(ctx context.Context, s *series.Series, base string) (string, error) {
	ref := fmt.Sprintf("refs/lab/%s-%s-%s", base[:12], series.ModeApply, s.Hash()[:16])
	return t.commitOnce(ctx, ref, base, s, func(g *gitcmd.Git) error { return s.Apply(ctx, g) })
}
