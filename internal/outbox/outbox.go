// Package outbox delivers the replies lab watch queued in the history: to
// a Maildir (a file per reply, named by its Message-ID, so writing it
// twice is writing it once) and over SMTP to an MTA. A reply is marked
// "sending" in the history before it is handed to the MTA and "sent"
// after: a watcher killed in between leaves it "sending", and such a reply
// is reported and never handed over again by itself (the MTA may have
// taken it), so that nothing is sent twice; every other reply not yet
// sent is tried again at the next delivery, so that nothing is lost.
package outbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/mail"
	"net/smtp"
	"os"
	"path/filepath"
	"strings"
	"time"

	"lab/internal/history"
)

// Delivery is where replies go.
type Delivery struct {
	Maildir string // "" for none
	// SMTP is the MTA's host:port, "" for none. A reply without
	// recipients (lab watch's default, --to none) is never mailed.
	SMTP string
	// Sender is the envelope sender.
	Sender string
	Out    io.Writer
}

// Report is what one delivery did.
type Report struct {
	Maildir, Mailed int
	Failed          []string // replies tried again next time, with why
	Unsure          []string // replies a killed watcher left with the MTA: not sent again
}

// Deliver hands every reply not yet sent to the Maildir and the MTA.
func Deliver(ctx context.Context, store *history.Store, d Delivery) (*Report, error) {
	if d.Out == nil {
		d.Out = io.Discard
	}
	pending, err := store.Outbox(ctx, "queued", "sending")
	if err != nil {
		return nil, err
	}
	r := &Report{}
	for _, m := range pending {
		if m.State == "sending" {
			why := fmt.Sprintf("reply %s: lab was stopped while handing it to %s, which may have taken it: not sent again (check the MTA's log)", m.MessageID, d.SMTP)
			r.Unsure = append(r.Unsure, why)
			fmt.Fprintf(d.Out, "outbox: %s\n", why)
			continue
		}
		if d.Maildir != "" {
			if err := WriteMaildir(d.Maildir, m); err != nil {
				return r, err
			}
			r.Maildir++
		}
		if d.SMTP == "" || m.Recipients == "" {
			if err := store.MarkOut(ctx, m.ID, "sent", ""); err != nil {
				return r, err
			}
			continue
		}
		if err := store.MarkOut(ctx, m.ID, "sending", ""); err != nil {
			return r, err
		}
		if err := Send(ctx, d.SMTP, d.Sender, m); err != nil {
			why := fmt.Sprintf("reply %s to %s: %v", m.MessageID, m.Recipients, err)
			r.Failed = append(r.Failed, why)
			fmt.Fprintf(d.Out, "outbox: %s: tried again at the next delivery\n", why)
			if err := store.MarkOut(ctx, m.ID, "queued", err.Error()); err != nil {
				return r, err
			}
			continue
		}
		if err := store.MarkOut(ctx, m.ID, "sent", ""); err != nil {
			return r, err
		}
		r.Mailed++
		fmt.Fprintf(d.Out, "outbox: reply %s mailed to %s through %s\n", m.MessageID, m.Recipients, d.SMTP)
	}
	return r, nil
}

// WriteMaildir writes a reply into dir/new, through dir/tmp as Maildir
// wants, under a name made of its Message-ID: a reply already there (in
// new/ or, read, in cur/) is not written again.
func WriteMaildir(dir string, m history.OutMail) error {
	for _, sub := range []string{"tmp", "new", "cur"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return fmt.Errorf("maildir %s: %w", dir, err)
		}
	}
	sum := sha256.Sum256([]byte(m.MessageID))
	name := "lab-" + hex.EncodeToString(sum[:12])
	if done, _ := filepath.Glob(filepath.Join(dir, "cur", name+"*")); len(done) > 0 {
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, "new", name)); err == nil {
		return nil
	}
	tmp := filepath.Join(dir, "tmp", name)
	if err := os.WriteFile(tmp, []byte(strings.ReplaceAll(string(m.Raw), "\r\n", "\n")), 0o644); err != nil {
		return fmt.Errorf("maildir %s: %w", dir, err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "new", name)); err != nil {
		return fmt.Errorf("maildir %s: %w", dir, err)
	}
	return nil
}

// Send hands one reply to the MTA at addr.
func Send(ctx context.Context, addr, sender string, m history.OutMail) error {
	var rcpt []string
	for _, r := range strings.Split(m.Recipients, ",") {
		a, err := mail.ParseAddress(strings.TrimSpace(r))
		if err != nil {
			return fmt.Errorf("recipient %q: %w", r, err)
		}
		rcpt = append(rcpt, a.Address)
	}
	if a, err := mail.ParseAddress(sender); err == nil {
		sender = a.Address
	}
	dialer := net.Dialer{Timeout: 30 * time.Second}
	conn, err := dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	} else {
		conn.SetDeadline(time.Now().Add(2 * time.Minute))
	}
	host, _, _ := net.SplitHostPort(addr)
	c, err := smtp.NewClient(conn, host)
	if err != nil {
		conn.Close()
		return err
	}
	defer c.Close()
	if err := c.Hello("localhost"); err != nil {
		return err
	}
	if err := c.Mail(sender); err != nil {
		return err
	}
	for _, r := range rcpt {
		if err := c.Rcpt(r); err != nil {
			return fmt.Errorf("RCPT TO %s: %w", r, err)
		}
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	if _, err := w.Write(m.Raw); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	if err := c.Quit(); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}
