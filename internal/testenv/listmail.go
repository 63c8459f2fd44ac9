package testenv

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"net/textproto"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Mail writes a mail of the given headers, in order, and body.
func Mail(headers [][2]string, body string) []byte {
	var b strings.Builder
	for _, h := range headers {
		fmt.Fprintf(&b, "%s: %s\n", h[0], h[1])
	}
	b.WriteString("\n" + body)
	return []byte(b.String())
}

// LazyPatch is patch n (1 or 2) of the lazy uprobe args buffer series as
// lab ships it (patches/uprobe-lazy-buffer), after git format-patch's
// headers: the commit message, the diffstat and the diff.
func LazyPatch(t testing.TB, root string, n int) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(root, "patches", "uprobe-lazy-buffer", "*.patch"))
	slices.Sort(files)
	if n < 1 || n > len(files) {
		t.Fatalf("no patch %d of uprobe-lazy-buffer in %s", n, root)
	}
	data, err := os.ReadFile(files[n-1])
	if err != nil {
		t.Fatal(err)
	}
	_, body, _ := strings.Cut(string(data), "\n\n")
	return body
}

// LazySeries is the lazy-buffer series as git send-email posts version v
// to a list: a cover letter (in reply to the previous version's, with b4's
// "Link to v1:", when prevCover is given; its Message-ID is
// lazy-vV@kernel.org) and each patch in reply to it.
func LazySeries(t testing.TB, root string, v int, prevCover string) [][]byte {
	s := Sending{ID: fmt.Sprintf("lazy-v%d@kernel.org", v), Version: v, Subject: "uprobes: two common case speed ups",
		From: "Andrii Nakryiko <andrii@kernel.org>", CoverBody: "Two speed ups of the uprobe hit path.\n", InReplyTo: prevCover,
		Date: fmt.Sprintf("Mon, 1%d Mar 2024 11:17:2%%d -0700", v)}
	if prevCover != "" {
		s.CoverBody += fmt.Sprintf("\nChanges in v%d:\n- commit messages\n- Link to v%d: https://lore.kernel.org/r/%s\n", v, v-1, prevCover)
	}
	for n, subject := range []string{"uprobes: prepare uprobe args buffer lazily", "uprobes: prevent mutex_lock() under rcu_read_lock()"} {
		s.Patches = append(s.Patches, [2]string{subject, LazyPatch(t, root, n+1)})
	}
	return s.Mails()
}

// Sending is one posting as a sender's tools put it on a list, in any of
// the shapes real senders use: with or without a cover letter, threaded
// shallow (git send-email's default), deep (--chain-reply-to) or not at
// all, sent into an earlier version's thread, as a RESEND.
type Sending struct {
	// ID is the cover letter's Message-ID; patch k's is ID with "-k"
	// before the "@" (lazy-v2-1@kernel.org).
	ID         string
	Version    int  // 0 or 1: none in the subject
	Resend     bool // [RESEND PATCH ...]
	Lone       bool // one patch without a number: [PATCH] (no cover letter)
	NoCover    bool
	Deep       bool // each patch in reply to the one before
	Unthreaded bool // no In-Reply-To or References at all
	InReplyTo  string
	Subject    string      // the cover letter's
	CoverBody  string      // "" for a line of its own
	Patches    [][2]string // each patch's subject and body (message, "---", diff)
	From       string      // "Dev <dev@example.org>" when empty
	Date       string      // a Date: header; a %d in it is the part's number
}

// PatchID is patch k's Message-ID.
func (s Sending) PatchID(k int) string {
	local, domain, _ := strings.Cut(s.ID, "@")
	return fmt.Sprintf("%s-%d@%s", local, k, domain)
}

// Mails are the posting's mails in the order they are sent: the cover
// letter, then the patches.
func (s Sending) Mails() [][]byte {
	tag := "PATCH"
	if s.Resend {
		tag = "RESEND PATCH"
	}
	if s.Version > 1 {
		tag += fmt.Sprintf(" v%d", s.Version)
	}
	from := s.From
	if from == "" {
		from = "Dev <dev@example.org>"
	}
	n := len(s.Patches)
	var mails [][]byte
	head := func(k int, subject, id string, parents []string) [][2]string {
		h := [][2]string{{"From", from}, {"To", "test-list@example.org"}, {"Subject", subject}, {"Message-ID", "<" + id + ">"}}
		if s.Date != "" {
			date := s.Date
			if strings.Contains(date, "%d") {
				date = fmt.Sprintf(date, k)
			}
			h = append(h, [2]string{"Date", date})
		}
		if len(parents) > 0 && !s.Unthreaded {
			h = append(h, [2]string{"In-Reply-To", "<" + parents[len(parents)-1] + ">"}, [2]string{"References", "<" + strings.Join(parents, "> <") + ">"})
		}
		return h
	}
	var parents []string
	if s.InReplyTo != "" {
		parents = append(parents, s.InReplyTo)
	}
	if !s.NoCover && !s.Lone {
		body := s.CoverBody
		if body == "" {
			body = s.Subject + "\n"
		}
		mails = append(mails, Mail(head(0, fmt.Sprintf("[%s 0/%d] %s", tag, n, s.Subject), s.ID, parents), body))
		parents = append(parents, s.ID)
	}
	for k, p := range s.Patches {
		subject := fmt.Sprintf("[%s %d/%d] %s", tag, k+1, n, p[0])
		if s.Lone {
			subject = fmt.Sprintf("[%s] %s", tag, p[0])
		}
		id := s.PatchID(k + 1)
		mails = append(mails, Mail(head(k+1, subject, id, parents), p[1]))
		// Shallow threading answers the first mail sent; deep, the last.
		if s.Deep || k == 0 && (s.NoCover || s.Lone) {
			parents = append(parents, id)
		}
	}
	return mails
}

// UnrelatedPatch is a patch to a file no lab of lab's measures.
func UnrelatedPatch() []byte {
	return Mail([][2]string{{"From", "Mm Dev <mm@example.org>"}, {"To", "test-list@example.org"}, {"Subject", "[PATCH] mm: fix a comment"}, {"Message-ID", "<mm-1@example.org>"}},
		"A comment.\n---\n mm/memory.c | 2 +-\n 1 file changed, 1 insertion(+), 1 deletion(-)\n\ndiff --git a/mm/memory.c b/mm/memory.c\n--- a/mm/memory.c\n+++ b/mm/memory.c\n@@ -1,3 +1,3 @@\n a\n-b\n+c\n d\n")
}

// BrokenPatch is a patch mail numbered beyond its series' end ([PATCH 3/2]).
func BrokenPatch(t testing.TB, root string) []byte {
	return Mail([][2]string{{"From", "x@example.org"}, {"To", "test-list@example.org"}, {"Subject", "[PATCH 3/2] uprobes: one more"}, {"Message-ID", "<broken@example.org>"}},
		"x\n---\n"+LazyPatch(t, root, 2))
}

// MachinePaths are those of paths (folders of the machine that ran a test:
// its temp folders, the cache, the checkout, the home folder) that a mail
// names, in any of its parts once decoded (a base64 attachment too).
func MachinePaths(raw []byte, paths ...string) []string {
	var texts []string
	var walk func(h textproto.MIMEHeader, body io.Reader)
	walk = func(h textproto.MIMEHeader, body io.Reader) {
		if strings.EqualFold(h.Get("Content-Transfer-Encoding"), "base64") {
			body = base64.NewDecoder(base64.StdEncoding, body)
		} else if strings.EqualFold(h.Get("Content-Transfer-Encoding"), "quoted-printable") {
			body = quotedprintable.NewReader(body)
		}
		mt, params, _ := mime.ParseMediaType(h.Get("Content-Type"))
		if strings.HasPrefix(mt, "multipart/") {
			r := multipart.NewReader(body, params["boundary"])
			for {
				p, err := r.NextRawPart()
				if err != nil {
					return
				}
				walk(p.Header, p)
			}
		}
		data, _ := io.ReadAll(body)
		texts = append(texts, string(data))
	}
	m, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		texts = append(texts, string(raw))
	} else {
		walk(textproto.MIMEHeader(m.Header), m.Body)
		texts = append(texts, fmt.Sprint(m.Header))
	}
	var found []string
	for _, p := range paths {
		for _, text := range texts {
			if p != "" && strings.Contains(text, p) {
				found = append(found, p)
				break
			}
		}
	}
	return found
}
