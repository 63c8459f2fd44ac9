// Package listseries tells what each mail of a list is (a patch, a cover
// letter, a reply, something else, or a mail that cannot be used, and
// why) and assembles the patches into series: the parts of one posting
// (a cover letter and its [PATCH vN k/n] replies, or a single patch),
// whether all have come, the files they touch, and which earlier posting
// a new version follows. It reads mail, not trees: applying a series is
// internal/source's business.
package listseries

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/mail"
	"regexp"
	"strings"
	"time"

	"lab/internal/series"
	"lab/internal/series/mbox"
)

// Kind is what a mail is to the watcher.
type Kind string

const (
	Patch  Kind = "patch"  // [PATCH] or [PATCH k/n] with a diff
	Cover  Kind = "cover"  // [PATCH 0/n]
	Reply  Kind = "reply"  // Re: ..., a review, quoting or not
	Other  Kind = "other"  // no [PATCH] tag: a discussion, an announcement
	Broken Kind = "broken" // a patch mail that cannot be used; Reason says why
)

// MaxMail is the largest mail read as a patch: a list's limit is far
// below it, and a bigger one is an attachment nobody can review.
const MaxMail = 8 << 20

// Message is one mail as the watcher needs it.
type Message struct {
	ID         string   // Message-ID without <>
	InReplyTo  string   // without <>
	References []string // oldest first, without <>
	From       string
	Subject    string
	Date       time.Time
	Tag        series.Tag
	Kind       Kind
	Reason     string   // why a mail is Broken or Other
	Files      []string // the files a patch touches
	BaseCommit string   // a base-commit: line (cover letter or patch)
	ChangeID   string   // b4's change-id: line, the same for every version
	// Code is a patch's diff as a digest, blind to what a rebase or a
	// resend changes (index lines, hunk line numbers): two patches of one
	// code change have the same Code.
	Code string
	Raw  []byte
}

// A subject's start: reply prefixes, then bracketed groups.
const (
	replies = `(?i)^\s*(?:(?:re|aw|fwd?):\s*)*`
	groups  = `(?:\[[^\]]*\]\s*)*`
	patchIn = `\[[^\]]*\bpatch` // a group holding the PATCH word
)

var (
	// The PATCH word may be in any of the leading groups: "[RFC][PATCH 1/3]"
	// and "[net-next][PATCH]" are how some senders tag a series.
	patchWord = regexp.MustCompile(replies + groups + patchIn)
	// "[for-next][PATCH 01/11]", "[GIT PULL][PATCH]": a maintainer's copy to
	// the list of what is already in a tree (a group of its own before the
	// PATCH one; "[PATCH for-next]" is a posting aimed at that branch).
	appliedTag   = regexp.MustCompile(replies + groups + `(\[(?:for-[^\]]*|git pull[^\]]*)\])\s*` + groups + patchIn)
	baseLine     = regexp.MustCompile(`(?m)^base-commit: *([0-9a-f]{7,64})\s*$`)
	changeIDLine = regexp.MustCompile(`(?m)^change-id: *(\S+)\s*$`)
	msgID        = regexp.MustCompile(`<([^<>\s]+)>`)
)

// Classify reads one mail. It looks at the headers first and decodes the
// body only of a mail whose subject is a patch's, so that a list's other
// traffic costs a header read. It never fails: a mail it cannot use is
// Broken, with the reason.
func Classify(raw []byte) Message {
	m := Message{Raw: raw, Kind: Broken}
	if len(raw) > MaxMail {
		m.Reason = fmt.Sprintf("%d bytes, over the %d MB a patch mail may have", len(raw), MaxMail>>20)
		m.ID, m.Subject = headerOnly(raw)
		return m
	}
	body := raw
	if bytes.HasPrefix(raw, []byte("From ")) { // an mbox's separator line
		if i := bytes.IndexByte(raw, '\n'); i >= 0 {
			body = raw[i+1:]
		}
	}
	h, err := mail.ReadMessage(bytes.NewReader(body))
	if err != nil {
		m.ID, m.Subject = headerOnly(raw)
		m.Reason = "headers unreadable: " + err.Error()
		return m
	}
	m.ID = firstID(h.Header.Get("Message-Id"))
	m.InReplyTo = firstID(h.Header.Get("In-Reply-To"))
	for _, r := range msgID.FindAllStringSubmatch(h.Header.Get("References"), -1) {
		m.References = append(m.References, r[1])
	}
	if d, err := h.Header.Date(); err == nil {
		m.Date = d
	}
	m.Subject = mbox.DecodeHeader(h.Header.Get("Subject"))
	m.From = mbox.DecodeHeader(h.Header.Get("From"))
	m.Tag = series.ParseTag(m.Subject)
	switch {
	case m.ID == "":
		m.Reason = "no Message-ID: it can be neither answered nor told from a copy"
		return m
	case m.Tag.Reply || m.InReplyTo != "" && !patchWord.MatchString(m.Subject):
		m.Kind = Reply
		return m
	case !patchWord.MatchString(m.Subject):
		m.Kind, m.Reason = Other, "no [PATCH] tag in the subject"
		return m
	}
	if g := appliedTag.FindStringSubmatch(m.Subject); g != nil {
		m.Kind, m.Reason = Other, "tagged "+g[1]+": a record of patches already in a maintainer's tree, not a posting for review"
		return m
	}
	dec, err := mbox.ReadMail(body)
	if err != nil {
		m.Reason = "body unreadable: " + err.Error()
		return m
	}
	return classifyPatch(m, dec)
}

// classifyPatch tells a cover letter from a patch and finds what makes a
// patch mail unusable.
func classifyPatch(m Message, dec mbox.Mail) Message {
	text := dec.Text
	m.BaseCommit = submatch(baseLine, text)
	m.ChangeID = submatch(changeIDLine, text)
	t := m.Tag
	switch {
	case t.N > t.M:
		m.Reason = fmt.Sprintf("numbered %d/%d: beyond the series' end", t.N, t.M)
	case t.N == 0 && t.M > 0:
		m.Kind = Cover
	case strings.TrimSpace(text) == "" && hasHTML(dec):
		m.Reason = "HTML only: no text/plain part to apply"
	case strings.Contains(text, "GIT binary patch") && !series.HasDiff(text):
		m.Reason = "a binary patch only"
	case !series.HasDiff(text):
		if a := patchAttachment(dec); a != "" {
			m.Reason = "the patch is an attachment (" + a + "), not inline: send it with git send-email"
		} else {
			m.Reason = "no diff in the mail"
		}
	default:
		if err := series.CheckDiff(text); err != nil {
			m.Reason = err.Error()
			return m
		}
		m.Kind, m.Files, m.Code = Patch, series.Touched(text), codeOf(text)
	}
	return m
}

var hunkHeader = regexp.MustCompile(`^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@`)

// codeOf is the digest of a patch's diff: from its first "diff --git" line
// to the signature, without index lines and hunks' line numbers.
func codeOf(text string) string {
	h := sha256.New()
	in := false
	for _, l := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		switch {
		case strings.HasPrefix(l, "diff --git "):
			in = true
		case !in:
			continue
		case l == "-- ":
			in = false
			continue
		case strings.HasPrefix(l, "index "):
			continue
		}
		h.Write([]byte(hunkHeader.ReplaceAllString(l, "@@") + "\n"))
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

func hasHTML(dec mbox.Mail) bool {
	for _, a := range dec.Attachments {
		if a.Type == "text/html" {
			return true
		}
	}
	return false
}

func patchAttachment(dec mbox.Mail) string {
	for _, a := range dec.Attachments {
		if series.HasDiff(string(a.Data)) {
			if a.Name != "" {
				return a.Name
			}
			return a.Type
		}
	}
	return ""
}

func submatch(re *regexp.Regexp, text string) string {
	if g := re.FindStringSubmatch(text); g != nil {
		return g[1]
	}
	return ""
}

func firstID(v string) string {
	if g := msgID.FindStringSubmatch(v); g != nil {
		return g[1]
	}
	return strings.Trim(strings.TrimSpace(v), "<>")
}

// headerOnly finds the Message-ID and Subject lines of a mail whose
// headers do not parse, for the record of why it was dropped.
func headerOnly(raw []byte) (id, subject string) {
	head, _, _ := bytes.Cut(raw[:min(len(raw), 64<<10)], []byte("\n\n"))
	for _, l := range strings.Split(string(head), "\n") {
		k, v, ok := strings.Cut(l, ":")
		switch {
		case !ok:
		case strings.EqualFold(k, "Message-Id"):
			id = firstID(v)
		case strings.EqualFold(k, "Subject"):
			subject = strings.TrimSpace(v)
		}
	}
	return id, subject
}
