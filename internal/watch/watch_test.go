package watch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/mail"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lab/internal/history"
	"lab/internal/inbox"
	"lab/internal/outbox"
	"lab/internal/spec"
	"lab/internal/testenv"
)

// world is what a watcher test reads and writes: a real public-inbox, a
// history, the lazy-buffer lab and the inbox opened as lab watch opens it.
func world(t *testing.T) (*testenv.PublicInbox, *history.Store, *spec.Lab, *inbox.Archive) {
	t.Helper()
	pi := testenv.NewPublicInbox(t)
	store, err := history.Open(context.Background(), filepath.Join(t.TempDir(), "history.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	lab, err := spec.Load("../../labs/uprobe-lazy-buffer.yaml")
	if err != nil {
		t.Fatal(err)
	}
	archive, err := inbox.Open(pi.Dir)
	if err != nil {
		t.Fatal(err)
	}
	return pi, store, lab, archive
}

// fakeEnv records the jobs it is given and answers each with a verdict;
// stop, when set, cancels the pass instead on that call (a watcher killed
// mid-run).
type fakeEnv struct {
	jobs   [][]string
	stop   int
	cancel context.CancelFunc
	kind   Kind // every run ends so (a verdict when "")
}

func (e *fakeEnv) Run(ctx context.Context, job Job) (*Result, error) {
	var names []string
	for _, v := range job.Versions {
		names = append(names, v.Name+"="+v.Posting.Name())
	}
	e.jobs = append(e.jobs, names)
	if len(e.jobs) == e.stop {
		e.cancel()
		return nil, ctx.Err()
	}
	if e.kind != "" { // nothing measured
		return &Result{Kind: e.kind, Summary: "apply patch 2/2 \"uprobes: x\": does not apply", Results: []byte(`{"schema":5}`)}, nil
	}
	return &Result{Kind: Verdict, Summary: "uprobe-nop p=1  +1.1 %", Base: "Debian linux-source-6.12 (the lab's source)", Machine: "2 CPUs, TCG",
		RunID: "20261203-100000", Boots: 2, Results: []byte(`{"schema":5}`)}, nil
}

// The scenario on a real public-inbox and a real MTA, with a fake
// Env for the runs (the end-to-end test builds and boots real kernels):
// an unrelated patch, the lazy-buffer series as v1, a broken mail, then
// v2; v2 runs against v1 and the baseline; each reply is threaded under
// its cover letter and delivered once; a watcher killed during v2's run
// runs it again when started again; a pass with nothing new does nothing.
func TestWatch(t *testing.T) {
	ctx := context.Background()
	pi, store, lab, archive := world(t)
	mta := testenv.StartMTA(t)
	env := &fakeEnv{}
	var log bytes.Buffer
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	cfg := Config{Inbox: archive, History: store, Env: env, Out: &log, Now: func() time.Time { return now },
		Labs:       []Lab{{Spec: lab, Paths: []string{"kernel/events/uprobes.c", "kernel/trace/trace_uprobe.c", "kernel/kprobes.c"}}},
		Recipients: Recipients{Mode: ToAuthor}}
	delivery := outbox.Delivery{Maildir: filepath.Join(t.TempDir(), "replies"), SMTP: mta.Addr, Sender: "lab@localhost"}

	pi.Deliver(t, testenv.UnrelatedPatch())
	for _, m := range testenv.LazySeries(t, "../..", 1, "") {
		pi.Deliver(t, m)
	}
	pi.Deliver(t, testenv.BrokenPatch(t, "../.."))
	st, err := Once(ctx, cfg)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if st.Read != 5 || st.Skipped != 1 || st.Answered != 1 || st.ByKind["broken"] != 1 {
		t.Errorf("first pass: %+v\n%s", st, log.String())
	}
	if !strings.Contains(log.String(), "numbered 3/2") || !strings.Contains(log.String(), "[PATCH] mm: fix a comment: skipped: touches none of the watched paths (mm/memory.c)") {
		t.Errorf("log lacks the broken mail or the skip:\n%s", log.String())
	}

	// v2 comes; the watcher is killed during its run.
	for _, m := range testenv.LazySeries(t, "../..", 2, "lazy-v1@kernel.org") {
		pi.Deliver(t, m)
	}
	killed, cancel := context.WithCancel(ctx)
	env.stop, env.cancel = 2, cancel
	if _, err := Once(killed, cfg); !errors.Is(err, context.Canceled) {
		t.Fatalf("killed pass: %v", err)
	}
	if list, _ := store.WatchSeriesList(ctx, ""); list[len(list)-1].State != StateRunning {
		t.Errorf("after the kill: %+v", list[len(list)-1])
	}
	st, err = Once(ctx, cfg)
	if err != nil || st.Answered != 1 || st.Read != 0 {
		t.Fatalf("restarted: %+v, %v\n%s", st, err, log.String())
	}
	want := [][]string{{"patched=[PATCH 0/2] uprobes: two common case speed ups"},
		{"v1=[PATCH 0/2] uprobes: two common case speed ups", "v2=[PATCH v2 0/2] uprobes: two common case speed ups"},
		{"v1=[PATCH 0/2] uprobes: two common case speed ups", "v2=[PATCH v2 0/2] uprobes: two common case speed ups"}}
	if fmt.Sprint(env.jobs) != fmt.Sprint(want) {
		t.Errorf("jobs %q, want %q", env.jobs, want)
	}

	for i := 0; i < 2; i++ {
		r, err := outbox.Deliver(ctx, store, delivery)
		if err != nil || r.Mailed != 2*(1-i) {
			t.Fatalf("delivery %d: %+v, %v", i+1, r, err)
		}
	}
	got := mta.Delivered(t, 2)
	if len(got) != 2 {
		t.Fatalf("the MTA delivered %d replies, want 2", len(got))
	}
	t.Logf("a reply as delivered:\n%s", got[0])
	threads := map[string]string{}
	for _, raw := range got {
		m, err := mail.ReadMessage(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		threads[m.Header.Get("In-Reply-To")] = m.Header.Get("Subject")
		if m.Header.Get("In-Reply-To") == "<lazy-v2@kernel.org>" {
			for _, w := range []string{"b4 am -o - 'lazy-v1@kernel.org' > v1.mbx", "b4 am -o - 'lazy-v2@kernel.org' > v2.mbx",
				"lab run labs/uprobe-lazy-buffer.yaml --series v1.mbx --series v2.mbx", "compared: v2 against v1", "run:      20261203-100000",
				"Every boot's samples and the run's provenance are in the attached results.json"} {
				if !bytes.Contains(raw, []byte(w)) {
					t.Errorf("v2's reply lacks %q", w)
				}
			}
		}
		if m.Header.Get("X-Lab-Verdict") != "verdict" || !strings.Contains(m.Header.Get("To"), "andrii@kernel.org") {
			t.Errorf("reply headers %v", m.Header)
		}
	}
	if threads["<lazy-v1@kernel.org>"] != "Re: [PATCH 0/2] uprobes: two common case speed ups" ||
		threads["<lazy-v2@kernel.org>"] != "Re: [PATCH v2 0/2] uprobes: two common case speed ups" {
		t.Errorf("replies threaded as %v", threads)
	}

	// Nothing new: nothing read, run or sent.
	env.stop = 0
	if st, err := Once(ctx, cfg); err != nil || st.Read+st.Answered != 0 || len(env.jobs) != 3 {
		t.Errorf("idle pass: %+v, %v, %d jobs", st, err, len(env.jobs))
	}
	if r, _ := outbox.Deliver(ctx, store, delivery); r.Mailed+r.Maildir != 0 {
		t.Errorf("idle delivery: %+v", r)
	}
}

// A settled series is parsed again only when a new mail belongs with it or
// follows it: a pass with nothing new parses nothing, a new unrelated patch
// is the only mail parsed, v2 brings v1 back as the version it follows, and
// a late part of an answered series is settled into it without a run.
func TestSettledSeriesAreNotParsedAgain(t *testing.T) {
	ctx := context.Background()
	pi, store, lab, archive := world(t)
	env := &fakeEnv{}
	var log bytes.Buffer
	cfg := Config{Inbox: archive, History: store, Env: env, Out: &log,
		Labs: []Lab{{Spec: lab, Paths: []string{"kernel/trace/trace_uprobe.c"}}}}
	pass := func(what string, parsed, answered int, mails ...[]byte) {
		t.Helper()
		for _, m := range mails {
			pi.Deliver(t, m)
		}
		st, err := Once(ctx, cfg)
		if err != nil || st.Parsed != parsed || st.Answered != answered {
			t.Errorf("%s: parsed %d, answered %d (%v), want %d and %d\n%s", what, st.Parsed, st.Answered, err, parsed, answered, log.String())
		}
	}
	pass("v1 and an unrelated patch", 4, 1, append([][]byte{testenv.UnrelatedPatch()}, testenv.LazySeries(t, "../..", 1, "")...)...)
	pass("nothing new", 0, 0)
	other := testenv.Mail([][2]string{{"From", "Net Dev <net@example.org>"}, {"Subject", "[PATCH] net: fix a comment"}, {"Message-ID", "<net-1@example.org>"}},
		"A comment.\n---\ndiff --git a/net/core/dev.c b/net/core/dev.c\n--- a/net/core/dev.c\n+++ b/net/core/dev.c\n@@ -1,3 +1,3 @@\n a\n-b\n+c\n d\n")
	pass("another unrelated patch", 1, 0, other)
	pass("v2, with v1 back", 6, 1, testenv.LazySeries(t, "../..", 2, "lazy-v1@kernel.org")...)
	if got := fmt.Sprint(env.jobs); !strings.Contains(got, "v1=") || !strings.Contains(got, "v2=") {
		t.Errorf("v2's job %s, want v1 and v2", got)
	}
	late := testenv.Mail([][2]string{{"From", "Andrii Nakryiko <andrii@kernel.org>"}, {"Subject", "[PATCH 2/2] uprobes: prevent mutex_lock() under rcu_read_lock()"},
		{"Message-ID", "<lazy-v1-2-resent@kernel.org>"}, {"In-Reply-To", "<lazy-v1@kernel.org>"}, {"References", "<lazy-v1@kernel.org>"}},
		"resent\n---\n"+testenv.LazyPatch(t, "../..", 2))
	pass("a part of v1 sent again", 4, 0, late)
	if !strings.Contains(log.String(), "lazy-v1-2-resent@kernel.org: two patches numbered 2/2") {
		t.Errorf("the resent part is not said:\n%s", log.String())
	}
	pass("nothing new after it", 0, 0)
	if len(env.jobs) != 2 {
		t.Errorf("jobs %q, want v1's and v2's", env.jobs)
	}
}

// fakeCluster is a Submitter: it takes each job and ends it after ends
// collections; stopSubmit, when set, cancels the pass during that Submit
// (a watcher killed while it submits).
type fakeCluster struct {
	fakeEnv
	prepared   int
	submitted  []string // the handles Submit was given
	stopSubmit int
	collects   int
	ends       int
}

func (f *fakeCluster) Prepare(ctx context.Context, job Job) (string, error) {
	f.prepared++
	return fmt.Sprintf("/results/slurm-%d", f.prepared), nil
}

func (f *fakeCluster) Submit(ctx context.Context, job Job, handle string) error {
	f.submitted = append(f.submitted, handle)
	if len(f.submitted) == f.stopSubmit {
		f.cancel()
		return ctx.Err()
	}
	return nil
}

func (f *fakeCluster) Collect(ctx context.Context, job Job, handle string) (*Result, error) {
	if f.collects++; f.collects < f.ends {
		return nil, nil
	}
	res, err := f.Run(ctx, job)
	res.RunDir = handle + "/merged"
	return res, err
}

// A watcher with a cluster hands each series to it and never waits: the
// series is submitted, later passes find it still running, and the first
// pass after its run ended answers it, once.
func TestHandedToACluster(t *testing.T) {
	ctx := context.Background()
	pi, store, lab, archive := world(t)
	for _, m := range testenv.LazySeries(t, "../..", 1, "") {
		pi.Deliver(t, m)
	}
	env := &fakeCluster{ends: 2}
	var log bytes.Buffer
	cfg := Config{Inbox: archive, History: store, Env: env, Out: &log,
		Labs: []Lab{{Spec: lab, Paths: []string{"kernel/trace/trace_uprobe.c"}}}}
	for i, want := range []Stats{{Submitted: 1}, {Pending: 1}, {Answered: 1}, {}} {
		st, err := Once(ctx, cfg)
		if err != nil || st.Submitted != want.Submitted || st.Pending != want.Pending || st.Answered != want.Answered {
			t.Fatalf("pass %d: %+v, %v; want %+v\n%s", i+1, st, err, want, log.String())
		}
		list, _ := store.WatchSeriesList(ctx, "")
		if state := list[0].State; i < 2 && (state != StateSubmitted || list[0].RunDir != "/results/slurm-1") || i >= 2 && state != StateAnswered {
			t.Errorf("pass %d: %+v", i+1, list[0])
		}
	}
	if env.prepared != 1 || len(env.submitted) != 1 || len(env.jobs) != 1 {
		t.Errorf("prepared %d, submitted %q, collected %d runs", env.prepared, env.submitted, len(env.jobs))
	}
	if out, _ := store.Outbox(ctx); len(out) != 1 {
		t.Errorf("%d replies queued, want 1", len(out))
	}
	if list, _ := store.WatchSeriesList(ctx, ""); list[0].RunDir != "/results/slurm-1/merged" {
		t.Errorf("answered series' run %q", list[0].RunDir)
	}
}

// A watcher killed while it submits has recorded the submission it
// prepared: the next pass submits the same one (the cluster's Submit then
// submits only the jobs missing), never a second one, and the series is
// answered once.
func TestKilledWhileSubmitting(t *testing.T) {
	ctx := context.Background()
	pi, store, lab, archive := world(t)
	for _, m := range testenv.LazySeries(t, "../..", 1, "") {
		pi.Deliver(t, m)
	}
	killed, cancel := context.WithCancel(ctx)
	env := &fakeCluster{ends: 1, stopSubmit: 1}
	env.cancel = cancel
	var log bytes.Buffer
	cfg := Config{Inbox: archive, History: store, Env: env, Out: &log,
		Labs: []Lab{{Spec: lab, Paths: []string{"kernel/trace/trace_uprobe.c"}}}}
	if _, err := Once(killed, cfg); !errors.Is(err, context.Canceled) {
		t.Fatalf("killed pass: %v\n%s", err, log.String())
	}
	if list, _ := store.WatchSeriesList(ctx, ""); list[0].State != StateSubmitting || list[0].RunDir != "/results/slurm-1" {
		t.Fatalf("after the kill: %+v", list[0])
	}
	for i, want := range []Stats{{Submitted: 1}, {Answered: 1}, {}} {
		if st, err := Once(ctx, cfg); err != nil || st.Submitted != want.Submitted || st.Answered != want.Answered {
			t.Fatalf("pass %d after the kill: %+v, %v\n%s", i+1, st, err, log.String())
		}
	}
	if env.prepared != 1 || fmt.Sprint(env.submitted) != "[/results/slurm-1 /results/slurm-1]" {
		t.Errorf("prepared %d, submitted %q: want one submission, submitted again", env.prepared, env.submitted)
	}
	if out, _ := store.Outbox(ctx); len(out) != 1 {
		t.Errorf("%d replies queued, want 1", len(out))
	}
}
