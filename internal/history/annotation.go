package history

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

const annotationsTable = `CREATE TABLE annotations (
	id {{id}},
	lab TEXT NOT NULL,
	line_key TEXT NOT NULL,
	commit_id TEXT NOT NULL,
	label TEXT NOT NULL,
	note TEXT NOT NULL,
	author TEXT NOT NULL,
	added TEXT NOT NULL)`

// The labels a person gives a change point. Expected and false positive
// take it out of a history's verdict (lab history detect's exit code); a
// note only says something of it.
const (
	LabelExpected      = "expected"
	LabelFalsePositive = "false positive"
	LabelNote          = "note"
)

// Labels are the labels an annotation may have, in the order pages offer them.
var Labels = []string{LabelExpected, LabelFalsePositive, LabelNote}

// MaxNote is the longest note an annotation keeps, in characters.
const MaxNote = 2000

// Annotation is what a person said of one change point: the line it is in
// and the first commit after it name it, as they name a culprit.
type Annotation struct {
	ID     int64
	Lab    string
	Line   string // LineKey.String() of the line the change point is in
	Commit string // the first commit after the change point
	Label  string // one of Labels
	Note   string
	Author string
	Added  time.Time
}

// Dismisses says whether the annotation takes its change point out of the
// verdict: someone who knew said it was expected or not a change.
func (a Annotation) Dismisses() bool {
	return a.Label == LabelExpected || a.Label == LabelFalsePositive
}

// Check says what makes the annotation one the history does not keep.
func (a Annotation) Check() error {
	switch {
	case a.Lab == "" || a.Line == "" || a.Commit == "":
		return fmt.Errorf("an annotation needs the lab, the line and the commit of its change point")
	case !slices.Contains(Labels, a.Label):
		return fmt.Errorf("annotation label %q: want one of %s", a.Label, strings.Join(Labels, ", "))
	case strings.TrimSpace(a.Author) == "":
		return fmt.Errorf("an annotation needs its author")
	case utf8.RuneCountInString(a.Author) > 200:
		return fmt.Errorf("annotation author: too long (%d characters, at most 200)", utf8.RuneCountInString(a.Author))
	case utf8.RuneCountInString(a.Note) > MaxNote:
		return fmt.Errorf("annotation note: too long (%d characters, at most %d)", utf8.RuneCountInString(a.Note), MaxNote)
	case !utf8.ValidString(a.Note + a.Author):
		return fmt.Errorf("annotation: not UTF-8 text")
	}
	return nil
}

// AddAnnotation keeps an annotation and returns its id. Annotations of one
// change point accumulate: the latest is its current word.
func (s *Store) AddAnnotation(ctx context.Context, a Annotation) (int64, error) {
	if err := a.Check(); err != nil {
		return 0, fmt.Errorf("history: %w", err)
	}
	if a.Added.IsZero() {
		a.Added = time.Now()
	}
	var id int64
	err := s.db.QueryRowContext(ctx, s.d.q(`INSERT INTO annotations (lab, line_key, commit_id, label, note, author, added)
		VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id`),
		a.Lab, a.Line, a.Commit, a.Label, a.Note, a.Author, a.Added.UTC().Format(timeLayout)).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("annotation of %s at %s: %w", a.Line, a.Commit, s.explain(err))
	}
	return id, nil
}

// Annotations lists a lab's annotations ("" for every lab), oldest first.
func (s *Store) Annotations(ctx context.Context, lab string) ([]Annotation, error) {
	stmt := `SELECT id, lab, line_key, commit_id, label, note, author, added FROM annotations`
	var args []any
	if lab != "" {
		stmt += ` WHERE lab = ?`
		args = append(args, lab)
	}
	rows, err := s.db.QueryContext(ctx, s.d.q(stmt+` ORDER BY id`), args...)
	if err != nil {
		return nil, s.explain(err)
	}
	defer rows.Close()
	var out []Annotation
	for rows.Next() {
		var a Annotation
		var added string
		if err := rows.Scan(&a.ID, &a.Lab, &a.Line, &a.Commit, &a.Label, &a.Note, &a.Author, &added); err != nil {
			return nil, s.explain(err)
		}
		if a.Added, err = time.Parse(time.RFC3339Nano, added); err != nil {
			return nil, s.explain(fmt.Errorf("annotation %d: time %q: %w", a.ID, added, err))
		}
		out = append(out, a)
	}
	return out, s.explain(rows.Err())
}
