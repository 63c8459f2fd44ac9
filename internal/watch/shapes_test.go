package watch

import (
	"bytes"
	"context"
	"fmt"
	"net/mail"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lab/internal/history"
	"lab/internal/inbox"
	"lab/internal/spec"
	"lab/internal/testenv"
)

// patch is a patch mail's body touching kernel/events/uprobes.c; n tells
// one code change from another.
func patch(n int) string {
	return fmt.Sprintf("A change.\n\nSigned-off-by: Dev <dev@example.org>\n---\n kernel/events/uprobes.c | 2 +-\n\n"+
		"diff --git a/kernel/events/uprobes.c b/kernel/events/uprobes.c\nindex 1111111..%07d 100644\n"+
		"--- a/kernel/events/uprobes.c\n+++ b/kernel/events/uprobes.c\n@@ -1,3 +1,3 @@\n a\n-b\n+c%d\n d\n-- \n2.39.5\n", n, n)
}

// parts are n patches of subjects "uprobes: part K", code changes from
// first on.
func parts(n, first int) [][2]string {
	var out [][2]string
	for k := 1; k <= n; k++ {
		out = append(out, [2]string{fmt.Sprintf("uprobes: part %d", k), patch(first + k - 1)})
	}
	return out
}

// in picks mails of a sending by index (0 is the cover letter, or the
// first patch without one), in the order given: parts out of order.
func in(s testenv.Sending, idx ...int) [][]byte {
	all := s.Mails()
	var out [][]byte
	for _, i := range idx {
		out = append(out, all[i])
	}
	return out
}

// A corpus of the shapes real senders give a series, each with the
// postings lab must assemble from it: the runs asked for (each kernel's
// name and posting), what the newest reply answers and says, and what
// the series wait for between passes.
func TestSeriesShapes(t *testing.T) {
	v1 := testenv.Sending{ID: "v1@x", Subject: "uprobes: speed ups", Patches: parts(2, 1)}
	v2of1 := testenv.Sending{ID: "v2@x", Version: 2, Subject: "uprobes: speed ups", Patches: parts(1, 1)}
	bug := testenv.Mail([][2]string{{"From", "User <user@example.org>"}, {"Subject", "uprobes crash on attach"}, {"Message-ID", "<bug@x>"}}, "It crashes.\n")
	type pass struct {
		mails [][]byte
		state []string // "state: why" of each series recorded after the pass (in part)
	}
	for _, tc := range []struct {
		name   string
		passes []pass
		jobs   []string // every job asked for, in order: "name=posting" of each kernel, joined by ", "
		answer string   // the Message-ID the newest reply answers
		says   []string // what the newest reply holds
	}{
		{name: "0/1 + 1/1 is one posting, answered under its cover letter",
			passes: []pass{{mails: testenv.Sending{ID: "a@x", Subject: "uprobes: one", Patches: parts(1, 1)}.Mails()}},
			jobs:   []string{"patched=[PATCH 0/1] uprobes: one"}, answer: "a@x"},
		{name: "1/1 alone",
			passes: []pass{{mails: testenv.Sending{ID: "b@x", NoCover: true, Patches: parts(1, 1)}.Mails()}},
			jobs:   []string{"patched=[PATCH] uprobes: part 1"}, answer: "b-1@x"},
		{name: "0/3 shallow, out of order across two passes",
			passes: []pass{
				{mails: in(testenv.Sending{ID: "c@x", Subject: "uprobes: three", Patches: parts(3, 1)}, 3, 0), state: []string{"waiting: patches 1, 2 of 3 not come yet"}},
				{mails: in(testenv.Sending{ID: "c@x", Subject: "uprobes: three", Patches: parts(3, 1)}, 2, 1)}},
			jobs: []string{"patched=[PATCH 0/3] uprobes: three"}, answer: "c@x"},
		{name: "0/3 deep, out of order across two passes",
			passes: []pass{
				{mails: in(testenv.Sending{ID: "d@x", Deep: true, Subject: "uprobes: deep", Patches: parts(3, 1)}, 3, 2), state: []string{"waiting: patches 1 of 3 not come yet"}},
				{mails: in(testenv.Sending{ID: "d@x", Deep: true, Subject: "uprobes: deep", Patches: parts(3, 1)}, 1, 0), state: []string{"answered"}}},
			jobs: []string{"patched=[PATCH 0/3] uprobes: deep"}, answer: "d@x"},
		{name: "1/1 in one pass, its cover letter in the next",
			passes: []pass{
				{mails: in(testenv.Sending{ID: "k@x", Subject: "uprobes: late cover", Patches: parts(1, 1)}, 1), state: []string{"waiting: the mail its patches reply to (k@x"}},
				{mails: in(testenv.Sending{ID: "k@x", Subject: "uprobes: late cover", Patches: parts(1, 1)}, 0), state: []string{"answered"}}},
			jobs: []string{"patched=[PATCH 0/1] uprobes: late cover"}, answer: "k@x"},
		{name: "not threaded, out of order",
			passes: []pass{{mails: in(testenv.Sending{ID: "l@x", Unthreaded: true, Subject: "uprobes: loose", Patches: parts(2, 1)}, 2, 0, 1)}},
			jobs:   []string{"patched=[PATCH 0/2] uprobes: loose"}, answer: "l@x"},
		{name: "a fix in reply to a bug report",
			passes: []pass{{mails: append([][]byte{bug}, testenv.Sending{ID: "m@x", NoCover: true, InReplyTo: "bug@x", Patches: parts(1, 1)}.Mails()...)}},
			jobs:   []string{"patched=[PATCH] uprobes: part 1"}, answer: "m-1@x"},
		{name: "a v2 of another length, in a new thread: 0/2 then 0/1",
			passes: []pass{{mails: v1.Mails()}, {mails: v2of1.Mails()}},
			jobs:   []string{"patched=[PATCH 0/2] uprobes: speed ups", "v1=[PATCH 0/2] uprobes: speed ups, v2=[PATCH v2 0/1] uprobes: speed ups"},
			answer: "v2@x", says: []string{"compared: v2 against v1 ([PATCH 0/2] uprobes: speed ups) and against the base", "b4 am -o - 'v1@x' > v1.mbx"}},
		{name: "a v2 of another length in v1's thread, its subject changed",
			passes: []pass{{mails: v1.Mails()}, {mails: testenv.Sending{ID: "p2@x", Version: 2, InReplyTo: "v1@x", Subject: "uprobes: one speed up", Patches: parts(1, 7)}.Mails()}},
			jobs:   []string{"patched=[PATCH 0/2] uprobes: speed ups", "v1=[PATCH 0/2] uprobes: speed ups, v2=[PATCH v2 0/1] uprobes: one speed up"},
			answer: "p2@x", says: []string{"v2 against v1"}},
		{name: "a v2 of one patch without a cover letter, known by a patch's subject",
			passes: []pass{{mails: v1.Mails()}, {mails: testenv.Sending{ID: "f2@x", Version: 2, Lone: true, Patches: parts(1, 5)}.Mails()}},
			jobs:   []string{"patched=[PATCH 0/2] uprobes: speed ups", "v1=[PATCH 0/2] uprobes: speed ups, v2=[PATCH v2] uprobes: part 1"},
			answer: "f2-1@x"},
		{name: "a v3 in reply to v2, every subject changed",
			passes: []pass{
				{mails: testenv.Sending{ID: "g2@x", Version: 2, Subject: "uprobes: faster", Patches: parts(2, 1)}.Mails()},
				{mails: testenv.Sending{ID: "g3@x", Version: 3, InReplyTo: "g2@x", Subject: "uprobes: much faster",
					Patches: [][2]string{{"uprobes: renamed one", patch(3)}, {"uprobes: renamed two", patch(4)}}}.Mails()}},
			jobs: []string{"patched=[PATCH v2 0/2] uprobes: faster", "v2=[PATCH v2 0/2] uprobes: faster, v3=[PATCH v3 0/2] uprobes: much faster"}, answer: "g3@x"},
		{name: "versions known by b4's change-id",
			passes: []pass{
				{mails: testenv.Sending{ID: "h1@x", Subject: "uprobes: a", CoverBody: "x\n\n---\nchange-id: 20261201-lazy-abc\n", Patches: parts(1, 1)}.Mails()},
				{mails: testenv.Sending{ID: "h2@x", Version: 2, Subject: "uprobes: b", CoverBody: "y\n\n---\nchange-id: 20261201-lazy-abc\n",
					Patches: [][2]string{{"uprobes: other", patch(2)}}}.Mails()}},
			jobs: []string{"patched=[PATCH 0/1] uprobes: a", "v1=[PATCH 0/1] uprobes: a, v2=[PATCH v2 0/1] uprobes: b"}, answer: "h2@x"},
		{name: "versions known by a link to the earlier cover letter",
			passes: []pass{
				{mails: testenv.Sending{ID: "n1@x", Subject: "uprobes: a", Patches: parts(1, 1)}.Mails()},
				{mails: testenv.Sending{ID: "n2@x", Version: 2, Subject: "uprobes: b", CoverBody: "y\n- Link to v1: https://lore.kernel.org/r/n1@x\n",
					Patches: [][2]string{{"uprobes: other", patch(2)}}}.Mails()}},
			jobs: []string{"patched=[PATCH 0/1] uprobes: a", "v1=[PATCH 0/1] uprobes: a, v2=[PATCH v2 0/1] uprobes: b"}, answer: "n2@x"},
		{name: "a RESEND of the same patches, answered before",
			passes: []pass{
				{mails: testenv.Sending{ID: "i@x", Version: 2, Subject: "uprobes: again", Patches: parts(2, 1)}.Mails()},
				{mails: testenv.Sending{ID: "i-resend@x", Version: 2, Resend: true, Subject: "uprobes: again", Patches: parts(2, 1)}.Mails(),
					state: []string{"skipped: a resend of [PATCH v2 0/2] uprobes: again with the same patches, answered before"}}},
			jobs: []string{"patched=[PATCH v2 0/2] uprobes: again"}, answer: "i@x"},
		{name: "a RESEND that changed the code",
			passes: []pass{
				{mails: testenv.Sending{ID: "j@x", Version: 2, Subject: "uprobes: again", Patches: parts(2, 1)}.Mails()},
				{mails: testenv.Sending{ID: "j-resend@x", Version: 2, Resend: true, InReplyTo: "j@x", Subject: "uprobes: again", Patches: parts(2, 5)}.Mails()}},
			jobs:   []string{"patched=[PATCH v2 0/2] uprobes: again", "v2=[PATCH v2 0/2] uprobes: again, v2-resend=[RESEND PATCH v2 0/2] uprobes: again"},
			answer: "j-resend@x", says: []string{"compared: v2-resend against v2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			c, env, log := shapesWorld(t)
			for i, p := range tc.passes {
				for _, m := range p.mails {
					c.deliver(t, m)
				}
				if _, err := Once(ctx, c.Config); err != nil {
					t.Fatalf("pass %d: %v\n%s", i+1, err, log)
				}
				list, err := c.History.WatchSeriesList(ctx, "")
				if err != nil {
					t.Fatal(err)
				}
				var states []string
				for _, w := range list {
					states = append(states, w.State+": "+w.Why)
				}
				for _, w := range p.state {
					if !strings.Contains(strings.Join(states, "\n"), w) {
						t.Errorf("after pass %d the series are\n  %s\nwant one %q", i+1, strings.Join(states, "\n  "), w)
					}
				}
				if len(p.state) > 0 && len(states) != 1+strings.Count(strings.Join(states, "\n"), "\n") {
					t.Errorf("after pass %d: %d series, %q", i+1, len(states), states)
				}
			}
			var jobs []string
			for _, j := range env.jobs {
				jobs = append(jobs, strings.Join(j, ", "))
			}
			if fmt.Sprintf("%q", jobs) != fmt.Sprintf("%q", tc.jobs) {
				t.Errorf("jobs\n  %q\nwant\n  %q\n%s", jobs, tc.jobs, log)
			}
			out, err := c.History.Outbox(ctx)
			if err != nil || len(out) == 0 {
				t.Fatalf("no reply: %v\n%s", err, log)
			}
			newest := out[len(out)-1].Raw
			m, err := mail.ReadMessage(bytes.NewReader(newest))
			if err != nil {
				t.Fatal(err)
			}
			if got := m.Header.Get("In-Reply-To"); got != "<"+tc.answer+">" {
				t.Errorf("the newest reply answers %s, want <%s>", got, tc.answer)
			}
			for _, w := range tc.says {
				if !bytes.Contains(newest, []byte(w)) {
					t.Errorf("the newest reply lacks %q:\n%s", w, newest)
				}
			}
		})
	}
}

// A reply to a run that measured nothing says what failed and how to
// reproduce it, and claims no samples.
func TestReplyWithoutBoots(t *testing.T) {
	c, env, log := shapesWorld(t)
	env.kind = NotApplied
	for _, m := range (testenv.Sending{ID: "q@x", Subject: "uprobes: stale", Patches: parts(2, 1)}).Mails() {
		c.deliver(t, m)
	}
	if _, err := Once(context.Background(), c.Config); err != nil {
		t.Fatal(err)
	}
	out, err := c.History.Outbox(context.Background())
	if err != nil || len(out) != 1 {
		t.Fatalf("replies %d, %v\n%s", len(out), err, log)
	}
	body := string(out[0].Raw)
	for _, w := range []string{"X-Lab-Verdict: not-applied", "could not apply this series", `patch 2/2 "uprobes: x"`, "b4 am -o - 'q@x' > patched.mbx"} {
		if !strings.Contains(body, w) {
			t.Errorf("reply lacks %q:\n%s", w, body)
		}
	}
	if strings.Contains(body, "samples") || strings.Contains(body, "run:") {
		t.Errorf("a reply that measured nothing speaks of samples or a run:\n%s", body)
	}
}

// shapes is a watcher on a fresh list (a Maildir: how mails reach lab
// is the inbox tests' business, and a Maildir takes one in microseconds),
// with the lazy-buffer lab watching kernel/events/uprobes.c and a fake
// Env.
type shapes struct {
	Config
	dir string
	n   int
}

// deliver adds a mail to the Maildir, after every mail before it.
func (s *shapes) deliver(t *testing.T, raw []byte) {
	s.n++
	name := filepath.Join(s.dir, "new", fmt.Sprintf("%06d.lab-test", s.n))
	if err := os.WriteFile(name, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 3, 9, 0, s.n, 0, time.UTC)
	if err := os.Chtimes(name, at, at); err != nil {
		t.Fatal(err)
	}
}

func shapesWorld(t *testing.T) (*shapes, *fakeEnv, *bytes.Buffer) {
	t.Helper()
	dir := t.TempDir()
	for _, sub := range []string{"new", "cur", "tmp"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	store, err := history.Open(context.Background(), filepath.Join(t.TempDir(), "history.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	lab, err := spec.Load("../../labs/uprobe-lazy-buffer.yaml")
	if err != nil {
		t.Fatal(err)
	}
	archive, err := inbox.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	env := &fakeEnv{}
	var log bytes.Buffer
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	return &shapes{Config: Config{Inbox: archive, History: store, Env: env, Out: &log, Now: func() time.Time { return now },
		Labs: []Lab{{Spec: lab, Paths: []string{"kernel/events/uprobes.c"}}}}, dir: dir}, env, &log
}
