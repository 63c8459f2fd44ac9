// Package inbox reads the mails a list archive gained since the last read:
// a public-inbox v2 inbox (git/N.git epochs, one commit per message, the
// mail in file m and a removed one in file d), which is what lore serves and
// `git clone --mirror` copies; a Maildir; or an mbox spool. Where the last
// read ended is a Cursor, a value the caller keeps (lab watch keeps it in
// the history database), so that a read is repeatable and a reader that was
// killed reads the same mails again rather than losing them. What a mail
// means is the caller's business.
package inbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
)

// Kind is what an archive is.
type Kind string

const (
	PublicInbox Kind = "public-inbox" // v2: git/0.git, git/1.git, ...
	Maildir     Kind = "maildir"      // cur/, new/, tmp/
	Mbox        Kind = "mbox"         // one file, mails appended
)

// Archive is one list archive on disk.
type Archive struct {
	Path string
	Kind Kind
}

// Open finds what kind of archive path is.
func Open(path string) (*Archive, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	info, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("inbox %s: %w", path, err)
	}
	a := &Archive{Path: abs}
	switch {
	case !info.IsDir():
		a.Kind = Mbox
	case isDir(filepath.Join(abs, "git", "0.git")) || len(epochs(abs)) > 0:
		a.Kind = PublicInbox
	case isDir(filepath.Join(abs, "cur")) && isDir(filepath.Join(abs, "new")):
		a.Kind = Maildir
	case isDir(filepath.Join(abs, "objects")) && isDir(filepath.Join(abs, "refs")):
		return nil, fmt.Errorf("inbox %s: a bare git repository, perhaps a public-inbox v1 inbox or one epoch of a v2 one: give the inbox's folder, the one that holds git/0.git", path)
	default:
		return nil, fmt.Errorf("inbox %s: not a public-inbox v2 inbox (no git/N.git), a Maildir (no cur/ and new/) or an mbox file", path)
	}
	return a, nil
}

func isDir(p string) bool {
	info, err := os.Stat(p)
	return err == nil && info.IsDir()
}

// Mail is one message the archive gained, as its bytes.
type Mail struct {
	// Where is where it is in the archive: "git/0.git 1a2b3c4d5e6f" (the
	// commit), a Maildir file's unique name, "mbox at 1234" (the offset).
	Where string
	Raw   []byte
	// Removed is a public-inbox commit that took the mail out of the
	// archive (file d, the mail that was removed): an administrator's
	// deletion of spam or of a mail sent in error.
	Removed bool
}

// Cursor is where the last read ended. Its zero value reads everything.
type Cursor struct {
	// Epochs is the last commit read of each public-inbox epoch.
	Epochs map[int]string `json:"epochs,omitempty"`
	// Maildir: the newest delivery read (its file time) and the unique
	// names of the files that have that time, read already.
	MaildirTime  int64    `json:"maildir_time,omitempty"`
	MaildirNames []string `json:"maildir_names,omitempty"`
	// Mbox: the length read and a digest of its first bytes, which tells
	// a spool that was appended to from one that was rewritten.
	MboxSize int64  `json:"mbox_size,omitempty"`
	MboxHead string `json:"mbox_head,omitempty"`
}

// Note is something a read found that the reader must be told: a new
// epoch, an epoch whose history was rewritten, a spool truncated.
type Note struct {
	Rewritten bool // the archive's history no longer holds the cursor: mails were read again
	Text      string
}

// Read calls each for every mail the archive gained after cur, oldest
// first, and returns the cursor after the last one with what it noticed.
// When each fails, Read stops and returns the cursor before that mail, so
// that the next read starts with it.
func (a *Archive) Read(ctx context.Context, cur Cursor, each func(Mail) error) (Cursor, []Note, error) {
	switch a.Kind {
	case PublicInbox:
		return a.readPublicInbox(ctx, cur, each)
	case Maildir:
		return a.readMaildir(ctx, cur, each)
	case Mbox:
		return a.readMbox(ctx, cur, each)
	}
	return cur, nil, fmt.Errorf("inbox %s: unknown kind %q", a.Path, a.Kind)
}

// epochs are the numbers of git/N.git in a v2 inbox, in order.
func epochs(dir string) []int {
	entries, err := os.ReadDir(filepath.Join(dir, "git"))
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		name := e.Name()
		if filepath.Ext(name) != ".git" || !e.IsDir() {
			continue
		}
		if n, err := strconv.Atoi(name[:len(name)-len(".git")]); err == nil && n >= 0 {
			out = append(out, n)
		}
	}
	// ReadDir sorts by name: "10.git" before "2.git".
	slices.Sort(out)
	return out
}
