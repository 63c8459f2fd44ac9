package history

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// The list watcher's state lives in the history beside the runs it makes,
// so that one database is what a team backs up and shares, and a watcher
// killed at any point finds everything it had done: where it had read to
// in each inbox, every mail it read (what it was, and why it was dropped),
// each series and what became of it, and every reply with whether it was
// delivered.

// watchTables is the schema step that makes them.
var watchTables = []string{
	`CREATE TABLE watch_cursors (
		inbox TEXT NOT NULL PRIMARY KEY,
		cursor TEXT NOT NULL,
		updated TEXT NOT NULL)`,
	`CREATE TABLE watch_mails (
		message_id TEXT NOT NULL PRIMARY KEY,
		inbox TEXT NOT NULL,
		place TEXT NOT NULL,
		kind TEXT NOT NULL,
		reason TEXT NOT NULL,
		arrived TEXT NOT NULL,
		raw TEXT NOT NULL)`,
	`CREATE INDEX watch_mails_inbox ON watch_mails (inbox, kind)`,
	`CREATE TABLE watch_series (
		posting TEXT NOT NULL PRIMARY KEY,
		inbox TEXT NOT NULL,
		lab TEXT NOT NULL,
		name TEXT NOT NULL,
		version INTEGER NOT NULL,
		previous TEXT NOT NULL,
		state TEXT NOT NULL,
		why TEXT NOT NULL,
		base TEXT NOT NULL,
		run_dir TEXT NOT NULL,
		reply TEXT NOT NULL,
		updated TEXT NOT NULL)`,
	`CREATE TABLE watch_outbox (
		id {{id}},
		message_id TEXT NOT NULL UNIQUE,
		posting TEXT NOT NULL,
		recipients TEXT NOT NULL,
		raw TEXT NOT NULL,
		state TEXT NOT NULL,
		error TEXT NOT NULL,
		queued TEXT NOT NULL,
		sent TEXT NOT NULL)`,
}

// watchSettled is the schema step that lets a pass leave settled series
// alone: a mail records the posting it was settled in (one answered,
// skipped or incomplete, or "-" for a mail no posting took), and a series
// what a later version of it is found by.
var watchSettled = []string{
	`ALTER TABLE watch_mails ADD COLUMN posting TEXT NOT NULL DEFAULT ''`,
	`CREATE INDEX watch_mails_posting ON watch_mails (inbox, posting)`,
	`ALTER TABLE watch_series ADD COLUMN subject TEXT NOT NULL DEFAULT ''`,
	`ALTER TABLE watch_series ADD COLUMN author TEXT NOT NULL DEFAULT ''`,
	`ALTER TABLE watch_series ADD COLUMN change_id TEXT NOT NULL DEFAULT ''`,
}

// watchSubjects is the schema step that keeps every subject of a series
// (its cover letter's and each patch's): a later version that dropped the
// cover letter, or added one, is known by a patch's.
var watchSubjects = []string{
	`CREATE TABLE watch_subjects (
		posting TEXT NOT NULL,
		subject TEXT NOT NULL,
		PRIMARY KEY (posting, subject))`,
	`CREATE INDEX watch_subjects_subject ON watch_subjects (subject)`,
	`INSERT INTO watch_subjects (posting, subject) SELECT posting, subject FROM watch_series WHERE subject <> ''`,
}

// WatchMail is one mail the watcher read.
type WatchMail struct {
	MessageID string
	Inbox     string
	Where     string // its place in the inbox (inbox.Mail.Where)
	Kind      string // listseries.Kind
	Reason    string // why it was dropped, for a broken or other mail
	Arrived   time.Time
	Raw       []byte // kept for patches and cover letters only
	// Posting is the settled posting the mail is part of, "-" for one
	// no posting took, "" while its posting is still open.
	Posting string
}

// WatchCursor is where the last read of inbox ended, "" before the first.
func (s *Store) WatchCursor(ctx context.Context, inbox string) (string, error) {
	var cur string
	err := s.db.QueryRowContext(ctx, s.d.q(`SELECT cursor FROM watch_cursors WHERE inbox = ?`), inbox).Scan(&cur)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return cur, s.explain(err)
}

// SaveWatchCursor records where the last read of inbox ended.
func (s *Store) SaveWatchCursor(ctx context.Context, inbox, cursor string) error {
	_, err := s.db.ExecContext(ctx, s.d.q(`INSERT INTO watch_cursors (inbox, cursor, updated) VALUES (?, ?, ?)
		ON CONFLICT (inbox) DO UPDATE SET cursor = excluded.cursor, updated = excluded.updated`),
		inbox, cursor, time.Now().UTC().Format(timeLayout))
	return s.explain(err)
}

// AddWatchMails records mails in one transaction, and says of each
// whether it was new: false for one whose Message-ID was recorded before
// (the same mail delivered twice, or read again after a rewritten inbox),
// which is left as it was.
func (s *Store) AddWatchMails(ctx context.Context, mails []WatchMail) ([]bool, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, s.explain(err)
	}
	defer tx.Rollback()
	stmt, err := tx.PrepareContext(ctx, s.d.q(`INSERT INTO watch_mails (message_id, inbox, place, kind, reason, arrived, raw)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (message_id) DO NOTHING`))
	if err != nil {
		return nil, s.explain(err)
	}
	defer stmt.Close()
	added := make([]bool, len(mails))
	for i, m := range mails {
		res, err := stmt.ExecContext(ctx, m.MessageID, m.Inbox, m.Where, m.Kind, m.Reason, m.Arrived.UTC().Format(timeLayout), base64.StdEncoding.EncodeToString(m.Raw))
		if err != nil {
			return nil, fmt.Errorf("mail %s: %w", m.MessageID, s.explain(err))
		}
		n, err := res.RowsAffected()
		if err != nil {
			return nil, s.explain(err)
		}
		added[i] = n == 1
	}
	return added, s.explain(tx.Commit())
}

// AddWatchMail records one mail (AddWatchMails).
func (s *Store) AddWatchMail(ctx context.Context, m WatchMail) (bool, error) {
	added, err := s.AddWatchMails(ctx, []WatchMail{m})
	if err != nil {
		return false, err
	}
	return added[0], nil
}

// WatchMails are the mails of inbox of the given kinds, in the order they
// were read.
func (s *Store) WatchMails(ctx context.Context, inbox string, kinds ...string) ([]WatchMail, error) {
	return s.watchMails(ctx, inbox, "", nil, kinds)
}

// OpenWatchMails are the mails of inbox of the given kinds not yet settled
// in a posting, with those settled in the postings named, in the order they
// were read: what a pass assembles series from.
func (s *Store) OpenWatchMails(ctx context.Context, inbox string, postings []string, kinds ...string) ([]WatchMail, error) {
	out, err := s.watchMails(ctx, inbox, ` AND posting = ''`, nil, kinds)
	postings = slices.DeleteFunc(slices.Clone(postings), func(p string) bool { return p == "" || p == "-" })
	if err != nil || len(postings) == 0 {
		return out, err
	}
	slices.Sort(postings)
	postings = slices.Compact(postings)
	for chunk := range slices.Chunk(postings, inChunk) {
		more, err := s.watchMails(ctx, inbox, ` AND posting IN (?`+strings.Repeat(", ?", len(chunk)-1)+`)`, chunk, kinds)
		if err != nil {
			return nil, err
		}
		out = append(out, more...)
	}
	slices.SortStableFunc(out, func(a, b WatchMail) int {
		return cmp.Or(a.Arrived.Compare(b.Arrived), strings.Compare(a.MessageID, b.MessageID))
	})
	return out, nil
}

// DroppedWatchMails are the mails of inbox that no series took: those
// read as broken, and the patch mails no posting took (settled as "-"),
// without reading the inbox's other patches.
func (s *Store) DroppedWatchMails(ctx context.Context, inbox string) ([]WatchMail, error) {
	return s.watchMails(ctx, inbox, ` AND (kind = 'broken' OR posting = '-')`, nil, nil)
}

// inChunk is how many values one IN (...) list holds: below SQLite's
// oldest limit of 999 variables per statement.
const inChunk = 500

func (s *Store) watchMails(ctx context.Context, inbox, where string, whereArgs []string, kinds []string) ([]WatchMail, error) {
	// Each pass asks for the patches and cover letters of an inbox whose
	// mails are mostly other traffic: the index on (inbox, kind) leaves
	// those unread.
	stmt := `SELECT message_id, inbox, place, kind, reason, arrived, raw, posting FROM watch_mails WHERE inbox = ?` + where
	args := []any{inbox}
	for _, a := range whereArgs {
		args = append(args, a)
	}
	if len(kinds) > 0 {
		stmt += ` AND kind IN (?` + strings.Repeat(", ?", len(kinds)-1) + `)`
		for _, k := range kinds {
			args = append(args, k)
		}
	}
	rows, err := s.db.QueryContext(ctx, s.d.q(stmt+` ORDER BY arrived, message_id`), args...)
	if err != nil {
		return nil, s.explain(err)
	}
	defer rows.Close()
	var out []WatchMail
	for rows.Next() {
		var m WatchMail
		var arrived, raw string
		if err := rows.Scan(&m.MessageID, &m.Inbox, &m.Where, &m.Kind, &m.Reason, &arrived, &raw, &m.Posting); err != nil {
			return nil, s.explain(err)
		}
		if m.Arrived, err = time.Parse(time.RFC3339Nano, arrived); err != nil {
			return nil, fmt.Errorf("mail %s: time %q: %w", m.MessageID, arrived, err)
		}
		if m.Raw, err = base64.StdEncoding.DecodeString(raw); err != nil {
			return nil, fmt.Errorf("mail %s: %w", m.MessageID, err)
		}
		out = append(out, m)
	}
	return out, s.explain(rows.Err())
}

// Settle is mails settled in a posting: one answered, skipped or
// incomplete, or "-" for mails no posting took, with Reason as why.
type Settle struct {
	Posting, Reason string
	IDs             []string
}

// SettleWatchMails records each Settle's mails as part of its posting, all
// in one transaction (a pass settles thousands of skipped series of a
// list's first read): later passes leave them unread unless a new mail
// belongs with that posting. A mail already settled keeps its posting.
func (s *Store) SettleWatchMails(ctx context.Context, settles ...Settle) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.explain(err)
	}
	defer tx.Rollback()
	for _, st := range settles {
		for chunk := range slices.Chunk(st.IDs, inChunk) {
			args := []any{st.Posting}
			stmt := `UPDATE watch_mails SET posting = ?`
			if st.Reason != "" {
				stmt += `, reason = ?`
				args = append(args, st.Reason)
			}
			stmt += ` WHERE posting = '' AND message_id IN (?` + strings.Repeat(", ?", len(chunk)-1) + `)`
			for _, id := range chunk {
				args = append(args, id)
			}
			if _, err := tx.ExecContext(ctx, s.d.q(stmt), args...); err != nil {
				return fmt.Errorf("settle the mails of %s: %w", st.Posting, s.explain(err))
			}
		}
	}
	return s.explain(tx.Commit())
}

// SettledPostings are the settled postings of inbox that a mail with one
// of ids as its Message-ID, parent or reference may belong with: those
// keyed by one of ids, or holding a mail whose Message-ID is one.
func (s *Store) SettledPostings(ctx context.Context, inbox string, ids []string) ([]string, error) {
	ids = slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return id == "" })
	var out []string
	for chunk := range slices.Chunk(ids, inChunk) {
		in := `(?` + strings.Repeat(", ?", len(chunk)-1) + `)`
		args := []any{inbox}
		for _, id := range chunk {
			args = append(args, id)
		}
		args = append(args, inbox)
		args = append(args, args[1:len(chunk)+1]...)
		keys, err := s.column(ctx, `SELECT posting FROM watch_mails WHERE inbox = ? AND posting NOT IN ('', '-') AND message_id IN `+in+`
			UNION SELECT posting FROM watch_mails WHERE inbox = ? AND posting NOT IN ('', '-') AND posting IN `+in, args...)
		if err != nil {
			return nil, err
		}
		out = append(out, keys...)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// Earlier is what a posting's earlier versions are found by in the
// history (listseries.Posting.Previous decides among them).
type Earlier struct {
	Version  int
	Resend   bool     // a RESEND: its own version sent before counts too
	Subjects []string // its cover letter's and patches' subjects
	Author   string
	ChangeID string
	Linked   []string // Message-IDs its cover letter links to
}

// EarlierVersions are the settled series of inbox a posting may follow:
// of a lower version (or its own, for a RESEND), by a subject and its
// author, by change-id, or linked to from its cover letter.
func (s *Store) EarlierVersions(ctx context.Context, inbox string, e Earlier) ([]string, error) {
	op := "<"
	if e.Resend {
		op = "<="
	}
	stmt := `SELECT posting FROM watch_series WHERE inbox = ? AND version ` + op + ` ? AND state IN ('answered', 'skipped', 'incomplete')
		AND ((change_id <> '' AND change_id = ?)`
	args := []any{inbox, e.Version, e.ChangeID}
	in := func(col string, vals []string) {
		if len(vals) > inChunk {
			vals = vals[:inChunk]
		}
		if len(vals) == 0 {
			return
		}
		stmt += ` OR ` + col + ` IN (?` + strings.Repeat(", ?", len(vals)-1) + `)`
		for _, v := range vals {
			args = append(args, v)
		}
	}
	if len(e.Subjects) > 0 {
		stmt += ` OR author = ? AND posting IN (SELECT posting FROM watch_subjects WHERE 1 = 0`
		args = append(args, e.Author)
		var lower []string
		for _, subj := range e.Subjects {
			lower = append(lower, strings.ToLower(subj))
		}
		in("subject", lower)
		stmt += `)`
	}
	in("posting", e.Linked)
	return s.column(ctx, stmt+`)`, args...)
}

// OtherWatchMails are those of ids the watcher read that are neither a
// patch nor a cover letter (a review, a bug report): a patch replying to
// one is not waiting for it as for its cover letter.
func (s *Store) OtherWatchMails(ctx context.Context, inbox string, ids []string) ([]string, error) {
	ids = slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return id == "" })
	var out []string
	for chunk := range slices.Chunk(ids, inChunk) {
		args := []any{inbox}
		for _, id := range chunk {
			args = append(args, id)
		}
		got, err := s.column(ctx, `SELECT message_id FROM watch_mails WHERE inbox = ? AND kind NOT IN ('patch', 'cover')
			AND message_id IN (?`+strings.Repeat(", ?", len(chunk)-1)+`)`, args...)
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
	}
	return out, nil
}

// DropWaitingSeries removes series of inbox recorded waiting under keys
// that no posting has any more: parts that came later joined them into
// one posting of another key (deep threading, parts out of order).
func (s *Store) DropWaitingSeries(ctx context.Context, inbox string, keys []string) error {
	for chunk := range slices.Chunk(keys, inChunk) {
		args := []any{inbox}
		for _, k := range chunk {
			args = append(args, k)
		}
		if _, err := s.db.ExecContext(ctx, s.d.q(`DELETE FROM watch_series WHERE inbox = ? AND state = 'waiting'
			AND posting IN (?`+strings.Repeat(", ?", len(chunk)-1)+`)`), args...); err != nil {
			return fmt.Errorf("drop series that waited under another key: %w", s.explain(err))
		}
	}
	return nil
}

// column runs a query of one text column.
func (s *Store) column(ctx context.Context, stmt string, args ...any) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, s.d.q(stmt), args...)
	if err != nil {
		return nil, s.explain(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, s.explain(err)
		}
		out = append(out, v)
	}
	return out, s.explain(rows.Err())
}

// WatchSeries is a series the watcher assembled, and what became of it.
type WatchSeries struct {
	Posting  string // the posting's key (listseries.Posting.Key)
	Inbox    string
	Lab      string
	Name     string // "[PATCH v2 0/2] uprobes: ..."
	Version  int
	Previous string // the posting of the version it follows; "" for none
	State    string // waiting, skipped, incomplete, queued, running, answered, failed
	Why      string
	Base     string // what it was applied on, and why
	RunDir   string
	Reply    string // the reply's Message-ID
	Updated  time.Time
	// What a later version is found by (listseries.Posting.Previous): the
	// subject without prefixes, the sender's address and b4's change-id;
	// Subjects are every part's subject.
	Subject, Author, ChangeID string
	Subjects                  []string
}

// PutWatchSeries records a series' state, replacing what was recorded.
func (s *Store) PutWatchSeries(ctx context.Context, w WatchSeries) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.explain(err)
	}
	defer tx.Rollback()
	if err := s.putWatchSeries(ctx, tx, w); err != nil {
		return err
	}
	return s.explain(tx.Commit())
}

func (s *Store) putWatchSeries(ctx context.Context, db execer, w WatchSeries) error {
	_, err := db.ExecContext(ctx, s.d.q(`INSERT INTO watch_series (posting, inbox, lab, name, version, previous, state, why, base, run_dir, reply, updated,
		subject, author, change_id)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (posting) DO UPDATE SET inbox = excluded.inbox, lab = excluded.lab, name = excluded.name, version = excluded.version,
		previous = excluded.previous, state = excluded.state, why = excluded.why, base = excluded.base, run_dir = excluded.run_dir,
		reply = excluded.reply, updated = excluded.updated, subject = excluded.subject, author = excluded.author, change_id = excluded.change_id`),
		w.Posting, w.Inbox, w.Lab, w.Name, w.Version, w.Previous, w.State, w.Why, w.Base, w.RunDir, w.Reply, time.Now().UTC().Format(timeLayout),
		strings.ToLower(w.Subject), w.Author, w.ChangeID)
	if err != nil {
		return fmt.Errorf("series %s: %w", w.Name, s.explain(err))
	}
	subjects := []string{strings.ToLower(w.Subject)}
	for _, subj := range w.Subjects {
		subjects = append(subjects, strings.ToLower(subj))
	}
	slices.Sort(subjects)
	subjects = slices.DeleteFunc(slices.Compact(subjects), func(s string) bool { return s == "" })
	if _, err := db.ExecContext(ctx, s.d.q(`DELETE FROM watch_subjects WHERE posting = ?`), w.Posting); err != nil {
		return fmt.Errorf("series %s: its subjects: %w", w.Name, s.explain(err))
	}
	for _, subj := range subjects {
		if _, err := db.ExecContext(ctx, s.d.q(`INSERT INTO watch_subjects (posting, subject) VALUES (?, ?)`), w.Posting, subj); err != nil {
			return fmt.Errorf("series %s: its subjects: %w", w.Name, s.explain(err))
		}
	}
	return nil
}

// WatchSeriesList is every series of inbox ("" for every inbox), oldest
// first.
func (s *Store) WatchSeriesList(ctx context.Context, inbox string) ([]WatchSeries, error) {
	stmt := `SELECT posting, inbox, lab, name, version, previous, state, why, base, run_dir, reply, updated, subject, author, change_id FROM watch_series`
	var args []any
	if inbox != "" {
		stmt += ` WHERE inbox = ?`
		args = append(args, inbox)
	}
	rows, err := s.db.QueryContext(ctx, s.d.q(stmt+` ORDER BY updated, posting`), args...)
	if err != nil {
		return nil, s.explain(err)
	}
	defer rows.Close()
	var out []WatchSeries
	for rows.Next() {
		var w WatchSeries
		var updated string
		if err := rows.Scan(&w.Posting, &w.Inbox, &w.Lab, &w.Name, &w.Version, &w.Previous, &w.State, &w.Why, &w.Base, &w.RunDir, &w.Reply, &updated,
			&w.Subject, &w.Author, &w.ChangeID); err != nil {
			return nil, s.explain(err)
		}
		if w.Updated, err = time.Parse(time.RFC3339Nano, updated); err != nil {
			return nil, fmt.Errorf("series %s: time %q: %w", w.Name, updated, err)
		}
		out = append(out, w)
	}
	return out, s.explain(rows.Err())
}

// OutMail is a reply in the outbox.
type OutMail struct {
	ID         int64
	MessageID  string
	Posting    string
	Recipients string // comma-separated; "" for the Maildir only
	Raw        []byte
	// State is queued (not yet handed to anyone), sending (handed to the
	// MTA, not known to be taken: a watcher killed in between), sent or
	// failed.
	State  string
	Error  string
	Queued time.Time
	Sent   time.Time
}

// Answer records a series answered and queues its reply, in one
// transaction: a watcher killed before it answers again, one killed after
// it finds the reply queued.
func (s *Store) Answer(ctx context.Context, w WatchSeries, reply OutMail) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.explain(err)
	}
	defer tx.Rollback()
	w.Reply = reply.MessageID
	if err := s.putWatchSeries(ctx, tx, w); err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, s.d.q(`INSERT INTO watch_outbox (message_id, posting, recipients, raw, state, error, queued, sent)
		VALUES (?, ?, ?, ?, 'queued', '', ?, '')`),
		reply.MessageID, w.Posting, reply.Recipients, base64.StdEncoding.EncodeToString(reply.Raw), time.Now().UTC().Format(timeLayout))
	if err != nil {
		return fmt.Errorf("reply %s: %w", reply.MessageID, s.explain(err))
	}
	return s.explain(tx.Commit())
}

// Outbox lists the replies in the given states (every reply when none),
// oldest first.
func (s *Store) Outbox(ctx context.Context, states ...string) ([]OutMail, error) {
	rows, err := s.db.QueryContext(ctx, s.d.q(`SELECT id, message_id, posting, recipients, raw, state, error, queued, sent FROM watch_outbox ORDER BY id`))
	if err != nil {
		return nil, s.explain(err)
	}
	defer rows.Close()
	var out []OutMail
	for rows.Next() {
		var m OutMail
		var raw, queued, sent string
		if err := rows.Scan(&m.ID, &m.MessageID, &m.Posting, &m.Recipients, &raw, &m.State, &m.Error, &queued, &sent); err != nil {
			return nil, s.explain(err)
		}
		if len(states) > 0 && !slices.Contains(states, m.State) {
			continue
		}
		if m.Raw, err = base64.StdEncoding.DecodeString(raw); err != nil {
			return nil, fmt.Errorf("reply %s: %w", m.MessageID, err)
		}
		m.Queued, _ = time.Parse(time.RFC3339Nano, queued)
		m.Sent, _ = time.Parse(time.RFC3339Nano, sent)
		out = append(out, m)
	}
	return out, s.explain(rows.Err())
}

// MarkOut records what became of a reply: sending before it is handed
// to the MTA, then sent or failed (with the error).
func (s *Store) MarkOut(ctx context.Context, id int64, state, errText string) error {
	sent := ""
	if state == "sent" {
		sent = time.Now().UTC().Format(timeLayout)
	}
	_, err := s.db.ExecContext(ctx, s.d.q(`UPDATE watch_outbox SET state = ?, error = ?, sent = ? WHERE id = ?`), state, errText, sent, id)
	return s.explain(err)
}
