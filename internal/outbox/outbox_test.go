package outbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lab/internal/history"
	"lab/internal/testenv"
)

func queue(t *testing.T, s *history.Store, n int) string {
	t.Helper()
	id := fmt.Sprintf("reply-%d@lab", n)
	raw := fmt.Sprintf("From: lab <lab@localhost>\r\nTo: dev@example.org\r\nSubject: Re: [PATCH] x %d\r\nMessage-ID: <%s>\r\n\r\nmeasured\r\n", n, id)
	err := s.Answer(context.Background(), history.WatchSeries{Posting: fmt.Sprintf("p%d@x", n), Inbox: "/inbox", Name: "[PATCH] x", State: "answered"},
		history.OutMail{MessageID: id, Recipients: "Dev <dev@example.org>", Raw: []byte(raw)})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// Replies go to a Maildir and through a real MTA (OpenSMTPD, started by
// the test) once each: an MTA that is down leaves them queued for the
// next delivery, and a reply a killed watcher left with the MTA is
// reported, never sent again.
func TestDeliver(t *testing.T) {
	ctx := context.Background()
	s, err := history.Open(ctx, filepath.Join(t.TempDir(), "history.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mta := testenv.StartMTA(t)
	local := filepath.Join(t.TempDir(), "replies")
	first := queue(t, s, 1)

	// The MTA is down: nothing lost, the reply stays queued.
	r, err := Deliver(ctx, s, Delivery{Maildir: local, SMTP: "127.0.0.1:1", Sender: "lab@localhost"})
	if err != nil || len(r.Failed) != 1 || r.Maildir != 1 {
		t.Fatalf("MTA down: %+v, %v", r, err)
	}
	if q, _ := s.Outbox(ctx, "queued"); len(q) != 1 || q[0].Error == "" {
		t.Fatalf("after a failed send: %+v", q)
	}

	queue(t, s, 2)
	r, err = Deliver(ctx, s, Delivery{Maildir: local, SMTP: mta.Addr, Sender: "lab@localhost"})
	if err != nil || r.Mailed != 2 || len(r.Failed) != 0 {
		t.Fatalf("deliver: %+v, %v", r, err)
	}
	got := mta.Delivered(t, 2)
	if len(got) != 2 {
		t.Fatalf("the MTA delivered %d mails, want 2", len(got))
	}
	for _, m := range got {
		if !strings.Contains(string(m), "Subject: Re: [PATCH] x") {
			t.Errorf("delivered:\n%s", m)
		}
	}
	if files, _ := filepath.Glob(filepath.Join(local, "new", "*")); len(files) != 2 {
		t.Errorf("local Maildir holds %d replies, want 2 (the first written once)", len(files))
	}

	// Again: nothing to send.
	if r, err := Deliver(ctx, s, Delivery{Maildir: local, SMTP: mta.Addr, Sender: "lab@localhost"}); err != nil || r.Mailed+r.Maildir != 0 {
		t.Errorf("again: %+v, %v", r, err)
	}

	// A watcher killed while the MTA had a reply: reported, not resent.
	queue(t, s, 3)
	q, _ := s.Outbox(ctx, "queued")
	s.MarkOut(ctx, q[0].ID, "sending", "")
	r, err = Deliver(ctx, s, Delivery{Maildir: local, SMTP: mta.Addr, Sender: "lab@localhost"})
	if err != nil || r.Mailed != 0 || len(r.Unsure) != 1 || !strings.Contains(r.Unsure[0], "not sent again") {
		t.Fatalf("left sending: %+v, %v", r, err)
	}
	if n := len(mta.Delivered(t, 2)); n != 2 {
		t.Errorf("the MTA has %d mails, want still 2", n)
	}
	_ = first
	_ = os.Remove
}
