package watch

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"mime"
	"net/mail"
	"path/filepath"
	"strings"

	"lab/internal/history"
	"lab/internal/listseries"
)

// Recipients is who a reply goes to. The default, none, writes it to the
// Maildir only: a watcher never mails a list unless told to, as the CI
// systems that did learned (list-loop-anchors.md).
type Recipients struct {
	Mode    string // none, author, address, list
	Address string // address: the one address; list: the list's, in Cc
}

// Recipients modes.
const (
	ToNone    = "none"
	ToAuthor  = "author"
	ToAddress = "address"
	ToList    = "list"
)

// ParseRecipients reads --to: none, author, list:ADDRESS or an address.
func ParseRecipients(s string) (Recipients, error) {
	switch {
	case s == "" || s == ToNone:
		return Recipients{Mode: ToNone}, nil
	case s == ToAuthor:
		return Recipients{Mode: ToAuthor}, nil
	case strings.HasPrefix(s, "list:"):
		a, err := mail.ParseAddress(strings.TrimPrefix(s, "list:"))
		if err != nil {
			return Recipients{}, fmt.Errorf("--to %s: the list's address: %w", s, err)
		}
		return Recipients{Mode: ToList, Address: a.Address}, nil
	}
	a, err := mail.ParseAddress(s)
	if err != nil {
		return Recipients{}, fmt.Errorf("--to %s: want none, author, list:ADDRESS or an address: %w", s, err)
	}
	return Recipients{Mode: ToAddress, Address: a.Address}, nil
}

// to and cc of a reply to a posting by author.
func (r Recipients) addressees(author string) (to, cc []string) {
	switch r.Mode {
	case ToAuthor:
		return []string{author}, nil
	case ToAddress:
		return []string{r.Address}, nil
	case ToList:
		return []string{author}, []string{r.Address}
	}
	return nil, nil
}

// compose writes the reply to the newest version of a job: threaded under
// its cover letter (or its one patch), in the form kernel people read the
// kernel test robot's in, with results.json attached.
func compose(c Config, job Job, res *Result) (history.OutMail, error) {
	v := job.Versions[len(job.Versions)-1]
	p := v.Posting
	parent := p.Cover
	if parent == nil {
		parent = p.Patches[0]
	}
	author := p.From
	if a, err := mail.ParseAddress(p.From); err == nil {
		author = a.String()
	}
	to, cc := c.Recipients.addressees(author)
	id := replyID(p.Key, c.From)
	refs := append(append([]string(nil), parent.References...), parent.ID)
	subject := parent.Subject
	if !strings.HasPrefix(strings.ToLower(subject), "re:") {
		subject = "Re: " + subject
	}
	var h bytes.Buffer
	header := func(k, v string) { fmt.Fprintf(&h, "%s: %s\r\n", k, v) }
	header("From", c.From)
	if len(to) > 0 {
		header("To", strings.Join(to, ", "))
	}
	if len(cc) > 0 {
		header("Cc", strings.Join(cc, ", "))
	}
	header("Subject", mime.QEncoding.Encode("utf-8", subject))
	header("Date", c.Now().UTC().Format("Mon, 02 Jan 2006 15:04:05 -0700"))
	header("Message-ID", "<"+id+">")
	header("In-Reply-To", "<"+parent.ID+">")
	header("References", "<"+strings.Join(refs, "> <")+">")
	header("X-Lab-Verdict", string(res.Kind))
	header("MIME-Version", "1.0")
	boundary := "=_" + id
	header("Content-Type", `multipart/mixed; boundary="`+boundary+`"`)
	h.WriteString("\r\n")
	fmt.Fprintf(&h, "--%s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n", boundary)
	h.WriteString(crlf(body(job, res, author)))
	if len(res.Results) > 0 {
		fmt.Fprintf(&h, "\r\n--%s\r\nContent-Type: application/json; name=\"results.json\"\r\nContent-Disposition: attachment; filename=\"results.json\"\r\nContent-Transfer-Encoding: base64\r\n\r\n", boundary)
		enc := base64.StdEncoding.EncodeToString(res.Results)
		for len(enc) > 76 {
			h.WriteString(enc[:76] + "\r\n")
			enc = enc[76:]
		}
		h.WriteString(enc + "\r\n")
	}
	fmt.Fprintf(&h, "\r\n--%s--\r\n", boundary)
	return history.OutMail{MessageID: id, Posting: p.Key, Recipients: strings.Join(append(to, cc...), ", "), Raw: h.Bytes()}, nil
}

// replyID is the reply's Message-ID, one per posting: a second answer to
// the same posting is the same mail, which the outbox refuses.
func replyID(posting, from string) string {
	sum := sha256.Sum256([]byte(posting))
	host := "localhost"
	if a, err := mail.ParseAddress(from); err == nil {
		if _, d, ok := strings.Cut(a.Address, "@"); ok {
			host = d
		}
	}
	return "lab-watch-" + hex.EncodeToString(sum[:12]) + "@" + host
}

// headline is what each kind of answer says first.
var headline = map[Kind]string{
	Verdict:     "lab measured this series",
	NotApplied:  "lab could not apply this series, so nothing was measured",
	SameImage:   "lab built this series into a kernel image it had already (no code change), so nothing was booted",
	BuildFailed: "lab could not build a kernel with this series, so nothing was measured",
	BootFailed:  "a kernel with this series failed to boot or to run the benchmarks (a panic or a hang): see below",
	Infra:       "lab's infrastructure failed on this series, so nothing can be said of it yet (not a verdict on the series)",
	Noisy:       "lab measured this series, but the noise is too large to call a change either way",
}

func body(job Job, res *Result, author string) string {
	var b strings.Builder
	name := author
	if a, err := mail.ParseAddress(author); err == nil && a.Name != "" {
		name = strings.Fields(a.Name)[0]
	}
	v := job.Versions[len(job.Versions)-1]
	fmt.Fprintf(&b, "Hi %s,\n\n%s.\n\n", name, headline[res.Kind])
	field := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, "%-9s %s\n", k+":", v)
		}
	}
	field("series", fmt.Sprintf("%s (%s)", v.Posting.Name(), patches(v.Posting)))
	if len(job.Versions) > 1 {
		prev := job.Versions[0]
		field("compared", fmt.Sprintf("%s against %s (%s) and against the base", v.Name, prev.Name, prev.Posting.Name()))
	}
	field("lab", job.Lab.Name)
	if res.RunID != "" {
		field("run", res.RunID)
	}
	field("base", res.Base)
	if job.BaseCommit != "" && !strings.Contains(res.Base, job.BaseCommit) {
		fmt.Fprintf(&b, "%-9s (not the author's base-commit %s)\n", "", job.BaseCommit)
	}
	field("machine", res.Machine)
	b.WriteString("\n" + strings.TrimRight(res.Summary, "\n") + "\n")
	if res.Kind != Infra {
		b.WriteString("\nTo reproduce, with the series from this thread (b4) and lab's lab file:\n\n")
		for _, line := range reproduce(job) {
			b.WriteString("    " + line + "\n")
		}
	}
	if len(res.Results) > 0 && res.Boots > 0 {
		b.WriteString("\nEvery boot's samples and the run's provenance are in the attached results.json.\n")
	}
	b.WriteString("\n-- \nlab watch\n")
	return b.String()
}

// reproduce are the commands that run the job again anywhere: each
// version fetched by its cover letter's Message-ID with b4, then lab run
// with one --series each.
func reproduce(job Job) []string {
	var lines []string
	run := "lab run labs/" + filepath.Base(job.Lab.Path)
	for _, v := range job.Versions {
		parent := v.Posting.Cover
		if parent == nil {
			parent = v.Posting.Patches[0]
		}
		lines = append(lines, fmt.Sprintf("b4 am -o - '%s' > %s.mbx", parent.ID, v.Name))
		run += " --series " + v.Name + ".mbx"
	}
	return append(lines, run)
}

func patches(p *listseries.Posting) string {
	if p.Total == 1 {
		return "1 patch"
	}
	return fmt.Sprintf("%d patches", p.Total)
}

func crlf(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\n", "\r\n")
}
