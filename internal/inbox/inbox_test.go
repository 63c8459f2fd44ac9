package inbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lab/internal/series/mbox"
	"lab/internal/testenv"
)

func mailText(n int) []byte {
	return []byte(fmt.Sprintf("From: Ann Dev <ann@example.com>\nTo: test-list@example.org\nSubject: [PATCH] mail %d\nMessage-ID: <m%d@example.com>\nDate: Thu, 03 Dec 2026 10:%02d:00 +0000\n\nbody %d\n", n, n, n, n))
}

// read reads what the archive gained since cur and gives each mail's
// Message-ID ("-" before it for a removal).
func read(t *testing.T, a *Archive, cur Cursor) (Cursor, []string, []Note) {
	t.Helper()
	var ids []string
	next, notes, err := a.Read(context.Background(), cur, func(m Mail) error {
		d, err := mbox.ReadMail(m.Raw)
		if strings.HasPrefix(string(m.Raw), "From ") {
			d, err = mbox.ReadFromLine(m.Raw)
		}
		if err != nil {
			t.Fatalf("%s: %v", m.Where, err)
		}
		id := d.MessageID
		if m.Removed {
			id = "-" + id
		}
		ids = append(ids, id)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return next, ids, notes
}

func want(t *testing.T, what string, got []string, ids ...string) {
	t.Helper()
	if strings.Join(got, " ") != strings.Join(ids, " ") {
		t.Errorf("%s: read %q, want %q", what, got, ids)
	}
}

// A real v2 inbox, made and written by Debian's public-inbox: new mails
// after the cursor, a removal, a new epoch, a rewritten epoch.
func TestPublicInbox(t *testing.T) {
	pi := testenv.NewPublicInbox(t)
	for n := 1; n <= 3; n++ {
		pi.Deliver(t, mailText(n))
	}
	a, err := Open(pi.Dir)
	if err != nil || a.Kind != PublicInbox {
		t.Fatalf("Open: %+v, %v", a, err)
	}
	cur, ids, _ := read(t, a, Cursor{})
	want(t, "from nothing", ids, "<m1@example.com>", "<m2@example.com>", "<m3@example.com>")
	_, ids, _ = read(t, a, cur)
	want(t, "again", ids)

	pi.Deliver(t, mailText(4))
	pi.Remove(t, mailText(2))
	cur, ids, _ = read(t, a, cur)
	want(t, "a mail and a removal", ids, "<m4@example.com>", "-<m2@example.com>")

	// public-inbox starts epoch 1 when epoch 0's packs pass 1 GB: a sparse
	// pack file of that size (no disk, and no index, so git never opens
	// it) makes the real tool roll over at the next mail.
	pack := filepath.Join(pi.Dir, "git", "0.git", "objects", "pack", "pack-lab-sparse.pack")
	if err := os.WriteFile(pack, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(pack, 1<<30); err != nil {
		t.Fatal(err)
	}
	pi.Deliver(t, mailText(5))
	if _, err := os.Stat(filepath.Join(pi.Dir, "git", "1.git")); err != nil {
		t.Fatalf("public-inbox made no epoch 1: %v", err)
	}
	os.Remove(pack)
	cur, ids, notes := read(t, a, cur)
	want(t, "a new epoch", ids, "<m5@example.com>")
	if len(notes) != 1 || !strings.Contains(notes[0].Text, "new epoch 1") {
		t.Errorf("notes %+v, want the new epoch", notes)
	}
	if cur.Epochs[0] == "" || cur.Epochs[1] == "" {
		t.Errorf("cursor %+v, want both epochs", cur)
	}

	// public-inbox-purge erases a mail from the history itself: epoch 0 is
	// rewritten, and read again from its start.
	purge := exec.Command("public-inbox-purge", pi.Dir)
	purge.Env, purge.Stdin = pi.Env(), strings.NewReader(string(mailText(3)))
	if out, err := purge.CombinedOutput(); err != nil {
		t.Fatalf("public-inbox-purge: %v\n%s", err, out)
	}
	pi.Deliver(t, mailText(6))
	_, ids, notes = read(t, a, cur)
	want(t, "after a purge", ids, "<m1@example.com>", "<m2@example.com>", "<m4@example.com>", "-<m2@example.com>", "<m6@example.com>")
	if len(notes) != 1 || !notes[0].Rewritten || !strings.Contains(notes[0].Text, "epoch 0 (git/0.git) was rewritten") {
		t.Errorf("notes %+v, want epoch 0 rewritten", notes)
	}
}

// A reader that fails on a mail gets a cursor before it: the next read
// starts with that mail, so a watcher killed mid-batch loses nothing.
func TestReadStopsBeforeTheFailedMail(t *testing.T) {
	dir := t.TempDir()
	spool := filepath.Join(dir, "spool")
	var data []byte
	for n := 1; n <= 3; n++ {
		data = append(data, "From ann@example.com Thu Dec  3 10:00:00 2026\n"...)
		data = append(data, mailText(n)...)
	}
	os.WriteFile(spool, data, 0o644)
	a, err := Open(spool)
	if err != nil || a.Kind != Mbox {
		t.Fatalf("Open: %+v, %v", a, err)
	}
	n := 0
	cur, _, err := a.Read(context.Background(), Cursor{}, func(Mail) error {
		if n++; n == 2 {
			return fmt.Errorf("killed")
		}
		return nil
	})
	if err == nil {
		t.Fatal("no error")
	}
	_, ids, _ := read(t, a, cur)
	want(t, "after the failure", ids, "<m2@example.com>", "<m3@example.com>")
}

// An mbox spool: appended mails are new; a spool rewritten (expunged) is
// read again from its start, and said so.
func TestMboxSpool(t *testing.T) {
	spool := filepath.Join(t.TempDir(), "list.mbox")
	add := func(n int) {
		f, err := os.OpenFile(spool, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(f, "From ann@example.com Thu Dec  3 10:00:00 2026\n%s\n", mailText(n))
		f.Close()
	}
	add(1)
	add(2)
	a, _ := Open(spool)
	cur, ids, _ := read(t, a, Cursor{})
	want(t, "first", ids, "<m1@example.com>", "<m2@example.com>")
	add(3)
	cur, ids, _ = read(t, a, cur)
	want(t, "appended", ids, "<m3@example.com>")
	os.Remove(spool)
	add(4)
	_, ids, notes := read(t, a, cur)
	want(t, "rewritten", ids, "<m4@example.com>")
	if len(notes) != 1 || !notes[0].Rewritten {
		t.Errorf("notes %+v, want the rewrite", notes)
	}
}

// A Maildir: files delivered after the cursor, whether a client has moved
// them to cur/ with flags or not.
func TestMaildir(t *testing.T) {
	dir := t.TempDir()
	for _, sub := range []string{"new", "cur", "tmp"} {
		os.MkdirAll(filepath.Join(dir, sub), 0o755)
	}
	base := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	deliver := func(n int) string {
		name := fmt.Sprintf("%d.M%dP1.host", base.Unix()+int64(n), n)
		p := filepath.Join(dir, "new", name)
		os.WriteFile(p, mailText(n), 0o644)
		os.Chtimes(p, base.Add(time.Duration(n)*time.Second), base.Add(time.Duration(n)*time.Second))
		return name
	}
	first := deliver(1)
	deliver(2)
	a, err := Open(dir)
	if err != nil || a.Kind != Maildir {
		t.Fatalf("Open: %+v, %v", a, err)
	}
	cur, ids, _ := read(t, a, Cursor{})
	want(t, "first", ids, "<m1@example.com>", "<m2@example.com>")
	// A client read mail 1: new/ → cur/ with flags, its time kept.
	if err := os.Rename(filepath.Join(dir, "new", first), filepath.Join(dir, "cur", first+":2,S")); err != nil {
		t.Fatal(err)
	}
	deliver(3)
	_, ids, _ = read(t, a, cur)
	want(t, "after a move and a delivery", ids, "<m3@example.com>")
}

func TestOpenSaysWhatItWants(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "not a public-inbox v2 inbox") {
		t.Errorf("empty folder: %v", err)
	}
	if out, err := exec.Command("git", "init", "-q", "--bare", filepath.Join(dir, "v1")).CombinedOutput(); err != nil {
		t.Fatal(err, string(out))
	}
	if _, err := Open(filepath.Join(dir, "v1")); err == nil || !strings.Contains(err.Error(), "give the inbox's folder") {
		t.Errorf("bare repository: %v", err)
	}
	if _, err := Open(filepath.Join(dir, "none")); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing: %v", err)
	}
}
