// Package watch is lab watch: it reads a list's archive since the last
// read, assembles the series posted there, runs each one that touches what
// a watched lab measures (with the version it follows, when there is one,
// in the same interleaved run), and queues a reply to the series' thread.
// Everything it does is recorded in the history first, so that a watcher
// killed at any point and started again loses nothing and answers nothing
// twice. Building and booting are its Env's (the shared core's, through
// lab run); delivering the replies is internal/outbox's.
package watch

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"lab/internal/history"
	"lab/internal/inbox"
	"lab/internal/listseries"
	"lab/internal/spec"
)

// Lab is a lab the watcher runs series on, and what makes a series its.
type Lab struct {
	Spec *spec.Lab
	// Paths are the files and folders its benchmarks exercise
	// (kernel/events/uprobes.c, kernel/trace/): a series touching one is
	// run. Globs are allowed (kernel/trace/*probe*.c).
	Paths []string
	// Subject runs a series whose subject matches, whatever it touches.
	Subject *regexp.Regexp
}

// Config is one watcher.
type Config struct {
	Inbox   *inbox.Archive
	Labs    []Lab
	History *history.Store
	Env     Env
	// Wait is how long a series whose parts have not all come is waited
	// for before it is recorded incomplete.
	Wait time.Duration
	// CoverWait is how long a series whose patches have all come is
	// waited for when they reply to a mail not come yet (its cover
	// letter) before it is run without it.
	CoverWait time.Duration
	// Recipients says who a reply is addressed to.
	Recipients Recipients
	// From is the replies' sender, "lab <lab@localhost>" by default.
	From string
	Now  func() time.Time
	Out  io.Writer
}

// Env runs a series on a lab: lab run's path, or a fake in tests.
type Env interface {
	Run(ctx context.Context, job Job) (*Result, error)
}

// Submitter is an Env that hands a job to a cluster instead of running it
// (lab submit slurm). Prepare readies a submission and names it (handle)
// before anything is submitted; the watcher records the series submitting
// with it, then Submit submits it, and a second Submit of the same handle
// (a watcher killed in between) submits only what the first did not; the
// series is then submitted. Collect, at each later pass, gives what the run
// came to once it has ended, and nil before. The watcher never waits on a
// cluster.
type Submitter interface {
	Prepare(ctx context.Context, job Job) (handle string, err error)
	Submit(ctx context.Context, job Job, handle string) error
	Collect(ctx context.Context, job Job, handle string) (*Result, error)
}

// Job is one run the watcher asks for.
type Job struct {
	Lab *spec.Lab
	// Versions are the posting's series and, before it, the version it
	// follows: each a kernel against one baseline, the newer also judged
	// against the older.
	Versions []Version
	// BaseCommit is the posting's base-commit:, "" when it names none.
	BaseCommit string
}

// Version is one series of a job.
type Version struct {
	Name    string // its kernel's name: "v1", "v2" (or "patched" alone)
	Mbox    []byte // the posting as an mbox (b4's form)
	Posting *listseries.Posting
}

// Kind is what a run came to, each a reply of its own form: only a
// verdict speaks of faster or slower.
type Kind string

const (
	Verdict     Kind = "verdict"      // measured: the table and a verdict per claim
	NotApplied  Kind = "not-applied"  // the series applies on no base: patch, file, hunk
	SameImage   Kind = "no-change"    // the kernels are one image: no code change
	BuildFailed Kind = "build-failed" // a kernel with the series did not compile
	BootFailed  Kind = "boot-failed"  // a kernel with the series panicked or hung
	Infra       Kind = "infra"        // the build or a boot failed for a reason not the series'
	Noisy       Kind = "too-noisy"    // measured, but the noise hides any change of interest
)

// Result is what the Env found, rendered for the reply.
type Result struct {
	Kind    Kind
	Summary string // the reply's body after its header: the report, or what failed
	Base    string // what the series was applied on, and why
	Machine string // the host and accelerator
	RunDir  string // where the run is on the watcher's machine (never in a reply)
	RunID   string // the run's id, which a reply names it by
	Boots   int    // how many boots were measured
	Results []byte // results.json, attached
}

// Public rewrites what the result says for a public list with paths (the
// Env's replacer of this machine's folders by names a reader can place).
func (r *Result) Public(paths *strings.Replacer) {
	r.Summary, r.Base, r.Machine = paths.Replace(r.Summary), paths.Replace(r.Base), paths.Replace(r.Machine)
	if len(r.Results) > 0 {
		r.Results = []byte(paths.Replace(string(r.Results)))
	}
}

// Stats are what one pass did.
type Stats struct {
	Read, Duplicates int
	ByKind           map[listseries.Kind]int
	Notes            []string
	Waiting, Skipped int
	Incomplete       int
	Answered         int
	// Submitted counts the series handed to a cluster this pass, Pending
	// those handed before whose run has not ended.
	Submitted, Pending int
	// Parsed counts the stored mails parsed to assemble series: the open
	// ones, and the settled ones they may belong with or follow.
	Parsed int
}

// Once reads the inbox, records what it found, runs every series queued
// (one at a time) and queues their replies. Delivering them is the
// caller's next step (outbox.Deliver).
func Once(ctx context.Context, c Config) (*Stats, error) {
	c.defaults()
	st := &Stats{ByKind: map[listseries.Kind]int{}}
	if err := scan(ctx, c, st); err != nil {
		return st, err
	}
	a, err := assemble(ctx, c, st)
	if err != nil {
		return st, err
	}
	todo, err := decide(ctx, c, a, st)
	if err != nil {
		return st, err
	}
	for _, q := range todo {
		did, err := answer(ctx, c, q)
		if err != nil {
			return st, err
		}
		switch did {
		case answered:
			st.Answered++
		case submitted:
			st.Submitted++
		case pending:
			st.Pending++
		}
	}
	return st, nil
}

func (c *Config) defaults() {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	if c.From == "" {
		c.From = "lab <lab@localhost>"
	}
	if c.Wait == 0 {
		c.Wait = 2 * time.Hour
	}
	if c.CoverWait == 0 {
		c.CoverWait = min(c.Wait, 10*time.Minute)
	}
}

// batch is how many mails are written to the history in one
// transaction: one each made a list of 10,000 mails a minute's work.
const batch = 500

// scan reads what the inbox gained and records each mail once. The cursor
// is saved after the mails: a watcher killed between reads them again,
// and the history knows them by Message-ID.
func scan(ctx context.Context, c Config, st *Stats) error {
	var cur inbox.Cursor
	saved, err := c.History.WatchCursor(ctx, c.Inbox.Path)
	if err != nil {
		return err
	}
	if saved != "" {
		if err := json.Unmarshal([]byte(saved), &cur); err != nil {
			return fmt.Errorf("inbox %s: the cursor the history holds: %w", c.Inbox.Path, err)
		}
	}
	r := recorder{c: c, st: st}
	next, notes, err := c.Inbox.Read(ctx, cur, func(m inbox.Mail) error {
		r.add(m)
		if len(r.pending) < batch {
			return nil
		}
		return r.flush(ctx)
	})
	if err == nil {
		err = r.flush(ctx)
	}
	for _, n := range notes {
		st.Notes = append(st.Notes, n.Text)
		fmt.Fprintf(c.Out, "watch: %s\n", n.Text)
	}
	if err != nil {
		// The mails after the last flush are not recorded: the cursor
		// stays where it was, and the next pass reads them again.
		return err
	}
	data, err := json.Marshal(next)
	if err != nil {
		return err
	}
	return c.History.SaveWatchCursor(ctx, c.Inbox.Path, string(data))
}

// recorder classifies mails and writes them to the history in batches.
type recorder struct {
	c       Config
	st      *Stats
	pending []history.WatchMail
	msgs    []listseries.Message
}

func (r *recorder) add(m inbox.Mail) {
	r.st.Read++
	if m.Removed {
		fmt.Fprintf(r.c.Out, "watch: %s: a mail removed from the archive\n", m.Where)
		return
	}
	msg := listseries.Classify(m.Raw)
	id := msg.ID
	if id == "" {
		id = "no-message-id:" + r.c.Inbox.Path + ":" + m.Where
	}
	w := history.WatchMail{MessageID: id, Inbox: r.c.Inbox.Path, Where: m.Where, Kind: string(msg.Kind), Reason: msg.Reason, Arrived: r.c.Now()}
	if msg.Kind == listseries.Patch || msg.Kind == listseries.Cover {
		w.Raw = m.Raw
	}
	msg.Raw = nil
	r.pending, r.msgs = append(r.pending, w), append(r.msgs, msg)
}

// flush writes the pending mails; one seen before (a second delivery, an
// inbox read again) is counted, not kept.
func (r *recorder) flush(ctx context.Context) error {
	if len(r.pending) == 0 {
		return nil
	}
	added, err := r.c.History.AddWatchMails(ctx, r.pending)
	if err != nil {
		return err
	}
	for i, ok := range added {
		msg, w := r.msgs[i], r.pending[i]
		switch {
		case !ok:
			r.st.Duplicates++
		case msg.Kind == listseries.Broken:
			r.st.ByKind[msg.Kind]++
			fmt.Fprintf(r.c.Out, "watch: %s %q: dropped: %s\n", w.Where, msg.Subject, msg.Reason)
		default:
			r.st.ByKind[msg.Kind]++
		}
	}
	r.pending, r.msgs = r.pending[:0], r.msgs[:0]
	return nil
}

// assembly is what a pass assembled: the postings of the mails not yet
// settled, with the settled postings they may belong with or follow.
type assembly struct {
	asm      *listseries.Assembler
	postings []*listseries.Posting
	// settled maps each loaded mail settled in an earlier pass to its
	// posting: a posting holding one was answered, skipped or given up.
	settled map[string]string
	// dropped are the open mails no posting took, and why.
	dropped []dropped
}

type dropped struct{ id, why string }

// assemble makes the postings of the open mails (the patches and cover
// letters not yet settled in a posting). A settled posting is loaded again
// only when an open mail may belong with it (its thread) or follow it (an
// earlier version), so a pass parses what is new and what it needs, not
// every series the list ever carried.
func assemble(ctx context.Context, c Config, st *Stats) (*assembly, error) {
	kinds := []string{string(listseries.Patch), string(listseries.Cover)}
	open, err := c.History.OpenWatchMails(ctx, c.Inbox.Path, nil, kinds...)
	if err != nil || len(open) == 0 {
		return &assembly{asm: listseries.NewAssembler()}, err
	}
	parsed := map[string]*listseries.Message{}
	a := build(c, open, parsed, nil, st)
	var ids []string
	for _, m := range parsed {
		ids = append(append(ids, m.ID, m.InReplyTo), m.References...)
	}
	for _, p := range a.postings {
		ids = append(ids, p.Key)
	}
	others, err := c.History.OtherWatchMails(ctx, c.Inbox.Path, ids)
	if err != nil {
		return nil, err
	}
	keys, err := c.History.SettledPostings(ctx, c.Inbox.Path, ids)
	if err != nil {
		return nil, err
	}
	for _, p := range a.postings {
		if p.Version <= 1 && !p.Resend && p.ChangeID() == "" {
			continue
		}
		earlier, err := c.History.EarlierVersions(ctx, c.Inbox.Path, history.Earlier{Version: p.Version, Resend: p.Resend,
			Subjects: p.Subjects(), Author: p.Author(), ChangeID: p.ChangeID(), Linked: p.Linked()})
		if err != nil {
			return nil, err
		}
		keys = append(keys, earlier...)
	}
	if len(keys) == 0 && len(others) == 0 {
		return a, nil
	}
	mails, err := c.History.OpenWatchMails(ctx, c.Inbox.Path, keys, kinds...)
	if err != nil {
		return nil, err
	}
	return build(c, mails, parsed, others, st), nil
}

// build assembles mails in the order they came, parsing each once a pass
// (parsed keeps them); others are the mails they may reply to that are no
// part. A mail no posting takes (a patch number taken) is said once and
// settled as "-".
func build(c Config, mails []history.WatchMail, parsed map[string]*listseries.Message, others []string, st *Stats) *assembly {
	a := &assembly{asm: listseries.NewAssembler(), settled: map[string]string{}}
	a.asm.Others(others...)
	for _, w := range mails {
		m := parsed[w.MessageID]
		if m == nil {
			msg := listseries.Classify(w.Raw)
			m = &msg
			m.ID = w.MessageID
			parsed[w.MessageID] = m
			st.Parsed++
		}
		if w.Posting != "" {
			a.settled[m.ID] = w.Posting
		}
		if _, err := a.asm.Add(m, w.Arrived); err != nil && w.Posting == "" {
			a.dropped = append(a.dropped, dropped{m.ID, err.Error()})
		}
	}
	a.postings = a.asm.Postings()
	return a
}
