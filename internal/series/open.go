package series

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"lab/internal/series/mbox"
)

// Kinds of input Open recognises, by content, not by name.
const (
	// KindFolder: a series folder, read by Load.
	KindFolder = "folder"
	// KindMbox: mails after "From " lines: git format-patch --stdout, a
	// single git format-patch file, b4 am's .mbx, a mail client's mbox.
	KindMbox = "mbox"
	// KindMail: one mail with headers and no "From " line (a saved .eml).
	KindMail = "mail"
	// KindDiff: a bare diff (git diff > fix.patch), no mail around it.
	KindDiff = "diff"
)

// Cover is a series' cover letter, patch 0/M: kept apart, never applied.
type Cover struct {
	Subject    string // without its [PATCH v2 0/5] tag
	Version    int    // 2 for [PATCH v2 0/5]; 1 when untagged
	Total      int    // M: the patches it announces
	Author     string
	BaseCommit string // its base-commit: line; "" if none
	Origin     string // where it was: "FILE mail 1", or b4's .cover file
	MailSHA256 string // of the mail as it was in the input
	Text       string // its body
}

// unknownAuthor commits a bare diff, which names nobody.
const unknownAuthor = "lab <lab@localhost>"

// epoch is the Date: written for a mail without one, so that git am
// commits the same thing every time (it would take the clock's time).
const epoch = "Thu, 1 Jan 1970 00:00:00 +0000"

// Open reads a series from what a developer has at hand: a series folder
// (read by Load), an mbox (git format-patch --stdout, b4 am's .mbx, a mail
// client's save, one format-patch file), one saved mail, a bare diff, or
// "-" for stdin. It tells them apart by content, not by name. Beside an
// mbox FILE.mbx, b4's FILE.cover is read as the cover letter when the mbox
// has none.
//
// For anything but a folder, Open writes the patches as git am takes them,
// 0001-SUBJECT.patch and on, with the cover letter as
// 0000-cover-letter.patch, into dir: a folder that must be new or empty,
// or a temporary folder when dir is "" (Close removes it). Load reads that
// folder back as the same series, so `lab new` can keep it. The written
// files hold the decoded mail (From, Date, Subject, body with \n line
// ends), so Hash follows the patches' content, not CRLF, transfer encoding
// or the mbox wrapper; each Patch keeps its mail's original sha256 in
// MailSHA256. For a folder, dir "" reads it in place and any other dir
// gets a copy of its patch files.
//
// Every check runs before anything is written: a bad input is an error
// naming the file, and the mail by index and subject, and leaves nothing
// behind.
func Open(path string, stdin io.Reader, dir string) (*Series, error) {
	if path == "-" {
		if stdin == nil {
			return nil, errors.New("series -: no standard input to read")
		}
		data, err := io.ReadAll(stdin)
		if err != nil {
			return nil, fmt.Errorf("read series from standard input: %w", err)
		}
		return openData(input{name: "standard input", path: "-", data: data}, dir)
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("series %s does not exist%s", path, lookedAt(path))
	case err != nil:
		return nil, fmt.Errorf("series: %w", err)
	case fi.IsDir():
		return openFolder(path, dir)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read series: %w", err)
	}
	in := input{name: path, path: path, data: data}
	if c := strings.TrimSuffix(path, filepath.Ext(path)) + ".cover"; c != path {
		if cd, err := os.ReadFile(c); err == nil {
			in.coverPath, in.coverData = c, cd
		}
	}
	return openData(in, dir)
}

// Close removes the temporary folder Open wrote the patches to, if it
// made one; otherwise it does nothing.
func (s *Series) Close() error {
	if !s.temp {
		return nil
	}
	s.temp = false
	return os.RemoveAll(s.Dir)
}

// input is one file (or stdin) Open reads.
type input struct {
	name      string // for messages: the path, or "standard input"
	path      string
	data      []byte
	coverPath string // b4's .cover beside an mbox; "" if none
	coverData []byte
}

// entry is one mail of the input, read and classified.
type entry struct {
	file   string // the input's name, or the .cover's path
	where  string // `mail 3 "[PATCH v2 2/3] x"`, for messages
	mail   mbox.Mail
	tag    Tag
	text   string // the body git am gets: message, ---, diff
	author string
	origin string // where it was, for the provenance: "FILE mail 3"
}

func (e entry) version() int { return max(e.tag.Version, 1) }

// at names the mail with its file, for a message about it alone.
func (e entry) at() string { return e.file + ": " + e.where }

// reading is one input on its way to a Series.
type reading struct {
	in      input
	kind    string
	cover   *entry
	patches []entry
	notes   []string
}

func openData(in input, dir string) (*Series, error) {
	r := &reading{in: in}
	if err := r.read(); err != nil {
		return nil, err
	}
	if err := r.check(); err != nil {
		return nil, err
	}
	return r.write(dir)
}

// read recognises the input and classifies its mails.
func (r *reading) read() error {
	in := r.in
	text := string(in.data)
	var mails []mbox.Mail
	switch {
	case len(bytes.TrimSpace(in.data)) == 0:
		return fmt.Errorf("%s is empty: no patch in it", in.name)
	case bytes.IndexByte(in.data, 0) >= 0:
		return fmt.Errorf("%s: not a text file (it holds NUL bytes): not a patch, an mbox or a mail", in.name)
	case mbox.IsMbox(in.data):
		m, err := mbox.Read(in.data)
		if err != nil {
			return fmt.Errorf("%s: %w", in.name, err)
		}
		r.kind, mails = KindMbox, m
	case looksLikeMail(text):
		m, err := mbox.ReadMail(in.data)
		if err != nil {
			return fmt.Errorf("%s: %w", in.name, err)
		}
		r.kind, mails = KindMail, []mbox.Mail{m}
	case !utf8.Valid(in.data):
		return fmt.Errorf("%s: not a text file (not UTF-8, no mail headers): not a patch, an mbox or a mail", in.name)
	case HasDiff(text):
		return r.bareDiff()
	default:
		return fmt.Errorf("%s: not a patch: no \"From \" line of an mbox, no mail headers and no diff", in.name)
	}
	for _, m := range mails {
		e, err := r.entry(m, in.name, fmt.Sprintf("mail %d %q", m.Index, m.Subject), fmt.Sprintf("%s mail %d", in.name, m.Index))
		if err != nil {
			return err
		}
		if err := r.add(e); err != nil {
			return err
		}
	}
	if in.coverPath != "" {
		m, err := mbox.ReadMail(in.coverData)
		if err != nil {
			return fmt.Errorf("%s (the cover letter beside %s): %w", in.coverPath, in.name, err)
		}
		e, err := r.entry(m, in.coverPath, fmt.Sprintf("%s %q", filepath.Base(in.coverPath), m.Subject), in.coverPath)
		if err != nil {
			return err
		}
		switch {
		case r.cover != nil:
			r.notes = append(r.notes, fmt.Sprintf("%s: ignored: %s has its own cover letter", in.coverPath, in.name))
		case e.tag.N != 0 || e.tag.Reply:
			return fmt.Errorf("%s: not a cover letter (its subject is not [PATCH 0/N])", e.at())
		default:
			r.cover = &e
			r.notes = append(r.notes, fmt.Sprintf("cover letter %q read from %s", m.Subject, in.coverPath))
		}
	}
	return nil
}

var headerLine = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9-]*:[ \t]`)

// looksLikeMail reports whether text starts with a mail header block that
// names a subject or a sender.
func looksLikeMail(text string) bool {
	text = strings.TrimLeft(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	head, _, _ := strings.Cut(text, "\n\n")
	lines := strings.Split(head, "\n")
	if !headerLine.MatchString(lines[0]) {
		return false
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "Subject:") || strings.HasPrefix(l, "From:") {
			return true
		}
	}
	return false
}

// bareDiff makes the one patch of a diff without a mail: its subject is
// the file's name.
func (r *reading) bareDiff() error {
	in := r.in
	subject := strings.TrimSuffix(filepath.Base(in.path), filepath.Ext(in.path))
	if in.path == "-" {
		subject = "patch from standard input"
	}
	text := string(lfBytes(in.data))
	if err := CheckDiff(text); err != nil {
		return fmt.Errorf("%s: %w", in.name, err)
	}
	r.kind = KindDiff
	r.patches = []entry{{
		file:   in.name,
		where:  "the diff",
		mail:   mbox.Mail{Index: 1, Raw: in.data, Subject: subject},
		tag:    Tag{Subject: subject},
		text:   "---\n" + text,
		author: unknownAuthor,
		origin: in.name,
	}}
	r.notes = append(r.notes, fmt.Sprintf("%s is a bare diff: committed as %q by %s", in.name, subject, unknownAuthor))
	return nil
}

// entry reads what one mail is and carries.
func (r *reading) entry(m mbox.Mail, file, where, origin string) (entry, error) {
	e := entry{file: file, where: where, mail: m, tag: ParseTag(m.Subject), author: m.From, origin: origin}
	text, err := r.body(m, e.at())
	if err != nil {
		return e, err
	}
	e.text = text
	return e, nil
}

// add files a mail as the cover letter, a patch, or a skipped reply.
func (r *reading) add(e entry) error {
	diff := HasDiff(e.text)
	switch {
	case e.tag.Reply:
		r.notes = append(r.notes, fmt.Sprintf("%s: a reply, skipped", e.at()))
		return nil
	case e.tag.N == 0 && e.tag.M > 0:
		if r.cover != nil {
			return fmt.Errorf("%s: a second cover letter (the first is %s): two series mixed", e.at(), r.cover.where)
		}
		r.cover = &e
		return nil
	case !diff:
		// Sorted out in check: no patch at all is one message for all.
		r.patches = append(r.patches, e)
		return nil
	case e.mail.Subject == "":
		return fmt.Errorf("%s: no Subject: header: git am needs one", e.at())
	case e.author == "":
		return fmt.Errorf("%s: no From: header: git am needs the author", e.at())
	}
	if err := CheckDiff(e.text); err != nil {
		return fmt.Errorf("%s: %w", e.at(), err)
	}
	r.patches = append(r.patches, e)
	return nil
}

// body is what git am gets after a mail's headers: its text, then any
// patch it carries as an attachment.
func (r *reading) body(m mbox.Mail, where string) (string, error) {
	text := m.Text
	for _, a := range m.Attachments {
		name := a.Name
		if name == "" {
			name = "(no name)"
		}
		data := lfBytes(a.Data)
		isText := bytes.IndexByte(data, 0) < 0 && utf8.Valid(data)
		switch {
		case a.Type == "application/pgp-signature" || a.Type == "application/pkcs7-signature":
			continue
		case isText && HasDiff(string(data)) && (strings.HasPrefix(a.Type, "text/") || a.Type == "application/octet-stream" ||
			a.Type == "application/x-patch" || a.Type == "application/x-diff"):
			switch {
			case HasDiff(text):
				text = strings.TrimRight(text, "\n") + "\n"
			case slices.Contains(strings.Split(text, "\n"), "---"):
				text = strings.TrimRight(text, "\n") + "\n\n"
			default:
				text = strings.TrimRight(text, "\n") + "\n---\n"
			}
			text += string(data)
		case strings.HasPrefix(a.Type, "text/") && isText:
			r.notes = append(r.notes, fmt.Sprintf("%s: attachment %s (%s) is not a diff: ignored", where, name, a.Type))
		case strings.HasPrefix(a.Type, "text/") || a.Type == "application/octet-stream" || a.Type == "application/x-patch" || a.Type == "application/x-diff":
			return "", fmt.Errorf("%s: attachment %s (%s) is not a diff in text: lab takes a patch inline or as a text attachment", where, name, a.Type)
		default:
			return "", fmt.Errorf("%s: attachment %s is %s, not text: lab takes a patch inline or as a text/x-patch attachment", where, name, a.Type)
		}
	}
	if text != "" && !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	return text, nil
}

// checkNumbers checks a numbered series (all: the cover letter first, if
// any): one M, each N once, none beyond M, none missing.
func checkNumbers(name string, all []entry) error {
	total := all[0].tag.M
	byN := map[int]entry{}
	for _, e := range all {
		switch {
		case e.tag.M != total:
			return fmt.Errorf("%s: patches of two series mixed: %s is %d/%d, %s is %d/%d", name, all[0].where, all[0].tag.N, total, e.where, e.tag.N, e.tag.M)
		case e.tag.N > total:
			return fmt.Errorf("%s: numbered %d/%d: beyond the series' end", e.at(), e.tag.N, e.tag.M)
		case e.tag.N == 0:
			continue // the cover letter
		}
		if prev, ok := byN[e.tag.N]; ok {
			return fmt.Errorf("%s: two patches numbered %d/%d: %s and %s: two series mixed, or one patch sent twice", name, e.tag.N, total, prev.where, e.where)
		}
		byN[e.tag.N] = e
	}
	var missing []string
	for n := 1; n <= total; n++ {
		if _, ok := byN[n]; !ok {
			missing = append(missing, fmt.Sprintf("%d/%d", n, total))
		}
	}
	if len(missing) > 0 {
		var have []string
		for n := 1; n <= total; n++ {
			if _, ok := byN[n]; ok {
				have = append(have, fmt.Sprintf("%d/%d", n, total))
			}
		}
		return fmt.Errorf("%s: patch %s missing (it holds %s): a series applies only whole", name, strings.Join(missing, ", "), strings.Join(have, ", "))
	}
	return nil
}

// check refuses what is not one complete series, and puts the patches in
// N/M order.
func (r *reading) check() error {
	name := r.in.name
	var patches, noDiff []entry
	for _, e := range r.patches {
		if HasDiff(e.text) {
			patches = append(patches, e)
		} else {
			noDiff = append(noDiff, e)
		}
	}
	switch {
	case len(patches) == 0 && r.cover != nil:
		return fmt.Errorf("%s: only a cover letter (%s), no patch: the %d patches it announces are missing (b4 am writes them to NAME.mbx, the cover letter to NAME.cover)", name, r.cover.where, r.cover.tag.M)
	case len(patches) == 0 && len(noDiff) == 0:
		return fmt.Errorf("%s: no patches: no mail in it but replies", name)
	case len(patches) == 0:
		return fmt.Errorf("%s: no patches: none of its %d mails carries a diff (the first: %s)", name, len(noDiff), noDiff[0].where)
	case len(noDiff) > 0:
		return fmt.Errorf("%s: no diff in it and not a cover letter (0/N): nothing to apply", noDiff[0].at())
	}
	all := patches
	if r.cover != nil {
		all = append([]entry{*r.cover}, patches...)
	}
	// One version.
	for _, e := range all[1:] {
		if e.version() != all[0].version() {
			return fmt.Errorf("%s: patches of two series mixed: %s is v%d, %s is v%d: give one version at a time", name, all[0].where, all[0].version(), e.where, e.version())
		}
	}
	// Numbered all or none; one M; each N once; none missing.
	numbered := 0
	for _, e := range patches {
		if e.tag.M > 0 {
			numbered++
		}
	}
	if numbered == 0 {
		if r.cover != nil && r.cover.tag.M != len(patches) {
			return fmt.Errorf("%s: the cover letter (%s) announces %d patches, the input holds %d unnumbered ones", name, r.cover.where, r.cover.tag.M, len(patches))
		}
		r.patches = patches
		return nil
	}
	if numbered < len(patches) {
		var with, without entry
		for _, e := range patches {
			if e.tag.M > 0 {
				with = e
			} else {
				without = e
			}
		}
		return fmt.Errorf("%s: patches of two series mixed: %s is numbered, %s is not", name, with.where, without.where)
	}
	if err := checkNumbers(name, all); err != nil {
		return err
	}
	slices.SortStableFunc(patches, func(a, b entry) int { return a.tag.N - b.tag.N })
	r.patches = patches
	return nil
}

// write puts the series where git am takes it and returns it.
func (r *reading) write(dir string) (s *Series, err error) {
	abs, temp, undo, err := newFolder(dir)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			undo()
		}
	}()
	s = &Series{Name: r.name(), Dir: abs, Kind: r.kind, Input: r.in.path, Notes: r.notes, Version: 1, temp: temp}
	sum := sha256.Sum256(r.in.data)
	s.InputSHA256 = hex.EncodeToString(sum[:])
	if c := r.cover; c != nil {
		s.Version, s.RFC = c.version(), c.tag.RFC
		s.Cover = &Cover{Subject: c.tag.Subject, Version: c.version(), Total: c.tag.M, Author: c.author,
			BaseCommit: baseCommit(c.text), Origin: c.origin, MailSHA256: sha(c.mail.Raw), Text: c.text}
		s.BaseCommit = s.Cover.BaseCommit
		data := mailFile(c.author, c.mail.Date, c.mail.Subject, c.text)
		if HasDiff(string(data)) {
			// Load would take an interdiff's lines for a patch.
			s.Notes = append(s.Notes, fmt.Sprintf("%s: cover letter carries a diff (an interdiff?): kept in the provenance, not written to %s", c.at(), abs))
		} else if err := os.WriteFile(filepath.Join(abs, "0000-cover-letter.patch"), data, 0o644); err != nil {
			return nil, fmt.Errorf("write the cover letter: %w", err)
		}
	}
	for i, e := range r.patches {
		if i == 0 && s.Cover == nil {
			s.Version, s.RFC = e.version(), e.tag.RFC
		}
		if s.BaseCommit == "" {
			s.BaseCommit = baseCommit(e.text)
		}
		prefix := "[PATCH]"
		if e.tag.M > 0 {
			prefix = fmt.Sprintf("[PATCH %d/%d]", e.tag.N, e.tag.M)
		}
		data := mailFile(e.author, e.mail.Date, prefix+" "+e.tag.Subject, e.text)
		name := fmt.Sprintf("%04d-%s.patch", i+1, slug(e.tag.Subject))
		p := filepath.Join(abs, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return nil, fmt.Errorf("write %s: %w", name, err)
		}
		s.Patches = append(s.Patches, Patch{
			Path: p, Name: name, Subject: e.tag.Subject, SHA256: sha(data), Files: Touched(e.text),
			Author: e.author, Number: e.tag.N, Total: e.tag.M, Trailers: trailers(e.text),
			MailSHA256: sha(e.mail.Raw), Origin: e.origin,
		})
	}
	return s, nil
}

// name is the series' name: the file's, or for stdin the cover letter's
// or first patch's subject.
func (r *reading) name() string {
	if r.in.path != "-" {
		return strings.TrimSuffix(filepath.Base(r.in.path), filepath.Ext(r.in.path))
	}
	subj := r.patches[0].tag.Subject
	if r.cover != nil && r.cover.tag.Subject != "" {
		subj = r.cover.tag.Subject
	}
	if s := slug(subj); s != "" {
		return s
	}
	return "stdin"
}

// mailFile is one mail as git am takes it: UTF-8 headers and body, \n
// line ends, nothing of the transport.
func mailFile(author, date, subject, text string) []byte {
	if date == "" {
		date = epoch
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "From: %s\nDate: %s\nSubject: %s\nMIME-Version: 1.0\nContent-Type: text/plain; charset=UTF-8\nContent-Transfer-Encoding: 8bit\n\n%s", author, date, subject, text)
	return b.Bytes()
}

// slug is git format-patch's file name for a subject: runs of anything but
// letters, digits, '.' and '_' become one '-', at most 52 characters.
func slug(subject string) string {
	var b strings.Builder
	dash := false
	for _, c := range subject {
		if c < 128 && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_') {
			b.WriteRune(c)
			dash = false
		} else if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	s := strings.Trim(b.String(), "-.")
	if len(s) > 52 {
		s = strings.TrimRight(s[:52], "-.")
	}
	return s
}

func sha(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func lfBytes(b []byte) []byte {
	n := bytes.Count(b, []byte("\n"))
	if n == 0 || n != bytes.Count(b, []byte("\r\n")) {
		return b
	}
	return bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n"))
}

// newFolder makes the folder Open writes into: dir, which must be new or
// empty, or a temporary one for "". undo removes what it made (or, for an
// empty dir that was there, what was written into it).
func newFolder(dir string) (abs string, temp bool, undo func(), err error) {
	if dir == "" {
		d, err := os.MkdirTemp("", "lab-series-*")
		if err != nil {
			return "", false, nil, fmt.Errorf("series folder: %w", err)
		}
		return d, true, func() { os.RemoveAll(d) }, nil
	}
	if abs, err = filepath.Abs(dir); err != nil {
		return "", false, nil, err
	}
	if ents, err := os.ReadDir(abs); err == nil {
		if len(ents) > 0 {
			return "", false, nil, fmt.Errorf("series folder %s is not empty: lab writes a series only into a new or empty folder", dir)
		}
		return abs, false, func() { emptyFolder(abs) }, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", false, nil, fmt.Errorf("series folder: %w", err)
	}
	// The topmost folder that does not exist yet is the one to remove.
	top := abs
	for {
		parent := filepath.Dir(top)
		if _, err := os.Stat(parent); err == nil || parent == top {
			break
		}
		top = parent
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return "", false, nil, fmt.Errorf("series folder: %w", err)
	}
	return abs, false, func() { os.RemoveAll(top) }, nil
}

func emptyFolder(dir string) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		os.RemoveAll(filepath.Join(dir, e.Name()))
	}
}

// openFolder is Open for a series folder: Load, then what the patch files
// say of their list (author, N/M, trailers, the cover letter). Those are
// read best-effort: Load accepted the folder, and git am is its judge.
func openFolder(path, dir string) (*Series, error) {
	s, covers, err := load(path)
	if err != nil {
		return nil, err
	}
	if dir != "" {
		abs, _, undo, err := newFolder(dir)
		if err != nil {
			return nil, err
		}
		files := covers
		for _, p := range s.Patches {
			files = append(files, p.Path)
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err == nil {
				err = os.WriteFile(filepath.Join(abs, filepath.Base(f)), data, 0o644)
			}
			if err != nil {
				undo()
				return nil, fmt.Errorf("copy the series to %s: %w", dir, err)
			}
		}
		if s, covers, err = load(abs); err != nil {
			undo()
			return nil, err
		}
	}
	s.Kind, s.Input, s.Version = KindFolder, path, 1
	for i := range s.Patches {
		p := &s.Patches[i]
		p.MailSHA256, p.Origin = p.SHA256, p.Path
		m, ok := readOne(p.Path)
		if !ok {
			continue
		}
		t := ParseTag(m.Subject)
		p.Author, p.Number, p.Total, p.Trailers = m.From, t.N, t.M, trailers(m.Text)
		if i == 0 {
			s.Version, s.RFC = max(t.Version, 1), t.RFC
		}
		if s.BaseCommit == "" {
			s.BaseCommit = baseCommit(m.Text)
		}
	}
	if len(covers) > 0 {
		if m, ok := readOne(covers[0]); ok {
			t := ParseTag(m.Subject)
			s.Cover = &Cover{Subject: t.Subject, Version: max(t.Version, 1), Total: t.M, Author: m.From,
				BaseCommit: baseCommit(m.Text), Origin: covers[0], MailSHA256: sha(m.Raw), Text: m.Text}
			s.Version, s.RFC = s.Cover.Version, t.RFC
			if s.Cover.BaseCommit != "" {
				s.BaseCommit = s.Cover.BaseCommit
			}
		}
	}
	return s, nil
}

// readOne reads the one mail of a patch file, if it is one.
func readOne(path string) (mbox.Mail, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return mbox.Mail{}, false
	}
	if mbox.IsMbox(data) {
		ms, err := mbox.Read(data)
		if err != nil || len(ms) != 1 {
			return mbox.Mail{}, false
		}
		return ms[0], true
	}
	m, err := mbox.ReadMail(data)
	return m, err == nil
}
