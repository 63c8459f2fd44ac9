package history

import (
	"context"
	"testing"
	"time"
)

// The watcher's state on both databases: a cursor per inbox, a mail
// recorded once whatever the number of deliveries, a series' state
// replaced, and a reply queued with its series' answer in one step, then
// marked as it goes out. A mail's bytes (8-bit, not UTF-8) come back as
// they went in.
func TestWatchState(t *testing.T) {
	ctx := context.Background()
	for _, d := range drivers(t) {
		t.Run(d.name, func(t *testing.T) {
			s := mustOpen(t, d.new(t))
			if cur, err := s.WatchCursor(ctx, "/inbox"); cur != "" || err != nil {
				t.Fatalf("first cursor %q, %v", cur, err)
			}
			for _, c := range []string{`{"epochs":{"0":"a"}}`, `{"epochs":{"0":"b"}}`} {
				if err := s.SaveWatchCursor(ctx, "/inbox", c); err != nil {
					t.Fatal(err)
				}
			}
			if cur, _ := s.WatchCursor(ctx, "/inbox"); cur != `{"epochs":{"0":"b"}}` {
				t.Errorf("cursor %q", cur)
			}
			raw := []byte("Subject: [PATCH] caf\xe9\n\n\x00diff\n")
			m := WatchMail{MessageID: "a@x", Inbox: "/inbox", Where: "git/0.git 1", Kind: "patch", Arrived: t0, Raw: raw}
			for i, want := range []bool{true, false} {
				if added, err := s.AddWatchMail(ctx, m); added != want || err != nil {
					t.Errorf("delivery %d: added %v, %v", i+1, added, err)
				}
			}
			s.AddWatchMail(ctx, WatchMail{MessageID: "b@x", Inbox: "/inbox", Where: "git/0.git 2", Kind: "other", Reason: "no [PATCH] tag", Arrived: t0.Add(time.Second)})
			mails, err := s.WatchMails(ctx, "/inbox", "patch", "cover")
			if err != nil || len(mails) != 1 || string(mails[0].Raw) != string(raw) || !mails[0].Arrived.Equal(t0) {
				t.Fatalf("patch mails %+v, %v", mails, err)
			}
			w := WatchSeries{Posting: "a@x", Inbox: "/inbox", Lab: "lazy", Name: "[PATCH] x", Version: 1, State: "queued"}
			s.PutWatchSeries(ctx, w)
			w.State = "running"
			s.PutWatchSeries(ctx, w)
			w.State, w.RunDir = "answered", "/results/lazy/1"
			if err := s.Answer(ctx, w, OutMail{MessageID: "reply-1@lab", Recipients: "dev@example.org", Raw: raw}); err != nil {
				t.Fatal(err)
			}
			list, err := s.WatchSeriesList(ctx, "")
			if err != nil || len(list) != 1 || list[0].State != "answered" || list[0].Reply != "reply-1@lab" || list[0].RunDir != "/results/lazy/1" {
				t.Fatalf("series %+v, %v", list, err)
			}
			out, err := s.Outbox(ctx, "queued")
			if err != nil || len(out) != 1 || string(out[0].Raw) != string(raw) {
				t.Fatalf("outbox %+v, %v", out, err)
			}
			if err := s.MarkOut(ctx, out[0].ID, "sent", ""); err != nil {
				t.Fatal(err)
			}
			if q, _ := s.Outbox(ctx, "queued", "sending"); len(q) != 0 {
				t.Errorf("still queued: %+v", q)
			}
			// A second answer of the same reply is refused whole: the
			// series' state is not changed either.
			w.State = "failed"
			if err := s.Answer(ctx, w, OutMail{MessageID: "reply-1@lab"}); err == nil {
				t.Error("the same reply queued twice")
			}
			if list, _ := s.WatchSeriesList(ctx, "/inbox"); list[0].State != "answered" {
				t.Errorf("state %s after a refused answer", list[0].State)
			}
		})
	}
}
