package watch

import (
	"context"
	"fmt"
	"strings"

	"lab/internal/history"
	"lab/internal/listseries"
)

// The states a series goes through. waiting and queued are revisited at
// every pass; running is a pass that was killed mid-run, and runs again;
// submitting is a submission prepared and maybe partly submitted (a pass
// killed in between), submitted again; submitted is a run handed to a
// cluster (a Submitter), collected by the first pass after it ended; the
// others are final.
const (
	StateWaiting    = "waiting"
	StateIncomplete = "incomplete"
	StateSkipped    = "skipped"
	StateQueued     = "queued"
	StateRunning    = "running"
	StateSubmitting = "submitting"
	StateSubmitted  = "submitted"
	StateAnswered   = "answered"
)

func final(state string) bool {
	return state == StateIncomplete || state == StateSkipped || state == StateAnswered
}

// queued is a series to run.
type queued struct {
	series  history.WatchSeries
	posting *listseries.Posting
	prev    *listseries.Posting // the version it follows, nil for none
	lab     Lab
}

// decide gives every posting not yet settled its state: waiting for its
// parts (or incomplete after Wait), skipped when no watched lab's paths or
// subject cover it, else queued on the first lab that does. A posting
// settled before (or one holding a settled mail: a late part) takes its
// new mails into it and is left alone; one settled now takes its mails, so
// that later passes do not parse them again.
func decide(ctx context.Context, c Config, a *assembly, st *Stats) ([]queued, error) {
	// What settles is settled in one step at the end: a pass killed
	// before it settles the same mails again at the next.
	var settle []history.Settle
	for _, d := range a.dropped {
		fmt.Fprintf(c.Out, "watch: %s: %s\n", d.id, d.why)
		settle = append(settle, history.Settle{Posting: "-", Reason: d.why, IDs: []string{d.id}})
	}
	list, err := c.History.WatchSeriesList(ctx, c.Inbox.Path)
	if err != nil {
		return nil, err
	}
	known := map[string]history.WatchSeries{}
	for _, w := range list {
		known[w.Posting] = w
	}
	if err := dropRekeyed(ctx, c, a, list); err != nil {
		return nil, err
	}
	var out []queued
	for _, p := range a.postings {
		was, seen := known[p.Key]
		if key := a.settledIn(p); key != "" || seen && final(was.State) {
			if key == "" {
				key = p.Key
			}
			settle = append(settle, history.Settle{Posting: key, IDs: p.Parts()})
			continue
		}
		prev := a.asm.Previous(p)
		if prev != nil && !prev.Complete() {
			prev = nil
		}
		if seen && (was.State == StateSubmitted || was.State == StateSubmitting) {
			if lab := c.lab(was.Lab); lab != nil {
				out = append(out, queued{series: was, posting: p, prev: prev, lab: *lab})
			} else {
				fmt.Fprintf(c.Out, "watch: %s: submitted on lab %s, which this watcher does not watch: left as it is\n", p.Name(), was.Lab)
			}
			continue
		}
		w := history.WatchSeries{Posting: p.Key, Inbox: c.Inbox.Path, Name: p.Name(), Version: p.Version,
			Subject: p.Subject, Subjects: p.Subjects(), Author: p.Author(), ChangeID: p.ChangeID()}
		if prev != nil {
			w.Previous = prev.Key
		}
		lab := c.state(p, prev, known, &w, st)
		if !seen || was.State != w.State || was.Why != w.Why {
			if err := c.History.PutWatchSeries(ctx, w); err != nil {
				return nil, err
			}
			if w.State != StateWaiting {
				fmt.Fprintf(c.Out, "watch: %s: %s: %s\n", p.Name(), w.State, w.Why)
			}
		}
		if final(w.State) {
			settle = append(settle, history.Settle{Posting: p.Key, IDs: p.Parts()})
		}
		if lab != nil {
			out = append(out, queued{series: w, posting: p, prev: prev, lab: *lab})
		}
	}
	if len(settle) == 0 {
		return out, nil
	}
	return out, c.History.SettleWatchMails(ctx, settle...)
}

// settledIn is the settled posting one of p's parts was settled in, ""
// for none.
func (a *assembly) settledIn(p *listseries.Posting) string {
	for _, id := range p.Parts() {
		if key := a.settled[id]; key != "" {
			return key
		}
	}
	return ""
}

// dropRekeyed removes the series recorded waiting under a key no posting
// of this pass has: a waiting posting's mails are all open, so each is
// assembled again at every pass, and one missing now was joined into
// another (deep threading whose parts came out of order) or rekeyed by the
// part that came.
func dropRekeyed(ctx context.Context, c Config, a *assembly, list []history.WatchSeries) error {
	now := map[string]bool{}
	for _, p := range a.postings {
		now[p.Key] = true
	}
	var gone []string
	for _, w := range list {
		if w.State == StateWaiting && !now[w.Posting] {
			gone = append(gone, w.Posting)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	return c.History.DropWaitingSeries(ctx, c.Inbox.Path, gone)
}

// state sets w's state and why: waiting for its parts or its cover letter,
// incomplete, skipped (a RESEND of a posting answered before, or nothing
// watched) or queued on the lab it returns.
func (c Config) state(p, prev *listseries.Posting, known map[string]history.WatchSeries, w *history.WatchSeries, st *Stats) *Lab {
	switch missing := p.Missing(); {
	case len(missing) > 0 && c.Now().Sub(p.First) < c.Wait:
		w.State, w.Why = StateWaiting, fmt.Sprintf("patches %s of %d not come yet", numbers(missing), p.Total)
		st.Waiting++
	case len(missing) > 0:
		w.State, w.Why = StateIncomplete, fmt.Sprintf("patches %s of %d never came (waited %s)", numbers(missing), p.Total, c.Wait)
		st.Incomplete++
	case p.Awaits != "" && c.Now().Sub(p.First) < c.CoverWait:
		// The patches reply to a mail not come: their cover letter, most
		// likely, which names the posting and the version it follows.
		w.State, w.Why = StateWaiting, fmt.Sprintf("the mail its patches reply to (%s, its cover letter?) not come yet", p.Awaits)
		st.Waiting++
	case p.Resend && prev != nil && prev.SameCode(p) && known[prev.Key].State == StateAnswered:
		w.State, w.Why = StateSkipped, fmt.Sprintf("a resend of %s with the same patches, answered before", prev.Name())
		st.Skipped++
	default:
		lab, why := c.match(p)
		w.Why = why
		if lab == nil {
			w.State = StateSkipped
			st.Skipped++
			return nil
		}
		w.State, w.Lab = StateQueued, lab.Spec.Name
		return lab
	}
	return nil
}

// lab is the watched lab named name, nil for none.
func (c Config) lab(name string) *Lab {
	for i := range c.Labs {
		if c.Labs[i].Spec.Name == name {
			return &c.Labs[i]
		}
	}
	return nil
}

// match is the first lab whose paths or subject cover the posting, and
// why; nil and why not when none does.
func (c Config) match(p *listseries.Posting) (*Lab, string) {
	for i := range c.Labs {
		l := &c.Labs[i]
		if files := p.Touches(l.Paths); len(files) > 0 {
			return l, fmt.Sprintf("touches %s, which lab %s measures", strings.Join(files, ", "), l.Spec.Name)
		}
		if l.Subject != nil && l.Subject.MatchString(p.Subject) {
			return l, fmt.Sprintf("its subject matches lab %s's %q", l.Spec.Name, l.Subject)
		}
	}
	return nil, fmt.Sprintf("touches none of the watched paths (%s)", strings.Join(p.Files(), ", "))
}

func numbers(list []int) string {
	s := make([]string, len(list))
	for i, n := range list {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ", ")
}

// What answer did with a series.
type outcome int

const (
	answered  outcome = iota
	submitted         // handed to the cluster
	pending           // submitted before, its run not ended yet
)

// answer runs one queued series and queues its reply, and says what it
// did: a series handed to a cluster is answered by the first pass after
// its run ended. A run stopped by the context leaves the series running,
// to be run again by the next pass; any other failure of the run is an
// answer of its own kind (infra).
func answer(ctx context.Context, c Config, q queued) (outcome, error) {
	w, p := q.series, q.posting
	job := jobOf(q)
	var res *Result
	var err error
	sub, handsOff := c.Env.(Submitter)
	switch {
	case handsOff && w.State == StateSubmitted:
		if res, err = sub.Collect(ctx, job, w.RunDir); err == nil && res == nil {
			return pending, nil
		}
	case handsOff:
		did, r, err := handOff(ctx, c, sub, job, &w)
		if err != nil || r == nil {
			return did, err
		}
		res = r
	default:
		w.State = StateRunning
		if err := c.History.PutWatchSeries(ctx, w); err != nil {
			return answered, err
		}
		fmt.Fprintf(c.Out, "watch: %s: running on lab %s\n", p.Name(), q.lab.Spec.Name)
		res, err = c.Env.Run(ctx, job)
	}
	if ctx.Err() != nil {
		return answered, ctx.Err()
	}
	if err != nil {
		res = &Result{Kind: Infra, Summary: err.Error()}
	}
	reply, err := compose(c, job, res)
	if err != nil {
		return answered, err
	}
	w.State, w.Why, w.Base, w.RunDir = StateAnswered, string(res.Kind), res.Base, res.RunDir
	if err := c.History.Answer(ctx, w, reply); err != nil {
		return answered, err
	}
	if err := c.History.SettleWatchMails(ctx, history.Settle{Posting: p.Key, IDs: p.Parts()}); err != nil {
		return answered, err
	}
	fmt.Fprintf(c.Out, "watch: %s: answered (%s), reply %s queued\n", p.Name(), res.Kind, reply.MessageID)
	return answered, nil
}

// handOff submits the job to the cluster: prepared and recorded
// submitting first, so that a watcher killed while it submits submits the
// rest of the same submission at its next pass, never a second one. A
// cluster that does not take the job is an answer (infra): res.
func handOff(ctx context.Context, c Config, sub Submitter, job Job, w *history.WatchSeries) (outcome, *Result, error) {
	p := job.Versions[len(job.Versions)-1].Posting
	if w.State != StateSubmitting {
		fmt.Fprintf(c.Out, "watch: %s: handing it to the cluster, on lab %s\n", p.Name(), job.Lab.Name)
		handle, err := sub.Prepare(ctx, job)
		if err != nil {
			return answered, &Result{Kind: Infra, Summary: "The run could not be prepared for the cluster: " + err.Error()}, nil
		}
		w.State, w.RunDir = StateSubmitting, handle
		if err := c.History.PutWatchSeries(ctx, *w); err != nil {
			return answered, nil, err
		}
	}
	if err := sub.Submit(ctx, job, w.RunDir); err != nil {
		if ctx.Err() != nil {
			return answered, nil, ctx.Err()
		}
		return answered, &Result{Kind: Infra, Summary: "The cluster did not take the run: " + err.Error()}, nil
	}
	w.State = StateSubmitted
	if err := c.History.PutWatchSeries(ctx, *w); err != nil {
		return answered, nil, err
	}
	fmt.Fprintf(c.Out, "watch: %s: submitted (%s); a later pass answers it once its run has ended\n", p.Name(), w.RunDir)
	return submitted, nil, nil
}

// jobOf is the run a queued series asks for: its posting, after the
// version it follows when there is one.
func jobOf(q queued) Job {
	p := q.posting
	job := Job{Lab: q.lab.Spec, BaseCommit: p.BaseCommit()}
	name := "patched"
	if q.prev != nil {
		job.Versions = append(job.Versions, Version{Name: fmt.Sprintf("v%d", q.prev.Version), Mbox: q.prev.Mbox(), Posting: q.prev})
		name = fmt.Sprintf("v%d", p.Version)
		if q.prev.Version == p.Version { // a RESEND that changed the code
			name += "-resend"
		}
	}
	job.Versions = append(job.Versions, Version{Name: name, Mbox: p.Mbox(), Posting: p})
	return job
}
