package listseries

import (
	"encoding/base64"
	"fmt"
	"mime/quotedprintable"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"lab/internal/series"
	"lab/internal/testenv"
)

func patchBody(t *testing.T, n int) string { return testenv.LazyPatch(t, "../..", n) }

var mailOf = testenv.Mail

// posting writes a posting of the lazy-buffer series as git send-email
// threads it: a cover letter, and each patch in reply to it.
func posting(t *testing.T, version int, coverID string, coverBody string, inReplyTo string) [][]byte {
	v := ""
	if version > 1 {
		v = fmt.Sprintf(" v%d", version)
	}
	from := [2]string{"From", "Andrii Nakryiko <andrii@kernel.org>"}
	date := [2]string{"Date", "Mon, 18 Mar 2024 11:17:27 -0700"}
	cover := [][2]string{from, date, {"Subject", fmt.Sprintf("[PATCH%s 0/2] uprobes: two common case speed ups", v)}, {"Message-ID", "<" + coverID + ">"}}
	if inReplyTo != "" {
		cover = append(cover, [2]string{"In-Reply-To", "<" + inReplyTo + ">"}, [2]string{"References", "<" + inReplyTo + ">"})
	}
	mails := [][]byte{mailOf(cover, coverBody)}
	for n, subject := range []string{"uprobes: prepare uprobe args buffer lazily", "uprobes: prevent mutex_lock() under rcu_read_lock()"} {
		refs := "<" + coverID + ">"
		if inReplyTo != "" {
			refs = "<" + inReplyTo + "> " + refs
		}
		mails = append(mails, mailOf([][2]string{from, date, {"Subject", fmt.Sprintf("[PATCH%s %d/2] %s", v, n+1, subject)},
			{"Message-ID", fmt.Sprintf("<%s-%d>", coverID, n+1)}, {"In-Reply-To", "<" + coverID + ">"}, {"References", refs}}, patchBody(t, n+1)))
	}
	return mails
}

// A v1 whose patches come before its cover letter, then a v2 sent in reply
// to v1 (git send-email --in-reply-to) whose cover letter links to v1 as
// b4 writes it: two complete postings, v2 following v1.
func TestAssemble(t *testing.T) {
	a := NewAssembler()
	at := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	add := func(raw []byte) *Posting {
		m := Classify(raw)
		if m.Kind != Patch && m.Kind != Cover {
			t.Fatalf("%s: %s (%s)", m.Subject, m.Kind, m.Reason)
		}
		p, err := a.Add(&m, at)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	v1 := posting(t, 1, "v1-cover@kernel.org", "Two speed ups.\n\nbase-commit: 0123456789abcdef\n", "")
	if p := add(v1[2]); p.Complete() || !slices.Equal(p.Missing(), []int{1}) {
		t.Errorf("after patch 2: missing %v", p.Missing())
	}
	add(v1[1])
	p1 := add(v1[0])
	if !p1.Complete() || p1.Cover == nil || p1.Version != 1 || p1.Key != "v1-cover@kernel.org" || p1.BaseCommit() != "0123456789abcdef" {
		t.Fatalf("v1: %+v", p1)
	}
	if got := p1.Touches([]string{"kernel/events/uprobes.c", "kernel/trace/"}); !slices.Equal(got, []string{"kernel/trace/trace_uprobe.c"}) {
		t.Errorf("touches %v", got)
	}
	if got := p1.Touches([]string{"mm/"}); got != nil {
		t.Errorf("mm/ touches %v", got)
	}
	v2 := posting(t, 2, "v2-cover@kernel.org", "Changes in v2:\n- nothing\n- Link to v1: https://lore.kernel.org/r/v1-cover@kernel.org\n", "v1-cover@kernel.org")
	var p2 *Posting
	for _, raw := range v2 {
		p2 = add(raw)
	}
	if len(a.Postings()) != 2 || !p2.Complete() || p2.Version != 2 || p2 == p1 {
		t.Fatalf("postings %d, v2 %+v", len(a.Postings()), p2)
	}
	if prev := a.Previous(p2); prev != p1 {
		t.Errorf("v2 follows %+v, want v1", prev)
	}
	if p2.Name() != "[PATCH v2 0/2] uprobes: two common case speed ups" {
		t.Errorf("name %q", p2.Name())
	}
	// The posting as an mbox is what lab run --series reads.
	mbx := filepath.Join(t.TempDir(), "v2.mbx")
	os.WriteFile(mbx, p2.Mbox(), 0o644)
	s, err := series.Open(mbx, nil, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if len(s.Patches) != 2 || s.Version != 2 || s.Cover == nil {
		t.Errorf("opened %d patches, version %d, cover %v", len(s.Patches), s.Version, s.Cover)
	}
	// The same mail again is not a part twice.
	m := Classify(v2[1])
	if _, err := a.Add(&m, at); err == nil || !strings.Contains(err.Error(), "delivered twice") {
		t.Errorf("a copy: %v", err)
	}
}

func qp(s string) string {
	var b strings.Builder
	w := quotedprintable.NewWriter(&b)
	w.Write([]byte(s))
	w.Close()
	return b.String()
}

// A list's bad mail is normal: each is told apart with its reason, never
// taken for a patch to build, and never stops the assembly.
func TestCorpus(t *testing.T) {
	good := patchBody(t, 2)
	diff := good[strings.Index(good, "diff --git"):]
	h := func(subject, id string, more ...[2]string) [][2]string {
		return append([][2]string{{"From", "Dev <dev@example.org>"}, {"Subject", subject}, {"Message-ID", id},
			{"Date", "Thu, 03 Dec 2026 10:00:00 +0000"}}, more...)
	}
	b64 := base64.StdEncoding.EncodeToString([]byte("x: y\n---\n" + diff))
	cut := diff[:strings.LastIndex(diff, "@@")+40]
	for _, tc := range []struct {
		name string
		raw  []byte
		kind Kind
		why  string
	}{
		{"a patch", mailOf(h("[PATCH] uprobes: x", "<a@x>"), "x\n---\n"+diff), Patch, ""},
		{"a cover letter", mailOf(h("[PATCH 0/2] uprobes: x", "<b@x>"), "two\n"), Cover, ""},
		{"a discussion", mailOf(h("uprobes are slow", "<c@x>"), "why?\n"), Other, "no [PATCH] tag"},
		{"an announcement", mailOf(h("[ANNOUNCE] v6.13-rc1", "<d@x>"), "tag\n"), Other, "no [PATCH] tag"},
		{"a review quoting the patch", mailOf(h("Re: [PATCH 1/2] uprobes: x", "<e@x>", [2]string{"In-Reply-To", "<a@x>"}), "> "+strings.ReplaceAll(diff, "\n", "\n> ")), Reply, ""},
		{"a reply without Re:", mailOf(h("uprobes: x", "<f@x>", [2]string{"In-Reply-To", "<a@x>"}), "Acked-by: A <a@b>\n"), Reply, ""},
		{"Aw: from a German client", mailOf(h("AW: [PATCH] uprobes: x", "<g@x>"), "ok\n"), Reply, ""},
		{"no Message-ID", mailOf(h("[PATCH] uprobes: x", ""), "x\n---\n"+diff), Broken, "no Message-ID"},
		{"[PATCH 3/2]", mailOf(h("[PATCH 3/2] uprobes: x", "<h@x>"), "x\n---\n"+diff), Broken, "numbered 3/2"},
		{"no diff", mailOf(h("[PATCH] uprobes: x", "<i@x>"), "I will send it later.\n"), Broken, "no diff"},
		{"a diff cut short", mailOf(h("[PATCH] uprobes: x", "<j@x>"), "x\n---\n"+cut), Broken, "cut short"},
		{"HTML only", mailOf(h("[PATCH] uprobes: x", "<k@x>", [2]string{"Content-Type", "text/html; charset=utf-8"}), "<html><body><pre>diff</pre></body></html>\n"), Broken, "HTML only"},
		{"the patch attached", mailOf(h("[PATCH] uprobes: x", "<l@x>", [2]string{"MIME-Version", "1.0"}, [2]string{"Content-Type", `multipart/mixed; boundary="b"`}),
			"--b\nContent-Type: text/plain\n\nsee attached\n--b\nContent-Type: application/octet-stream\nContent-Disposition: attachment; filename=\"fix.diff\"\n\n"+diff+"\n--b--\n"), Broken, "attachment (fix.diff)"},
		{"a binary patch only", mailOf(h("[PATCH] fw: blob", "<m@x>"), "x\n---\nGIT binary patch\nliteral 3\nKcmZQz00961\n"), Broken, "binary patch"},
		{"base64 body", mailOf(h("[PATCH] uprobes: x", "<n@x>", [2]string{"MIME-Version", "1.0"}, [2]string{"Content-Type", "text/plain; charset=utf-8"}, [2]string{"Content-Transfer-Encoding", "base64"}), b64+"\n"), Patch, ""},
		{"quoted-printable body", mailOf(h("[PATCH] uprobes: x", "<o@x>", [2]string{"MIME-Version", "1.0"}, [2]string{"Content-Type", "text/plain; charset=utf-8"}, [2]string{"Content-Transfer-Encoding", "quoted-printable"}),
			qp("x= y\n---\n"+diff)), Patch, ""},
		{"bad base64", mailOf(h("[PATCH] uprobes: x", "<p@x>", [2]string{"Content-Transfer-Encoding", "base64"}), "!!!not base64!!!\n"), Broken, "body unreadable"},
		{"a header line without a colon", []byte("From: a@b\nSubject: [PATCH] x\nthis is not a header\nMessage-ID: <q@x>\n\nbody\n"), Broken, "headers unreadable"},
		{"empty", []byte(""), Broken, "headers unreadable"},
		{"only headers", []byte("Subject: [PATCH] x\nMessage-ID: <r@x>\n"), Broken, ""},
		{"binary garbage", []byte("\x00\x01\x02\xff\xfe"), Broken, "headers unreadable"},
		{"huge", append(mailOf(h("[PATCH] big", "<s@x>"), ""), make([]byte, MaxMail)...), Broken, "over the 8 MB"},
		{"an encoded subject", mailOf(h("=?utf-8?q?=5BPATCH=5D_uprobes=3A_caf=C3=A9?=", "<t@x>"), "x\n---\n"+diff), Patch, ""},
		{"a Latin-1 body", mailOf(h("[PATCH] uprobes: x", "<u@x>", [2]string{"MIME-Version", "1.0"}, [2]string{"Content-Type", "text/plain; charset=iso-8859-1"}), "caf\xe9\n---\n"+diff), Patch, ""},
		{"an unknown charset, an ASCII diff", mailOf(h("[PATCH] uprobes: x", "<v@x>", [2]string{"MIME-Version", "1.0"}, [2]string{"Content-Type", "text/plain; charset=x-klingon"}), "x\n---\n"+diff), Patch, ""},
		{"CRLF line ends", []byte(strings.ReplaceAll(string(mailOf(h("[PATCH] uprobes: x", "<w@x>"), "x\n---\n"+diff)), "\n", "\r\n")), Patch, ""},
		{"an mbox separator first", append([]byte("From dev@example.org Thu Dec  3 10:00:00 2026\n"), mailOf(h("[PATCH] uprobes: x", "<x@x>"), "x\n---\n"+diff)...), Patch, ""},
		{"a malformed Date", mailOf([][2]string{{"From", "d@x"}, {"Subject", "[PATCH] x"}, {"Message-ID", "<y@x>"}, {"Date", "yesterday"}}, "x\n---\n"+diff), Patch, ""},
		{"a malformed From", mailOf([][2]string{{"From", "<<<>>>"}, {"Subject", "[PATCH] x"}, {"Message-ID", "<z@x>"}}, "x\n---\n"+diff), Patch, ""},
		{"a Message-ID without brackets", mailOf(h("[PATCH] uprobes: x", "aa@x"), "x\n---\n"+diff), Patch, ""},
		{"a bounce", mailOf(h("Undelivered Mail Returned to Sender", "<bb@x>", [2]string{"Content-Type", `multipart/report; report-type=delivery-status; boundary="r"`}), "--r\nContent-Type: text/plain\n\nfailed\n--r--\n"), Other, ""},
		{"[GIT PULL]", mailOf(h("[GIT PULL] probes for v6.13", "<cc@x>"), "please pull\n"), Other, ""},
		{"a multipart without its boundary", mailOf(h("[PATCH] uprobes: x", "<dd@x>", [2]string{"MIME-Version", "1.0"}, [2]string{"Content-Type", "multipart/mixed"}), "x\n"), Broken, "body unreadable"},
		{"RFC PATCH", mailOf(h("[RFC PATCH v3 1/1] uprobes: x", "<ee@x>"), "x\n---\n"+diff), Patch, ""},
		{"[RFC][PATCH]", mailOf(h("[RFC][PATCH 1/1] uprobes: x", "<ff@x>"), "x\n---\n"+diff), Patch, ""},
		{"[RFC][PATCH 0/n]", mailOf(h("[RFC][PATCH 0/3] uprobes: x", "<gg@x>"), "three\n"), Cover, ""},
		{"Re: [RFC][PATCH]", mailOf(h("Re: [RFC][PATCH 1/3] uprobes: x", "<hh@x>", [2]string{"In-Reply-To", "<ff@x>"}), "ok\n"), Reply, ""},
		{"[RFC] without PATCH", mailOf(h("[RFC] uprobes: should we?", "<ii@x>"), "thoughts\n"), Other, "no [PATCH] tag"},
		{"[for-next][PATCH]: applied", mailOf(h("[for-next][PATCH 01/11] tracing: x", "<jj@x>"), "x\n---\n"+diff), Other, "tagged [for-next]: a record"},
		{"[GIT PULL][PATCH]", mailOf(h("[GIT PULL][PATCH] probes: fixes", "<kk@x>"), "x\n---\n"+diff), Other, "already in a maintainer's tree"},
		{"[PATCH for-next]: for review", mailOf(h("[PATCH for-next 1/1] uprobes: x", "<ll@x>"), "x\n---\n"+diff), Patch, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := Classify(tc.raw)
			if m.Kind != tc.kind || !strings.Contains(m.Reason, tc.why) {
				t.Errorf("%s (%q), want %s (%q)", m.Kind, m.Reason, tc.kind, tc.why)
			}
			if m.Kind == Patch && len(m.Files) == 0 {
				t.Errorf("a patch touching no file")
			}
			a := NewAssembler()
			if _, err := a.Add(&m, time.Now()); err != nil {
				t.Errorf("assemble: %v", err)
			}
		})
	}
}
