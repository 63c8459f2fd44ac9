package listseries

import (
	"fmt"
	"strings"
	"time"
)

// Assembler gathers a list's patch mails into postings, in the order the
// list delivered them. It keeps every posting it has seen, so that a new
// version finds the one it follows.
type Assembler struct {
	postings map[string]*Posting
	order    []*Posting
	owner    map[string]*Posting // a part's Message-ID → its posting
}

// NewAssembler is an Assembler with nothing seen.
func NewAssembler() *Assembler {
	return &Assembler{postings: map[string]*Posting{}, owner: map[string]*Posting{}}
}

// Postings are every posting seen, in the order their first part came.
func (a *Assembler) Postings() []*Posting { return a.order }

// Add takes a classified mail and returns the posting it went into. A mail
// that is no patch or cover letter goes into none (nil, nil); one that
// cannot go into a posting (a second patch numbered 2/3 in a thread) is an
// error saying why, for the record.
func (a *Assembler) Add(m *Message, arrived time.Time) (*Posting, error) {
	if m.Kind != Patch && m.Kind != Cover {
		return nil, nil
	}
	if p := a.owner[m.ID]; p != nil {
		return nil, fmt.Errorf("delivered twice: %s is already part of %s", m.ID, p.Name())
	}
	p := a.find(m)
	if p == nil {
		p = &Posting{Key: a.key(m), First: arrived}
		a.postings[p.Key] = p
		a.order = append(a.order, p)
	}
	if err := p.add(m); err != nil {
		return nil, err
	}
	a.owner[m.ID] = p
	return p, nil
}

// key is the key of a new posting that m starts: a cover letter's own ID;
// a patch of a thread its parent's (the cover letter, or with deep
// threading the patch before it, still to come); a single or unthreaded
// patch its own, as is one whose parent is another posting's (a v2 sent
// in reply to v1).
func (a *Assembler) key(m *Message) string {
	if m.Kind == Cover || m.Tag.M <= 1 {
		return m.ID
	}
	parent := m.InReplyTo
	if parent == "" && len(m.References) > 0 {
		parent = m.References[len(m.References)-1]
	}
	if parent == "" || a.postings[parent] != nil || a.owner[parent] != nil {
		return m.ID
	}
	return parent
}

// find is the posting m belongs to: the one started under m's own ID by
// parts that came before it, or the one its parent or thread is part of;
// nil for a new one.
func (a *Assembler) find(m *Message) *Posting {
	if p := a.postings[m.ID]; p != nil && p.fits(m) && p.free(m) {
		return p
	}
	if m.Kind == Cover || m.Tag.M <= 1 {
		return nil
	}
	for _, id := range append([]string{m.InReplyTo}, m.References...) {
		p := a.owner[id]
		if p == nil {
			p = a.postings[id]
		}
		if p != nil && p.fits(m) {
			return p
		}
	}
	return nil
}

// free reports whether p has no part yet in m's place.
func (p *Posting) free(m *Message) bool {
	if m.Kind == Cover {
		return p.Cover == nil
	}
	k := max(m.Tag.N, 1)
	return k <= len(p.Patches) && p.Patches[k-1] == nil
}

// fits reports whether m can be part of p: the same version and length.
func (p *Posting) fits(m *Message) bool {
	if len(p.Patches) == 0 && p.Cover == nil {
		return true
	}
	return max(m.Tag.Version, 1) == p.Version && m.Tag.M == p.Total
}

func (p *Posting) add(m *Message) error {
	if len(p.Patches) == 0 && p.Cover == nil {
		p.Version, p.Total, p.RFC = max(m.Tag.Version, 1), max(m.Tag.M, 1), m.Tag.RFC
		p.Patches = make([]*Message, p.Total)
		p.From, p.Subject = m.From, m.Tag.Subject
	}
	if m.Kind == Cover {
		if p.Cover != nil {
			return fmt.Errorf("a second cover letter for %s: %s and %s", p.Name(), p.Cover.ID, m.ID)
		}
		p.Cover, p.From, p.Subject = m, m.From, m.Tag.Subject
		return nil
	}
	k := max(m.Tag.N, 1)
	if prev := p.Patches[k-1]; prev != nil {
		return fmt.Errorf("two patches numbered %d/%d in %s: %s and %s", k, p.Total, p.Name(), prev.ID, m.ID)
	}
	p.Patches[k-1] = m
	return nil
}

// Previous is the posting p is a new version of, nil for none: the newest
// earlier version that p's cover letter links to (b4's "Link to v1:"),
// that has p's change-id, or that has p's subject and author.
func (a *Assembler) Previous(p *Posting) *Posting {
	if p.Version <= 1 && p.ChangeID() == "" {
		return nil
	}
	var best *Posting
	linked := map[string]bool{}
	for _, id := range p.Linked() {
		linked[id] = true
	}
	for _, q := range a.order {
		if q == p || q.Version >= p.Version {
			continue
		}
		same := linked[q.Key]
		if cid := p.ChangeID(); cid != "" && cid == q.ChangeID() {
			same = true
		}
		if strings.EqualFold(q.Subject, p.Subject) && q.Author() == p.Author() {
			same = true
		}
		if same && (best == nil || q.Version > best.Version) {
			best = q
		}
	}
	return best
}
