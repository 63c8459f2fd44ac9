package inbox

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"lab/internal/series/mbox"
)

// readMaildir reads the files of new/ and cur/ delivered after the cursor,
// in the order of their delivery (file time, then name). A file keeps its
// time when a mail client moves it from new/ to cur/ and renames it with
// flags; the part of its name before ':' stays, and is what the cursor
// keeps.
func (a *Archive) readMaildir(ctx context.Context, cur Cursor, each func(Mail) error) (Cursor, []Note, error) {
	type file struct {
		path, unique string
		time         int64
	}
	var files []file
	for _, sub := range []string{"new", "cur"} {
		entries, err := os.ReadDir(filepath.Join(a.Path, sub))
		if err != nil {
			return cur, nil, fmt.Errorf("maildir %s: %w", a.Path, err)
		}
		for _, e := range entries {
			if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") {
				continue
			}
			info, err := e.Info()
			if err != nil {
				continue // moved between new/ and cur/ while listed: read next time
			}
			unique, _, _ := strings.Cut(e.Name(), ":")
			files = append(files, file{filepath.Join(a.Path, sub, e.Name()), unique, info.ModTime().UnixNano()})
		}
	}
	slices.SortFunc(files, func(x, y file) int {
		if x.time != y.time {
			return cmp.Compare(x.time, y.time)
		}
		return strings.Compare(x.unique, y.unique)
	})
	next := Cursor{MaildirTime: cur.MaildirTime, MaildirNames: slices.Clone(cur.MaildirNames)}
	for _, f := range files {
		if f.time < next.MaildirTime || f.time == next.MaildirTime && slices.Contains(next.MaildirNames, f.unique) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return next, nil, err
		}
		raw, err := os.ReadFile(f.path)
		if err != nil {
			return next, nil, fmt.Errorf("maildir %s: %w", a.Path, err)
		}
		if err := each(Mail{Where: f.unique, Raw: raw}); err != nil {
			return next, nil, err
		}
		if f.time > next.MaildirTime {
			next.MaildirTime, next.MaildirNames = f.time, nil
		}
		next.MaildirNames = append(next.MaildirNames, f.unique)
	}
	return next, nil, nil
}

// headLen is how much of a spool's start the cursor's digest covers.
const headLen = 4096

// readMbox reads the mails appended to an mbox spool since the cursor. A
// spool shorter than the cursor, or whose first bytes changed, was
// rewritten (expunged, rotated): it is read again from its start.
func (a *Archive) readMbox(ctx context.Context, cur Cursor, each func(Mail) error) (Cursor, []Note, error) {
	data, err := os.ReadFile(a.Path)
	if err != nil {
		return cur, nil, fmt.Errorf("mbox %s: %w", a.Path, err)
	}
	var notes []Note
	from := cur.MboxSize
	if from > int64(len(data)) || from > 0 && digest(data[:min(from, headLen)]) != cur.MboxHead {
		notes = append(notes, Note{Rewritten: true, Text: fmt.Sprintf(
			"mbox %s was rewritten (it is not the %d bytes read before with more appended): read again from its start, and mails seen before are not answered again", a.Path, cur.MboxSize)})
		from = 0
	}
	next := Cursor{MboxSize: from, MboxHead: cur.MboxHead}
	rest := data[from:]
	if len(bytes.TrimSpace(rest)) == 0 {
		return next, notes, nil
	}
	spans := mbox.Spans(rest)
	if spans == nil {
		return next, notes, fmt.Errorf("mbox %s at byte %d: not a mail's \"From \" line: %q", a.Path, from, firstLine(rest))
	}
	for _, sp := range spans {
		if err := ctx.Err(); err != nil {
			return next, notes, err
		}
		at := from + int64(sp[0])
		if err := each(Mail{Where: fmt.Sprintf("mbox at byte %d", at), Raw: rest[sp[0]:sp[1]]}); err != nil {
			return next, notes, err
		}
		next.MboxSize = from + int64(sp[1])
		next.MboxHead = digest(data[:min(next.MboxSize, headLen)])
	}
	return next, notes, nil
}

func digest(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func firstLine(b []byte) string {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	return string(line[:min(len(line), 80)])
}
