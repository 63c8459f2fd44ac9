package series

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"mime/quotedprintable"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"lab/internal/gitcmd"
)

// listRepo is a tiny tree with a three-patch series on top of base, as a
// list would carry it: trailers, a non-ASCII author, a second patch that
// needs the first, a new file, and ">From"/"From" lines in a message.
type listRepo struct {
	g    *gitcmd.Git
	base string // the commit the series applies to
	tip  string // the series applied
	dir  string // a scratch folder for inputs
}

const author = "Jörg Müller <joerg@example.org>"

var commits = []struct {
	msg   string
	files map[string]string
}{
	{"lookup: go lockless\n\nThe read lock costs more than the lookup.\n\nReported-by: Rae Porter <rae@example.org>\nFixes: 0123456789ab (\"lookup: add a lock\")\nAcked-by: Ann Other <ann@example.org>\nReviewed-by: Rev Iewer <rev@example.org>\nTested-by: Tess Ter <tess@example.org>\nCc: stable@vger.kernel.org\nLink: https://lore.kernel.org/r/20261202-lockless-v2-1@example.org\nSigned-off-by: " + author,
		map[string]string{"lookup.c": "int lookup(void)\n{\n\treturn find_rcu();\n}\n"}},
	{"lookup: add a fast path\n\nFrom the look of it, most lookups hit.\n>From a quoted mail = still text.\n\nSigned-off-by: " + author,
		map[string]string{"lookup.c": "int lookup(void)\n{\n\tif (fast())\n\t\treturn 0;\n\n\treturn find_rcu();\n}\n", "fast.c": "int fast(void)\n{\n\treturn 1;\n}\n"}},
	{"lookup: document the lock\n\nSigned-off-by: " + author,
		map[string]string{"README": "lookup: lockless since v2\n"}},
}

func newListRepo(t *testing.T) *listRepo {
	t.Helper()
	r := &listRepo{g: &gitcmd.Git{Dir: t.TempDir()}, dir: t.TempDir()}
	write := func(files map[string]string) {
		for name, body := range files {
			if err := os.WriteFile(filepath.Join(r.g.Dir, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(map[string]string{"lookup.c": "int lookup(void)\n{\n\tread_lock(&l);\n\treturn find();\n}\n", "README": "lookup\n"})
	r.git(t, "init", "-q")
	r.git(t, "add", ".")
	r.git(t, "commit", "-qm", "base")
	r.base = r.git(t, "rev-parse", "HEAD")
	for _, c := range commits {
		write(c.files)
		r.git(t, "add", ".")
		r.git(t, "commit", "-q", "--author", author, "-m", c.msg)
	}
	r.tip = r.git(t, "rev-parse", "HEAD")
	return r
}

func (r *listRepo) git(t *testing.T, args ...string) string {
	t.Helper()
	out, err := r.g.Output(context.Background(), args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// series is git format-patch --stdout of the three patches, v2, with a
// cover letter and its base-commit: line.
func (r *listRepo) series(t *testing.T) string {
	out := r.git(t, "format-patch", "--cover-letter", "--stdout", "-v2", "--base="+r.base, r.base+".."+r.tip)
	out = strings.Replace(out, "*** SUBJECT HERE ***", "lookup: lockless", 1)
	return strings.Replace(out, "*** BLURB HERE ***", "Make lookup lockless.", 1) + "\n"
}

// file writes an input file and returns its path.
func (r *listRepo) file(t *testing.T, name, body string) string {
	p := filepath.Join(r.dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

var sepLine = regexp.MustCompile(`(?m)^From [0-9a-f]{40} Mon Sep 17 00:00:00 2001\n`)

// splitMails splits git format-patch --stdout output; each keeps its "From " line.
func splitMails(mbox string) []string {
	locs := sepLine.FindAllStringIndex(mbox, -1)
	var out []string
	for i, l := range locs {
		end := len(mbox)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		out = append(out, mbox[l[0]:end])
	}
	return out
}

// headers and body of one mail; the "From " line stays with the headers.
func cut(mail string) (string, string) {
	h, b, _ := strings.Cut(mail, "\n\n")
	return h, b
}

// withoutMIME drops a mail's MIME headers (git format-patch writes them
// for a non-ASCII mail), for a test to put its own.
func withoutMIME(h string) string {
	var keep []string
	for _, l := range strings.Split(h, "\n") {
		if !strings.HasPrefix(l, "MIME-Version:") && !strings.HasPrefix(l, "Content-Type:") && !strings.HasPrefix(l, "Content-Transfer-Encoding:") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

func qp(s string) string {
	var b bytes.Buffer
	w := quotedprintable.NewWriter(&b)
	w.Write([]byte(s))
	w.Close()
	return b.String()
}

func b64(s string) string {
	enc := base64.StdEncoding.EncodeToString([]byte(s))
	var b strings.Builder
	for len(enc) > 76 {
		b.WriteString(enc[:76] + "\n")
		enc = enc[76:]
	}
	return b.String() + enc + "\n"
}

// encoded re-sends a mail with its body in a transfer encoding.
func encoded(mail, cte string) string {
	h, body := cut(mail)
	if cte == "base64" {
		body = b64(body)
	} else {
		body = qp(body)
	}
	return withoutMIME(h) + "\nMIME-Version: 1.0\nContent-Type: text/plain; charset=UTF-8\nContent-Transfer-Encoding: " + cte + "\n\n" + body
}

// attached re-sends a patch mail as its message in a text/plain part and
// its diff as an attachment of type ctype in cte.
func attached(mail, ctype, name, cte string) string {
	h, body := cut(mail)
	msg, diff, _ := strings.Cut(body, "\n---\n")
	if i := strings.Index(diff, "diff --git"); i >= 0 {
		diff = diff[i:]
	}
	if cte == "base64" {
		diff = b64(diff)
	}
	return withoutMIME(h) + "\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"b0undary\"\n\n" +
		"This is a multi-part message in MIME format.\n" +
		"--b0undary\nContent-Type: text/plain; charset=UTF-8\nContent-Transfer-Encoding: quoted-printable\n\n" + qp(msg+"\n") + "\n" +
		"--b0undary\nContent-Type: " + ctype + "; name=\"" + name + "\"\nContent-Disposition: attachment; filename=\"" + name + "\"\nContent-Transfer-Encoding: " + cte + "\n\n" + diff + "\n" +
		"--b0undary--\n"
}

// b4 is a mail as b4 am's .mbx holds it: "From git@z" line, decoded
// headers, a Message-Id, no escaping.
func b4(mail string, n int) string {
	h, body := cut(mail)
	var subject, date string
	lines := strings.Split(h, "\n")
	for i, l := range lines {
		if s, ok := strings.CutPrefix(l, "Subject: "); ok {
			subject = s
			for _, c := range lines[i+1:] {
				if !strings.HasPrefix(c, " ") {
					break
				}
				subject += c
			}
		}
		if d, ok := strings.CutPrefix(l, "Date: "); ok {
			date = d
		}
	}
	return "Subject: " + subject + "\nFrom: " + author + "\nDate: " + date +
		"\nMessage-Id: <20261202-lockless-v2-" + string(rune('0'+n)) + "@example.org>\nMIME-Version: 1.0\nContent-Type: text/plain; charset=\"utf-8\"\nContent-Transfer-Encoding: 8bit\n\n" + body
}

// plain is a mail without a diff.
func plain(subject, body string) string {
	return "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\nFrom: A <a@example.org>\nDate: Thu, 1 Jan 1970 00:00:00 +0000\nSubject: " + subject + "\n\n" + body + "\n"
}

func resubject(mail, from, to string) string { return strings.Replace(mail, from, to, 1) }

// TestOpenCorpus: every form a series arrives in, and every bad one, each
// built at test time. What was recognised is checked; what was written
// must read back with Load as the same series and apply and revert on the
// tree it came from. A bad input must leave no folder behind.
func TestOpenCorpus(t *testing.T) {
	r := newListRepo(t)
	full := r.series(t)
	ms := splitMails(full) // cover, 1/3, 2/3, 3/3
	if len(ms) != 4 {
		t.Fatalf("format-patch gave %d mails", len(ms))
	}
	cover, p1, p2, p3 := ms[0], ms[1], ms[2], ms[3]
	allSubjects := []string{"lookup: go lockless", "lookup: add a fast path", "lookup: document the lock"}
	trailers1 := "Reported-by: Rae Porter <rae@example.org>|Fixes: 0123456789ab (\"lookup: add a lock\")|Acked-by: Ann Other <ann@example.org>|Reviewed-by: Rev Iewer <rev@example.org>|Tested-by: Tess Ter <tess@example.org>|Cc: stable@vger.kernel.org|Link: https://lore.kernel.org/r/20261202-lockless-v2-1@example.org|Signed-off-by: " + author

	type want struct {
		kind     string
		subjects []string // the patches', in order
		version  int
		rfc      bool
		cover    string // the cover letter's subject; "" for none
		base     bool   // base-commit is r.base
		trailers string // the first patch's, joined by |
		note     string // a note that must be there
		contains string // text the first written patch must hold
		hash     string // cases with the same label must hash the same
	}
	hashes := map[string]string{} // label -> the first such case's hash
	for _, tc := range []struct {
		name  string
		input func(t *testing.T) (path string, stdin io.Reader)
		want  want
		err   string // the error must hold this (and the input's name)
	}{
		// What a developer has at hand.
		{name: "format-patch folder with a cover letter", input: func(t *testing.T) (string, io.Reader) {
			d := filepath.Join(r.dir, "lockless")
			r.git(t, "format-patch", "-q", "--cover-letter", "-v2", "--base="+r.base, "-o", d, r.base+".."+r.tip)
			return d, nil
		}, want: want{kind: KindFolder, subjects: allSubjects, version: 2, cover: "*** SUBJECT HERE ***", base: true, trailers: trailers1}},
		{name: "format-patch --stdout mbox with a cover letter", input: func(t *testing.T) (string, io.Reader) {
			return r.file(t, "lockless.mbox", full), nil
		}, want: want{kind: KindMbox, subjects: allSubjects, version: 2, cover: "lookup: lockless", base: true, trailers: trailers1, hash: "series"}},
		{name: "one format-patch file", input: func(t *testing.T) (string, io.Reader) {
			return r.file(t, "0001-lookup-go-lockless.patch", r.git(t, "format-patch", "--stdout", "-1", r.tip+"~2")+"\n"), nil
		}, want: want{kind: KindMbox, subjects: allSubjects[:1], version: 1, trailers: trailers1}},
		{name: "one format-patch file with its base-commit", input: func(t *testing.T) (string, io.Reader) {
			return r.file(t, "based.patch", r.git(t, "format-patch", "--stdout", "--base="+r.base, "-1", r.tip+"~2")+"\n"), nil
		}, want: want{kind: KindMbox, subjects: allSubjects[:1], version: 1, base: true}},
		{name: "b4 am .mbx with its .cover beside", input: func(t *testing.T) (string, io.Reader) {
			r.file(t, "v2_20261202_joerg_lookup_lockless.cover", b4(cover, 0))
			return r.file(t, "v2_20261202_joerg_lookup_lockless.mbx", "From git@z Thu Jan  1 00:00:00 1970\n"+b4(p1, 1)+"From git@z Thu Jan  1 00:00:00 1970\n"+b4(p2, 2)+"From git@z Thu Jan  1 00:00:00 1970\n"+b4(p3, 3)), nil
		}, want: want{kind: KindMbox, subjects: allSubjects, version: 2, cover: "lookup: lockless", base: true, trailers: trailers1, note: "read from", contains: ">From a quoted", hash: "series"}},
		{name: "b4 am .mbx alone", input: func(t *testing.T) (string, io.Reader) {
			return r.file(t, "v2_20261203_joerg_lookup_lockless.mbx", "From git@z Thu Jan  1 00:00:00 1970\n"+b4(p1, 1)+"From git@z Thu Jan  1 00:00:00 1970\n"+b4(p2, 2)+"From git@z Thu Jan  1 00:00:00 1970\n"+b4(p3, 3)), nil
		}, want: want{kind: KindMbox, subjects: allSubjects, version: 2, trailers: trailers1, hash: "series"}},
		{name: "CRLF line ends", input: func(t *testing.T) (string, io.Reader) {
			return r.file(t, "crlf.mbx", strings.ReplaceAll(full, "\n", "\r\n")), nil
		}, want: want{kind: KindMbox, subjects: allSubjects, version: 2, cover: "lookup: lockless", base: true, trailers: trailers1, hash: "series"}},
		{name: "mboxrd >From escaping", input: func(t *testing.T) (string, io.Reader) {
			rd := regexp.MustCompile(`(?m)^(>*From )`).ReplaceAllString(full, ">$1")
			rd = regexp.MustCompile(`(?m)^>From [0-9a-f]{40} Mon Sep 17 00:00:00 2001$`).ReplaceAllString(rd, "From mboxrd@z Thu Jan  1 00:00:00 1970")
			if !strings.Contains(rd, "\n>>From a quoted") || !strings.Contains(rd, "\n>From the look") {
				t.Fatal("the test did not escape the mbox")
			}
			return r.file(t, "lore.mbox", rd), nil
		}, want: want{kind: KindMbox, subjects: allSubjects, version: 2, cover: "lookup: lockless", base: true, contains: "\nFrom the look", hash: "series"}},
		{name: "quoted-printable bodies", input: func(t *testing.T) (string, io.Reader) {
			return r.file(t, "qp.mbox", cover+encoded(p1, "quoted-printable")+encoded(p2, "quoted-printable")+encoded(p3, "quoted-printable")), nil
		}, want: want{kind: KindMbox, subjects: allSubjects, version: 2, cover: "lookup: lockless", base: true, trailers: trailers1, hash: "series"}},
		{name: "base64 bodies", input: func(t *testing.T) (string, io.Reader) {
			return r.file(t, "b64.mbox", encoded(cover, "base64")+encoded(p1, "base64")+encoded(p2, "base64")+encoded(p3, "base64")), nil
		}, want: want{kind: KindMbox, subjects: allSubjects, version: 2, cover: "lookup: lockless", base: true, trailers: trailers1, hash: "series"}},
		{name: "Latin-1 mail", input: func(t *testing.T) (string, io.Reader) {
			h, body := cut(p3)
			var latin1 []byte
			for _, c := range body {
				latin1 = append(latin1, byte(c))
			}
			return r.file(t, "latin1.mbox", cover+p1+p2+withoutMIME(h)+"\nMIME-Version: 1.0\nContent-Type: text/plain; charset=ISO-8859-1\nContent-Transfer-Encoding: 8bit\n\n"+string(latin1)), nil
		}, want: want{kind: KindMbox, subjects: allSubjects, version: 2, cover: "lookup: lockless", base: true, trailers: trailers1, hash: "series"}},
		{name: "a .cover beside an mbox with its own cover letter", input: func(t *testing.T) (string, io.Reader) {
			r.file(t, "v2_both.cover", b4(resubject(cover, "lookup: lockless", "stale"), 0))
			return r.file(t, "v2_both.mbx", full), nil
		}, want: want{kind: KindMbox, subjects: allSubjects, version: 2, cover: "lookup: lockless", base: true, note: "v2_both.cover: ignored", hash: "series"}},
		{name: "patch as a base64 text/x-patch attachment", input: func(t *testing.T) (string, io.Reader) {
			return r.file(t, "attached.eml", strings.TrimPrefix(attached(resubject(p1, "[PATCH v2 1/3]", "[PATCH v2 1/1]"), "text/x-patch", "0001-lookup.patch", "base64"), sepLine.FindString(p1))), nil
		}, want: want{kind: KindMail, subjects: allSubjects[:1], version: 2, trailers: trailers1}},
		{name: "patches as text/x-diff and application/octet-stream attachments", input: func(t *testing.T) (string, io.Reader) {
			return r.file(t, "attached.mbox", cover+attached(p1, "text/x-diff", "1.diff", "7bit")+attached(p2, "application/octet-stream", "2.patch", "base64")+attached(p3, "text/x-patch", "3.patch", "8bit")), nil
		}, want: want{kind: KindMbox, subjects: allSubjects, version: 2, cover: "lookup: lockless", base: true, trailers: trailers1}},
		{name: "patches out of order", input: func(t *testing.T) (string, io.Reader) {
			return r.file(t, "shuffled.mbox", p3+p1+cover+p2), nil
		}, want: want{kind: KindMbox, subjects: allSubjects, version: 2, cover: "lookup: lockless", base: true, hash: "series"}},
		{name: "RFC PATCH v3 and leading zeros", input: func(t *testing.T) (string, io.Reader) {
			return r.file(t, "rfc.mbox", resubject(p1, "[PATCH v2 1/3]", "[RFC PATCH v3 01/02]")+resubject(p2, "[PATCH v2 2/3]", "[RFC PATCHv3 02/02]")), nil
		}, want: want{kind: KindMbox, subjects: allSubjects[:2], version: 3, rfc: true}},
		{name: "standard input", input: func(t *testing.T) (string, io.Reader) {
			return "-", strings.NewReader(full)
		}, want: want{kind: KindMbox, subjects: allSubjects, version: 2, cover: "lookup: lockless", base: true, hash: "series"}},
		{name: "one saved mail", input: func(t *testing.T) (string, io.Reader) {
			return r.file(t, "saved.eml", strings.TrimPrefix(resubject(p1, "[PATCH v2 1/3]", "[PATCH v2]"), sepLine.FindString(p1))), nil
		}, want: want{kind: KindMail, subjects: allSubjects[:1], version: 2, trailers: trailers1}},
		{name: "bare diff", input: func(t *testing.T) (string, io.Reader) {
			return r.file(t, "fix-lookup.diff", r.git(t, "diff", r.base, r.tip+"~2")+"\n"), nil
		}, want: want{kind: KindDiff, subjects: []string{"fix-lookup"}, version: 1, note: "bare diff"}},
		{name: "a reply in the thread is skipped", input: func(t *testing.T) (string, io.Reader) {
			return r.file(t, "thread.mbox", full+plain("Re: [PATCH v2 1/3] lookup: go lockless", "> +\treturn find_rcu();\n\nLooks good.")), nil
		}, want: want{kind: KindMbox, subjects: allSubjects, version: 2, cover: "lookup: lockless", base: true, note: "a reply, skipped", hash: "series"}},
		{name: "RFC 2047 encoded subject", input: func(t *testing.T) (string, io.Reader) {
			return r.file(t, "encoded.mbox", regexp.MustCompile(`Subject: \[PATCH v2 1/3\] lookup: go lockless`).ReplaceAllString(p1, "Subject: =?UTF-8?q?[PATCH=201/1]=20lookup:=20g=C3=B6=20lockless?=")), nil
		}, want: want{kind: KindMbox, subjects: []string{"lookup: gö lockless"}, version: 1, trailers: trailers1}},

		// Bad input: an error naming the file (and the mail), nothing left.
		{name: "empty file", input: func(t *testing.T) (string, io.Reader) { return r.file(t, "empty.mbx", ""), nil }, err: "empty.mbx is empty"},
		{name: "empty standard input", input: func(t *testing.T) (string, io.Reader) { return "-", strings.NewReader("\n") }, err: "standard input is empty"},
		{name: "binary file", input: func(t *testing.T) (string, io.Reader) {
			return r.file(t, "shot.png", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), nil
		}, err: "shot.png: not a text file"},
		{name: "neither mbox, mail nor diff", input: func(t *testing.T) (string, io.Reader) {
			return r.file(t, "notes.txt", "Remember to rebase.\n"), nil
		}, err: "notes.txt: not a patch"},
		{name: "missing file", input: func(t *testing.T) (string, io.Reader) { return filepath.Join(r.dir, "nope.mbx"), nil }, err: "nope.mbx does not exist"},
		{name: "missing relative file", input: func(t *testing.T) (string, io.Reader) { return "nope.mbx", nil }, err: "series nope.mbx does not exist (looked for "},
		{name: "mbox with no patches", input: func(t *testing.T) (string, io.Reader) {
			return r.file(t, "chat.mbox", plain("lookup is slow", "Why?")+plain("lookup is still slow", "Really.")), nil
		}, err: `chat.mbox: no patches: none of its 2 mails carries a diff (the first: mail 1 "lookup is slow")`},
		{name: "cover letter only", input: func(t *testing.T) (string, io.Reader) {
			return r.file(t, "cover-only.mbox", cover), nil
		}, err: `cover-only.mbox: only a cover letter (mail 1 "[PATCH v2 0/3] lookup: lockless"), no patch: the 3 patches it announces are missing`},
		{name: "b4 .cover given alone", input: func(t *testing.T) (string, io.Reader) {
			return r.file(t, "v2_x.cover", b4(cover, 0)), nil
		}, err: "v2_x.cover: only a cover letter"},
		{name: "two versions mixed", input: func(t *testing.T) (string, io.Reader) {
			return r.file(t, "mixed.mbox", p1+resubject(p2, "[PATCH v2 2/3]", "[PATCH v3 2/3]")+p3), nil
		}, err: `mixed.mbox: patches of two series mixed: mail 1 "[PATCH v2 1/3] lookup: go lockless" is v2, mail 2 "[PATCH v3 2/3] lookup: add a fast path" is v3`},
		{name: "two lengths of series mixed", input: func(t *testing.T) (string, io.Reader) {
			return r.file(t, "mixed-m.mbox", cover+p1+resubject(p2, "[PATCH v2 2/3]", "[PATCH v2 2/2]")+p3), nil
		}, err: `mixed-m.mbox: patches of two series mixed: mail 1 "[PATCH v2 0/3] lookup: lockless" is 0/3, mail 3 "[PATCH v2 2/2] lookup: add a fast path" is 2/2`},
		{name: "two patches 1/M", input: func(t *testing.T) (string, io.Reader) {
			return r.file(t, "twice.mbox", p1+p2+p3+resubject(p2, "[PATCH v2 2/3]", "[PATCH v2 1/3]")), nil
		}, err: `twice.mbox: two patches numbered 1/3: mail 1 "[PATCH v2 1/3] lookup: go lockless" and mail 4 "[PATCH v2 1/3] lookup: add a fast path"`},
		{name: "patch 2/3 missing", input: func(t *testing.T) (string, io.Reader) {
			return r.file(t, "gap.mbox", cover+p1+p3), nil
		}, err: "gap.mbox: patch 2/3 missing (it holds 1/3, 3/3)"},
		{name: "truncated mid-hunk", input: func(t *testing.T) (string, io.Reader) {
			i := strings.Index(full, "+\tif (fast())")
			return r.file(t, "cut.mbox", full[:i+len("+\tif (fast())\n")]), nil
		}, err: `cut.mbox: mail 3 "[PATCH v2 2/3] lookup: add a fast path": diff of lookup.c ends inside hunk "@@ -1,4 +1,7 @@" (2 old and 4 new lines missing): the mail is cut short`},
		{name: "truncated between files", input: func(t *testing.T) (string, io.Reader) {
			i := strings.Index(p2, "diff --git a/lookup.c")
			return r.file(t, "cut2.mbox", p1+p2[:i]), nil
		}, err: `cut2.mbox: mail 2 "[PATCH v2 2/3] lookup: add a fast path": the diffstat says 2 files changed but the diff has 1`},
		{name: "image attachment", input: func(t *testing.T) (string, io.Reader) {
			m := attached(p1, "image/png", "shot.png", "base64")
			return r.file(t, "shot.mbox", m), nil
		}, err: `shot.mbox: mail 1 "[PATCH v2 1/3] lookup: go lockless": attachment shot.png is image/png, not text`},
		{name: "octet-stream attachment that is no diff", input: func(t *testing.T) (string, io.Reader) {
			h, _ := cut(p1)
			m := withoutMIME(h) + "\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: text/plain\n\nSee attached.\n--b\nContent-Type: application/octet-stream; name=blob.bin\nContent-Transfer-Encoding: base64\n\n" + b64("\x7fELF\x02\x01\x01\x00") + "--b--\n"
			return r.file(t, "blob.mbox", m), nil
		}, err: `blob.mbox: mail 1 "[PATCH v2 1/3] lookup: go lockless": attachment blob.bin (application/octet-stream) is not a diff in text`},
		{name: "unknown transfer encoding", input: func(t *testing.T) (string, io.Reader) {
			h, b := cut(p1)
			return r.file(t, "uu.mbox", withoutMIME(h)+"\nContent-Transfer-Encoding: x-uuencode\n\n"+b), nil
		}, err: `uu.mbox: mail 1 "[PATCH v2 1/3] lookup: go lockless": Content-Transfer-Encoding "x-uuencode"`},
		{name: "two cover letters", input: func(t *testing.T) (string, io.Reader) {
			return r.file(t, "covers.mbox", cover+p1+p2+p3+resubject(cover, "lookup: lockless", "lookup: other")), nil
		}, err: `covers.mbox: mail 5 "[PATCH v2 0/3] lookup: other": a second cover letter (the first is mail 1 "[PATCH v2 0/3] lookup: lockless"): two series mixed`},
		{name: "a mail with no diff amid the patches", input: func(t *testing.T) (string, io.Reader) {
			return r.file(t, "nodiff.mbox", p1+plain("[PATCH v2 2/3] lookup: add a fast path", "The diff got lost.")+p3), nil
		}, err: `nodiff.mbox: mail 2 "[PATCH v2 2/3] lookup: add a fast path": no diff in it and not a cover letter`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, stdin := tc.input(t)
			out := filepath.Join(t.TempDir(), "out", "series")
			s, err := Open(path, stdin, out)
			if tc.err != "" {
				t.Logf("%v", err)
				if err == nil {
					t.Fatalf("no error; want %q", tc.err)
				}
				if !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error:\n  %v\nwant it to hold:\n  %s", err, tc.err)
				}
				if path != "-" && !strings.Contains(err.Error(), filepath.Base(path)) {
					t.Errorf("error %q does not name the input", err)
				}
				if _, serr := os.Stat(filepath.Dir(out)); serr == nil {
					t.Errorf("a bad input left %s behind", filepath.Dir(out))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			t.Logf("%s %q v%d: %d patches; notes %q", s.Kind, s.Name, s.Version, len(s.Patches), s.Notes)
			w := tc.want
			var subjects []string
			for _, p := range s.Patches {
				subjects = append(subjects, p.Subject)
			}
			if s.Kind != w.kind || strings.Join(subjects, "|") != strings.Join(w.subjects, "|") || s.Version != w.version || s.RFC != w.rfc {
				t.Errorf("kind %s, subjects %q, v%d, rfc %v; want %s, %q, v%d, rfc %v", s.Kind, subjects, s.Version, s.RFC, w.kind, w.subjects, w.version, w.rfc)
			}
			switch {
			case w.cover == "" && s.Cover != nil:
				t.Errorf("cover letter %+v; want none", s.Cover)
			case w.cover != "" && (s.Cover == nil || s.Cover.Subject != w.cover || s.Cover.Version != w.version || s.Cover.Total != len(w.subjects)):
				t.Errorf("cover letter %+v; want %q, v%d, %d patches", s.Cover, w.cover, w.version, len(w.subjects))
			}
			if (s.BaseCommit == r.base) != w.base {
				t.Errorf("base-commit %q; want it to be %s: %v", s.BaseCommit, r.base, w.base)
			}
			if w.trailers != "" {
				var got []string
				for _, tr := range s.Patches[0].Trailers {
					got = append(got, tr.String())
				}
				if strings.Join(got, "|") != w.trailers {
					t.Errorf("trailers\n  %q\nwant\n  %q", strings.Join(got, "|"), w.trailers)
				}
			}
			if w.note != "" && !strings.Contains(strings.Join(s.Notes, "\n"), w.note) {
				t.Errorf("notes %q; want one with %q", s.Notes, w.note)
			}
			for i, p := range s.Patches {
				if len(p.SHA256) != 64 || len(p.MailSHA256) != 64 || p.Origin == "" {
					t.Errorf("patch %d provenance: sha256 %q, mail sha256 %q, origin %q", i+1, p.SHA256, p.MailSHA256, p.Origin)
				}
				if s.Kind != KindDiff && p.Author != author {
					t.Errorf("patch %d author %q, want %q", i+1, p.Author, author)
				}
			}
			var written []byte
			for _, p := range s.Patches {
				data, err := os.ReadFile(p.Path)
				if err != nil {
					t.Fatal(err)
				}
				written = append(written, data...)
			}
			if w.contains != "" && !bytes.Contains(written, []byte(w.contains)) {
				t.Errorf("written patches do not hold %q", w.contains)
			}
			if s.Kind != KindFolder && bytes.Contains(written, []byte("\r")) {
				t.Error("a written patch holds a CR")
			}
			// Written into the caller's folder, and Load reads it back as
			// the same series (what `lab new` will keep).
			if s.Dir != out {
				t.Errorf("series folder %s, want %s", s.Dir, out)
			}
			back, err := Load(out)
			if err != nil {
				t.Fatalf("Load of the written folder: %v", err)
			}
			if back.Hash() != s.Hash() || len(back.Patches) != len(s.Patches) || back.Patches[0].Subject != s.Patches[0].Subject {
				t.Errorf("Load of the written folder: hash %s, %d patches, %q; Open: %s, %d, %q", back.Hash(), len(back.Patches), back.Patches[0].Subject, s.Hash(), len(s.Patches), s.Patches[0].Subject)
			}
			if w.cover != "" && s.Kind != KindFolder && len(back.Notes) != 1 {
				t.Errorf("the written cover letter: Load notes %q, want it skipped", back.Notes)
			}
			if w.hash != "" {
				if h, ok := hashes[w.hash]; !ok {
					hashes[w.hash] = s.Hash()
				} else if h != s.Hash() {
					t.Errorf("hash %s differs from the first %q input's %s: the wrapper changed it", s.Hash(), w.hash, h)
				}
			}
			// The written files apply, in order, where the series came from.
			applies(t, r, s)
		})
	}
	if len(hashes) == 0 {
		t.Error("no hash compared")
	}
}

// applies runs Apply and Revert on the repo's base: every patch commits
// with its subject and author, and the revert gets the base back.
func applies(t *testing.T, r *listRepo, s *Series) {
	t.Helper()
	ctx := context.Background()
	r.git(t, "checkout", "-q", "-f", "--detach", r.base)
	if err := s.Apply(ctx, r.g); err != nil {
		t.Fatalf("apply: %v", err)
	}
	log := strings.Split(r.git(t, "log", "--reverse", "--format=%s|%an <%ae>", r.base+"..HEAD"), "\n")
	if len(log) != len(s.Patches) {
		t.Fatalf("%d commits for %d patches", len(log), len(s.Patches))
	}
	for i, l := range log {
		subj, who, _ := strings.Cut(l, "|")
		if subj != s.Patches[i].Subject || (s.Kind != KindDiff && who != author) {
			t.Errorf("commit %d: %q by %q; want %q by %q", i+1, subj, who, s.Patches[i].Subject, author)
		}
	}
	if s.Kind != KindDiff && len(s.Patches) == 3 {
		if diff := r.git(t, "diff", "HEAD", r.tip); diff != "" {
			t.Errorf("applied series differs from the tree it came from:\n%s", diff)
		}
	}
	if err := s.Revert(ctx, r.g); err != nil {
		t.Fatalf("revert: %v", err)
	}
	if diff := r.git(t, "diff", r.base, "HEAD"); diff != "" {
		t.Errorf("reverted series left:\n%s", diff)
	}
}

// Open with no folder writes to a temporary one that Close removes, and
// the same series from a folder reads in place.
func TestOpenTemporary(t *testing.T) {
	r := newListRepo(t)
	s, err := Open(r.file(t, "s.mbox", r.series(t)), nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(s.Dir, "0001-lookup-go-lockless.patch")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.Dir); err == nil {
		t.Errorf("Close left %s", s.Dir)
	}
	d := filepath.Join(r.dir, "folder")
	r.git(t, "format-patch", "-q", "-o", d, r.base+".."+r.tip)
	f, err := Open(d, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	loaded, _ := Load(d)
	if f.Dir != loaded.Dir || f.Hash() != loaded.Hash() || f.Close() != nil {
		t.Errorf("Open of a folder: %s %s; Load: %s %s", f.Dir, f.Hash(), loaded.Dir, loaded.Hash())
	}
	if _, err := os.Stat(d); err != nil {
		t.Errorf("Close removed the user's folder: %v", err)
	}
	if _, err := Open(r.file(t, "t.mbox", r.series(t)), nil, r.dir); err == nil || !strings.Contains(err.Error(), "is not empty") {
		t.Errorf("Open into a folder with files: %v, want it refused", err)
	}
}

func TestParseTag(t *testing.T) {
	for subject, want := range map[string]Tag{
		"[PATCH] x":                          {Subject: "x"},
		"[PATCH 0/3] x":                      {M: 3, Subject: "x"},
		"[PATCH v2 0/5] mm: x":               {Version: 2, M: 5, Subject: "mm: x"},
		"[RFC PATCH v3 1/2] x":               {Version: 3, N: 1, M: 2, RFC: true, Subject: "x"},
		"[PATCH net-next v2 03/10] net: x":   {Version: 2, N: 3, M: 10, Subject: "net: x"},
		"[PATCHv4 2/2] x":                    {Version: 4, N: 2, M: 2, Subject: "x"},
		"[PATCH-v4 2/2] x":                   {Version: 4, N: 2, M: 2, Subject: "x"},
		"[RFC][PATCH 0/3] x":                 {M: 3, RFC: true, Subject: "x"},
		"[PATCH RESEND,v2 1/1] x":            {Version: 2, N: 1, M: 1, Resend: true, Subject: "x"},
		"Re: [PATCH 1/2] x":                  {N: 1, M: 2, Reply: true, Subject: "x"},
		"[PATCH 1/2] [RFC] x: y [not a tag]": {N: 1, M: 2, RFC: true, Subject: "x: y [not a tag]"},
		"x: no tag":                          {Subject: "x: no tag"},
	} {
		if got := ParseTag(subject); got != want {
			t.Errorf("ParseTag(%q) = %+v, want %+v", subject, got, want)
		}
	}
}

// checkDiff passes whole diffs of every shape and names what a cut one lacks.
func TestCheckDiff(t *testing.T) {
	for _, tc := range []struct{ diff, want string }{
		{"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n", ""},
		{"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n\\ No newline at end of file\n", ""},
		{"diff --git a/x b/x\nnew file mode 100644\nindex 0000000..e69de29\n", ""},
		{"diff --git a/x b/y\nsimilarity index 100%\nrename from x\nrename to y\n", ""},
		{"diff --git a/x b/x\nold mode 100644\nnew mode 100755\n", ""},
		{"diff --git a/x.png b/x.png\nindex 1..2 100644\nGIT binary patch\nliteral 3\nKcmZQz00961\n\nliteral 0\nHcmV?d00001\n", ""},
		{"--- a/x\n+++ b/x\n@@ -0,0 +1 @@\n+a\n-- \n2.39.5\n", ""},
		{"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n\n-b\n+c\n", ""}, // a mailer's stripped blank context line
		{"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n", `diff of x ends inside hunk "@@ -1,2 +1,2 @@" (1 old and 1 new lines missing)`},
		{"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n@@ -5 +5 @@\n", `diff of x ends inside hunk "@@ -1,2 +1,2 @@" (0 old and 1 new lines missing)`},
		{"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1,2 @@\n-a\n-b\n+c\n+d\n", `hunk "@@ -1 +1,2 @@" has more lines than its header counts`},
		{"diff --git a/x b/x\n--- a/x\n+++ b/x\n", "diff of x has no hunk after its header"},
		{" 2 files changed\n\ndiff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n", "the diffstat says 2 files changed but the diff has 1"},
	} {
		err := CheckDiff(tc.diff)
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("CheckDiff(%q) = %v, want %q", tc.diff, err, tc.want)
		}
	}
}
