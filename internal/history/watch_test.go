package history

import (
	"context"
	"slices"
	"strings"
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

// A pass reads only the mails not yet settled, and the settled postings it
// asks for; a posting is found by a mail of its thread (its key, a part's
// Message-ID) or as an earlier version (subject and author, change-id or
// a cover letter's link), on both databases.
func TestWatchSettledMails(t *testing.T) {
	ctx := context.Background()
	for _, d := range drivers(t) {
		t.Run(d.name, func(t *testing.T) {
			s := mustOpen(t, d.new(t))
			for i, id := range []string{"v1@x", "v1-1@x", "other@x", "v2@x"} {
				s.AddWatchMail(ctx, WatchMail{MessageID: id, Inbox: "/inbox", Kind: "patch", Arrived: t0.Add(time.Duration(i) * time.Second)})
			}
			s.AddWatchMail(ctx, WatchMail{MessageID: "elsewhere@x", Inbox: "/other", Kind: "patch", Arrived: t0})
			if err := s.SettleWatchMails(ctx, Settle{Posting: "v1@x", IDs: []string{"v1@x", "v1-1@x"}}); err != nil {
				t.Fatal(err)
			}
			// In one call; a settled mail keeps its posting.
			s.SettleWatchMails(ctx, Settle{Posting: "-", Reason: "a second cover letter", IDs: []string{"other@x"}},
				Settle{Posting: "v2@x", IDs: []string{"v1-1@x", "v2@x"}})
			ids := func(ms []WatchMail, err error) string {
				if err != nil {
					t.Fatal(err)
				}
				var out []string
				for _, m := range ms {
					out = append(out, m.MessageID+"="+m.Posting)
				}
				return strings.Join(out, " ")
			}
			s.AddWatchMail(ctx, WatchMail{MessageID: "v3@x", Inbox: "/inbox", Kind: "cover", Arrived: t0.Add(time.Minute)})
			if got := ids(s.OpenWatchMails(ctx, "/inbox", nil, "patch", "cover")); got != "v3@x=" {
				t.Errorf("open mails: %s", got)
			}
			if got := ids(s.OpenWatchMails(ctx, "/inbox", []string{"v1@x", "", "-", "v1@x"}, "patch", "cover")); got != "v1@x=v1@x v1-1@x=v1@x v3@x=" {
				t.Errorf("open mails with v1's: %s", got)
			}
			if dropped, err := s.DroppedWatchMails(ctx, "/inbox"); err != nil || len(dropped) != 1 || dropped[0].MessageID != "other@x" || dropped[0].Reason != "a second cover letter" {
				t.Errorf("mails no posting took: %+v, %v", dropped, err)
			}
			for _, tc := range []struct{ ids, want []string }{
				{[]string{"v1-1@x", ""}, []string{"v1@x"}},
				{[]string{"v1@x"}, []string{"v1@x"}},
				{[]string{"v2@x", "other@x", "nosuch@x"}, []string{"v2@x"}},
				{[]string{"", "v3@x"}, nil},
			} {
				if got, err := s.SettledPostings(ctx, "/inbox", tc.ids); err != nil || !slices.Equal(got, tc.want) {
					t.Errorf("SettledPostings(%q) = %q, %v; want %q", tc.ids, got, err, tc.want)
				}
			}
			s.PutWatchSeries(ctx, WatchSeries{Posting: "v1@x", Inbox: "/inbox", Version: 1, State: "answered",
				Subject: "Uprobes: Lazy Buffer", Author: "andrii@kernel.org", ChangeID: "20241001-lazy"})
			s.PutWatchSeries(ctx, WatchSeries{Posting: "v2@x", Inbox: "/inbox", Version: 2, State: "running",
				Subject: "uprobes: lazy buffer", Author: "andrii@kernel.org"})
			for _, tc := range []struct {
				name                      string
				v                         int
				resend                    bool
				subject, author, changeID string
				linked                    []string
				want                      []string
			}{
				{"subject and author", 3, false, "uprobes: LAZY buffer", "andrii@kernel.org", "", nil, []string{"v1@x"}},
				{"another author", 3, false, "uprobes: lazy buffer", "x@y", "", nil, nil},
				{"change-id", 3, false, "uprobes: renamed", "x@y", "20241001-lazy", nil, []string{"v1@x"}},
				{"a link", 3, false, "renamed", "x@y", "", []string{"v1@x"}, []string{"v1@x"}},
				{"not a later version", 1, false, "uprobes: lazy buffer", "andrii@kernel.org", "", nil, nil},
				{"a resend of v1", 1, true, "uprobes: lazy buffer", "andrii@kernel.org", "", nil, []string{"v1@x"}},
			} {
				got, err := s.EarlierVersions(ctx, "/inbox", Earlier{Version: tc.v, Resend: tc.resend, Subjects: []string{"a patch's subject", tc.subject}, Author: tc.author, ChangeID: tc.changeID, Linked: tc.linked})
				if err != nil || !slices.Equal(got, tc.want) {
					t.Errorf("%s: %q, %v; want %q (v2, still running, is never one)", tc.name, got, err, tc.want)
				}
			}
		})
	}
}
