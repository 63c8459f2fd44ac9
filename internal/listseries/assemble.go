package listseries

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Assembler gathers a list's patch mails into postings, in the order the
// list delivered them, by the rules real senders follow: a cover letter
// 0/n and its parts k/n for any n ≥ 1, threaded shallow (every part in
// reply to the cover letter) or deep (each in reply to the one before),
// or not threaded at all; parts in any order. It keeps every posting it
// has seen, so that a new version finds the one it follows.
type Assembler struct {
	order    []*Posting
	owner    map[string]*Posting // a part's Message-ID → its posting
	children map[string][]string // a Message-ID → the parts that reply to it
	// others are mails known to be no part (a bug report a fix answers, a
	// review): a part replying to one starts a posting of its own rather
	// than waiting for it as for a cover letter.
	others map[string]bool
}

// NewAssembler is an Assembler with nothing seen.
func NewAssembler() *Assembler {
	return &Assembler{owner: map[string]*Posting{}, children: map[string][]string{}, others: map[string]bool{}}
}

// Others tells the assembler of mails that are neither a patch nor a cover
// letter.
func (a *Assembler) Others(ids ...string) {
	for _, id := range ids {
		a.others[id] = true
	}
}

// Postings are every posting seen, in the order their first part came.
func (a *Assembler) Postings() []*Posting {
	for _, p := range a.order {
		a.rekey(p)
	}
	return a.order
}

// Add takes a classified mail and returns the posting it went into. A mail
// that is no patch or cover letter goes into none (nil, nil); one that
// cannot go into a posting (a second patch numbered 2/3 in reply to the
// same cover letter) is an error saying why, for the record.
func (a *Assembler) Add(m *Message, arrived time.Time) (*Posting, error) {
	if m.Kind != Patch && m.Kind != Cover {
		return nil, nil
	}
	if p := a.owner[m.ID]; p != nil {
		return nil, fmt.Errorf("delivered twice: %s is already part of %s", m.ID, p.Name())
	}
	var into *Posting
	for _, p := range a.candidates(m) {
		switch {
		case !p.fits(m) || !p.free(m):
		case into == nil:
			into = p
		case into.joins(p):
			a.merge(into, p)
		}
	}
	if into == nil {
		if q := a.owner[m.parent()]; q != nil && m.Kind == Patch && m.Tag.M > 0 && q.fits(m) {
			prev := q.Patches[max(m.Tag.N, 1)-1]
			return nil, fmt.Errorf("two patches numbered %d/%d in %s: %s and %s", max(m.Tag.N, 1), q.Total, q.Name(), prev.ID, m.ID)
		}
		into = &Posting{First: arrived}
		a.order = append(a.order, into)
	}
	into.add(m)
	a.owner[m.ID] = into
	if parent := m.parent(); parent != "" {
		a.children[parent] = append(a.children[parent], m.ID)
	}
	if arrived.Before(into.First) {
		into.First = arrived
	}
	a.rekey(into)
	return into, nil
}

// candidates are the postings m may belong to, the likeliest first: those
// whose parts reply to m (m is their cover letter, or the patch before
// with deep threading); then along m's thread, nearest first, the posting
// of each mail it replies to and of the parts replying to the same mail
// (shallow threading, the cover letter not come yet), up to the first
// mail of another posting (a v2 sent in reply to v1); last, for a mail
// not threaded at all, the unthreaded postings of its author.
func (a *Assembler) candidates(m *Message) []*Posting {
	var out []*Posting
	add := func(p *Posting) {
		if p != nil && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	for _, c := range a.children[m.ID] {
		add(a.owner[c])
	}
	if m.Tag.M == 0 { // a lone [PATCH]: a posting of its own
		return out
	}
	thread := m.thread()
	if m.Kind == Patch {
		for _, id := range thread {
			if p := a.owner[id]; p != nil {
				add(p)
				break
			}
			for _, c := range a.children[id] {
				add(a.owner[c])
			}
		}
	}
	if len(thread) == 0 {
		for i := len(a.order) - 1; i >= 0; i-- {
			if p := a.order[i]; p.unthreaded() && p.Author() == address(m.From) {
				add(p)
			}
		}
	}
	return out
}

// rekey sets p's Key and Awaits from the parts it holds.
func (a *Assembler) rekey(p *Posting) {
	p.Key, p.Awaits = p.root(a)
}

// root is the key of p: its cover letter's Message-ID; else the mail its
// first part replies to when that has not come (the cover letter, or the
// patch before with deep threading), which awaits names; else the first
// part's own Message-ID (a single patch, a posting without a cover letter,
// one replying to another posting or to a mail that is no part).
func (p *Posting) root(a *Assembler) (key, awaits string) {
	if p.Cover != nil {
		return p.Cover.ID, ""
	}
	var first *Message
	for _, m := range p.Patches {
		if m != nil {
			first = m
			break
		}
	}
	if first == nil {
		return p.Key, ""
	}
	parent := first.parent()
	if parent == "" || first.Tag.M == 0 || a.owner[parent] != nil || a.others[parent] {
		return first.ID, ""
	}
	return parent, parent
}

// merge moves q's parts into p: a mail that joined two postings made
// before it came (deep threading, parts out of order).
func (a *Assembler) merge(p, q *Posting) {
	for _, m := range q.parts() {
		p.add(m)
		a.owner[m.ID] = p
	}
	if q.First.Before(p.First) {
		p.First = q.First
	}
	a.order = slices.DeleteFunc(a.order, func(x *Posting) bool { return x == q })
}

// free reports whether p has no part yet in m's place.
func (p *Posting) free(m *Message) bool {
	if m.Kind == Cover {
		return p.Cover == nil
	}
	k := max(m.Tag.N, 1)
	return k <= len(p.Patches) && p.Patches[k-1] == nil
}

// fits reports whether m can be part of p: the same version, length and
// sending (a RESEND is a posting of its own).
func (p *Posting) fits(m *Message) bool {
	if len(p.Patches) == 0 && p.Cover == nil {
		return true
	}
	return max(m.Tag.Version, 1) == p.Version && max(m.Tag.M, 1) == p.Total && m.Tag.Resend == p.Resend && (m.Tag.M == 0) == p.lone()
}

// joins reports whether q's parts can all go into p.
func (p *Posting) joins(q *Posting) bool {
	if p.Version != q.Version || p.Total != q.Total || p.Resend != q.Resend || p.Cover != nil && q.Cover != nil {
		return false
	}
	for i, m := range q.Patches {
		if m != nil && p.Patches[i] != nil {
			return false
		}
	}
	return true
}

// lone reports whether p is a single patch without a number ([PATCH]).
func (p *Posting) lone() bool {
	return p.Cover == nil && len(p.Patches) == 1 && p.Patches[0] != nil && p.Patches[0].Tag.M == 0
}

// unthreaded reports whether none of p's parts replies to a mail: a
// series sent without threading, whose parts are told by their author.
func (p *Posting) unthreaded() bool {
	for _, m := range p.parts() {
		if len(m.thread()) > 0 || m.Tag.M == 0 {
			return false
		}
	}
	return true
}

func (p *Posting) add(m *Message) {
	if len(p.Patches) == 0 && p.Cover == nil {
		p.Version, p.Total, p.RFC, p.Resend = max(m.Tag.Version, 1), max(m.Tag.M, 1), m.Tag.RFC, m.Tag.Resend
		p.Patches = make([]*Message, p.Total)
		p.From, p.Subject = m.From, m.Tag.Subject
	}
	if m.Kind == Cover {
		p.Cover, p.From, p.Subject = m, m.From, m.Tag.Subject
		return
	}
	p.Patches[max(m.Tag.N, 1)-1] = m
	if p.Cover == nil && m.Tag.N <= 1 {
		p.Subject = m.Tag.Subject
	}
}

// parent is the mail m replies to, "" for none.
func (m *Message) parent() string {
	if m.InReplyTo != "" {
		return m.InReplyTo
	}
	if n := len(m.References); n > 0 {
		return m.References[n-1]
	}
	return ""
}

// thread is the mails m replies to, nearest first: its parent, then its
// References from the newest.
func (m *Message) thread() []string {
	var out []string
	if m.InReplyTo != "" {
		out = append(out, m.InReplyTo)
	}
	for i := len(m.References) - 1; i >= 0; i-- {
		if id := m.References[i]; !slices.Contains(out, id) && id != m.ID {
			out = append(out, id)
		}
	}
	return out
}

// Previous is the posting p is a new version of, nil for none: the newest
// earlier posting of the same series, known by the cover letter's link to
// it (b4's "Link to v1:"), by b4's change-id, by the thread p was sent in
// (git send-email --in-reply-to), or by its author and a subject it shares
// (the cover letter's or a patch's: a v2 of one patch may drop the cover
// letter v1 had, or add one). A version of fewer or more patches follows
// all the same. A RESEND follows the posting of its own version it sends
// again.
func (a *Assembler) Previous(p *Posting) *Posting {
	linked := map[string]bool{}
	for _, id := range p.Linked() {
		linked[id] = true
	}
	for _, id := range p.Thread() {
		if q := a.owner[id]; q != nil && q != p {
			linked[q.Key] = true
		}
	}
	if p.Version <= 1 && !p.Resend && p.ChangeID() == "" && len(linked) == 0 {
		return nil
	}
	subjects := p.Subjects()
	var best *Posting
	for _, q := range a.order {
		if q == p || !p.follows(q) {
			continue
		}
		same := linked[q.Key]
		if cid := p.ChangeID(); cid != "" && cid == q.ChangeID() {
			same = true
		}
		if q.Author() == p.Author() && slices.ContainsFunc(q.Subjects(), func(s string) bool { return slices.Contains(subjects, s) }) {
			same = true
		}
		if same && (best == nil || q.Version > best.Version || q.Version == best.Version && q.First.After(best.First)) {
			best = q
		}
	}
	return best
}

// follows reports whether p may be a later sending of q: a higher version,
// or (a RESEND) the same one sent again after it.
func (p *Posting) follows(q *Posting) bool {
	if q.Version < p.Version {
		return true
	}
	return p.Resend && q.Version == p.Version && !q.First.After(p.First)
}

// Subjects are the subjects a later version may share with p, lower case:
// the cover letter's and each patch's.
func (p *Posting) Subjects() []string {
	var out []string
	for _, m := range p.parts() {
		if s := strings.ToLower(m.Tag.Subject); !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if s := strings.ToLower(p.Subject); len(out) == 0 && s != "" {
		out = append(out, s)
	}
	return out
}

// Thread are the mails p's first part (its cover letter, else its first
// patch) replies to, nearest first: an earlier version among them is the
// one p follows.
func (p *Posting) Thread() []string {
	parts := p.parts()
	if len(parts) == 0 {
		return nil
	}
	return parts[0].thread()
}
