package listseries

import (
	"bytes"
	"fmt"
	"net/mail"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Posting is one series as it was posted: a cover letter when it has one,
// and its patches by number.
type Posting struct {
	Key     string // the cover letter's Message-ID, the single patch's, or the thread root the parts name
	Subject string // without prefixes: the cover letter's, else the first patch's
	From    string
	Version int // 1 when the subject names none
	Total   int // the n of k/n; 1 for a single patch
	RFC     bool
	Resend  bool // [RESEND PATCH]: the same version sent again
	Cover   *Message
	Patches []*Message // Patches[k-1] is patch k; nil until it comes
	First   time.Time  // when its first part arrived
	// Awaits is the mail the parts reply to that has not come, "" for
	// none: the cover letter of a posting whose patches came first.
	Awaits string
}

// SameCode reports whether p and q change the code alike: as many
// patches, each with the same diff (a resend, or a version that changed
// only its messages).
func (p *Posting) SameCode(q *Posting) bool {
	if len(p.Patches) != len(q.Patches) || !p.Complete() || !q.Complete() {
		return false
	}
	for i, m := range p.Patches {
		if m.Code == "" || m.Code != q.Patches[i].Code {
			return false
		}
	}
	return true
}

// Missing are the numbers of the patches not yet come.
func (p *Posting) Missing() []int {
	var out []int
	for i, m := range p.Patches {
		if m == nil {
			out = append(out, i+1)
		}
	}
	return out
}

// Complete reports whether every patch has come.
func (p *Posting) Complete() bool { return len(p.Patches) > 0 && len(p.Missing()) == 0 }

// Files are the files the patches touch, in patch order.
func (p *Posting) Files() []string {
	var out []string
	for _, m := range p.Patches {
		if m == nil {
			continue
		}
		for _, f := range m.Files {
			if !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
	}
	return out
}

// BaseCommit is the base-commit: the cover letter names, else a patch's.
func (p *Posting) BaseCommit() string {
	for _, m := range p.parts() {
		if m.BaseCommit != "" {
			return m.BaseCommit
		}
	}
	return ""
}

// ChangeID is b4's change-id: of the posting, the same in every version.
func (p *Posting) ChangeID() string {
	for _, m := range p.parts() {
		if m.ChangeID != "" {
			return m.ChangeID
		}
	}
	return ""
}

func (p *Posting) parts() []*Message {
	var out []*Message
	if p.Cover != nil {
		out = append(out, p.Cover)
	}
	for _, m := range p.Patches {
		if m != nil {
			out = append(out, m)
		}
	}
	return out
}

// Name is how a reply or a log line names the posting: "[PATCH v2 0/2]
// uprobes: lazy args buffer".
func (p *Posting) Name() string {
	tag := "PATCH"
	if p.RFC {
		tag = "RFC PATCH"
	}
	if p.Resend {
		tag = "RESEND " + tag
	}
	if p.Version > 1 {
		tag += fmt.Sprintf(" v%d", p.Version)
	}
	if p.Total > 1 || p.Cover != nil {
		tag += fmt.Sprintf(" 0/%d", p.Total)
	}
	return "[" + tag + "] " + p.Subject
}

// Touches are the posting's files that a watched path covers: a file
// ("kernel/events/uprobes.c"), a folder ("kernel/trace/") or a glob
// ("kernel/trace/*probe*.c").
func (p *Posting) Touches(watched []string) []string {
	var out []string
	for _, f := range p.Files() {
		for _, w := range watched {
			ok, _ := path.Match(w, f)
			if ok || f == w || strings.HasSuffix(w, "/") && strings.HasPrefix(f, w) {
				out = append(out, f)
				break
			}
		}
	}
	return out
}

// Mbox is the posting as an mbox in b4's form (the cover letter first,
// then the patches in order, "From git@z" separators and nothing escaped),
// which series.Open reads.
func (p *Posting) Mbox() []byte {
	var b bytes.Buffer
	for _, m := range p.parts() {
		raw := m.Raw
		if bytes.HasPrefix(raw, []byte("From ")) {
			if i := bytes.IndexByte(raw, '\n'); i >= 0 {
				raw = raw[i+1:]
			}
		}
		b.WriteString("From git@z Thu Jan  1 00:00:00 1970\n")
		b.Write(bytes.ReplaceAll(raw, []byte("\r\n"), []byte("\n")))
		if !bytes.HasSuffix(raw, []byte("\n")) {
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// Author is the mail address of the posting's sender, lower case: with
// the subject, what a later version is known by.
func (p *Posting) Author() string { return address(p.From) }

// Parts are the Message-IDs of the parts that have come, the cover letter
// first.
func (p *Posting) Parts() []string {
	var out []string
	for _, m := range p.parts() {
		out = append(out, m.ID)
	}
	return out
}

// Linked are the Message-IDs the cover letter links to (b4's "Link to v1:
// https://lore.kernel.org/r/<id>"): earlier versions.
func (p *Posting) Linked() []string {
	if p.Cover == nil {
		return nil
	}
	var out []string
	for _, g := range loreLink.FindAllStringSubmatch(string(p.Cover.Raw), -1) {
		if id, err := url.PathUnescape(g[1]); err == nil {
			out = append(out, id)
		}
	}
	return out
}

// address is the mail address of a From: header, lower case, for telling
// one author's postings.
func address(from string) string {
	if a, err := mail.ParseAddress(from); err == nil {
		return strings.ToLower(a.Address)
	}
	return strings.ToLower(strings.TrimSpace(from))
}

// loreLink is a link to a mail on lore or a public-inbox mirror, as b4
// writes "Link to v1: https://lore.kernel.org/r/<id>" in a cover letter.
var loreLink = regexp.MustCompile(`https?://[^\s/]+/(?:r|all|[A-Za-z0-9._-]+)/([^\s/<>]+@[^\s/<>]+)`)
