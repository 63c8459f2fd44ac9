// Package mbox reads mails from the bytes of an mbox (mails after "From "
// separator lines, as git format-patch --stdout, b4 am and mail clients
// write them) or of one saved mail (a .eml, b4's .cover), and undoes what
// the transport did to them: CRLF line ends, mboxrd ">From " escaping
// (except in git's and b4's mboxes, which escape nothing), quoted-printable
// and base64 transfer encodings, Latin-1, MIME multipart wrapping.
// It knows mail, not patches: what a mail means is the caller's business.
package mbox

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"net/textproto"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Mail is one decoded message.
type Mail struct {
	Index     int    // 1-based position in the mbox (1 for a single mail)
	Raw       []byte // the mail as it was in the input, separator line included
	From      string // the From: header, RFC 2047 decoded
	Date      string
	Subject   string // decoded, folded lines joined
	MessageID string
	// Text is the message's text/plain body (the mail's own, or its first
	// inline text/plain part), in UTF-8 with \n line ends.
	Text string
	// Attachments are the other leaf parts of a multipart mail, decoded
	// from their transfer encoding but not from their charset.
	Attachments []Attachment
}

// Attachment is a MIME part that is not the message's text.
type Attachment struct {
	Name string // file name from Content-Disposition or Content-Type; "" if none
	Type string // media type in lower case, e.g. text/x-patch
	Data []byte
}

// separator is the "From " line before each mail of an mbox: git
// format-patch writes "From <sha> Mon Sep 17 00:00:00 2001", b4 "From
// git@z Thu Jan  1 00:00:00 1970", a mail client "From - Mon Dec  2 ...".
// Requiring the weekday keeps a commit message's "From here on..." line
// (which git never escapes) from splitting a mail.
var separator = regexp.MustCompile(`(?m)^From \S+ +(Mon|Tue|Wed|Thu|Fri|Sat|Sun) [^\n]*\n`)

// IsMbox reports whether data is an mbox: after any blank lines, its first
// line is a "From " separator.
func IsMbox(data []byte) bool {
	loc := separator.FindIndex(data)
	return loc != nil && len(bytes.TrimSpace(data[:loc[0]])) == 0
}

// Spans are where each mail of an mbox starts and ends in data, its
// separator line included, without decoding any; nil when data is not an
// mbox.
func Spans(data []byte) [][2]int {
	locs := separator.FindAllIndex(data, -1)
	if len(locs) == 0 || len(bytes.TrimSpace(data[:locs[0][0]])) != 0 {
		return nil
	}
	spans := make([][2]int, len(locs))
	for i, loc := range locs {
		end := len(data)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		spans[i] = [2]int{loc[0], end}
	}
	return spans
}

// Read splits an mbox into its mails and decodes each. A mail that cannot
// be decoded is an error naming its index.
func Read(data []byte) ([]Mail, error) {
	spans := Spans(data)
	if spans == nil {
		return nil, errors.New("not an mbox: it does not start with a \"From \" line")
	}
	var mails []Mail
	for i, sp := range spans {
		m, err := ReadFromLine(data[sp[0]:sp[1]])
		m.Index = i + 1
		if err != nil {
			if m.Subject != "" {
				return nil, fmt.Errorf("mail %d %q: %w", i+1, m.Subject, err)
			}
			return nil, fmt.Errorf("mail %d: %w", i+1, err)
		}
		mails = append(mails, m)
	}
	return mails, nil
}

// ReadFromLine decodes one mail of an mbox, its "From " separator line
// first, undoing the escaping that line's writer used.
func ReadFromLine(raw []byte) (Mail, error) {
	line := raw
	if i := bytes.IndexByte(raw, '\n'); i >= 0 {
		line = raw[:i+1]
	}
	m, err := decode(raw[len(line):], !unescaped.Match(line))
	m.Index, m.Raw = 1, raw
	return m, err
}

// ReadMail decodes one mail that has no separator line (and so no
// escaping).
func ReadMail(data []byte) (Mail, error) {
	m, err := decode(data, false)
	m.Index, m.Raw = 1, data
	return m, err
}

// escaped is a line mboxrd (or mboxo) escaped: ">From ", ">>From ", ...
var escaped = regexp.MustCompile(`(?m)^>(>*From )`)

// unescaped are the separators of mboxes that escape nothing, as git am
// reads them: git format-patch's magic date, and b4 am's "From git@z"
// (b4's save_git_am_mbox). Unescaping them would turn a commit message's
// ">From" into "From".
var unescaped = regexp.MustCompile(`^From (\S+ Mon Sep 17 00:00:00 2001|git@z )`)

// decode parses one mail without its separator line; unescape undoes one
// level of ">From " escaping. On an error the returned Mail holds what
// was read so far (its subject, for the message).
func decode(raw []byte, unescape bool) (Mail, error) {
	var m Mail
	raw = lf(raw)
	if unescape {
		// mboxrd escapes every body line matching ^>*From with one more
		// '>' (mboxo only "From "); a diff line never starts with '>'.
		raw = escaped.ReplaceAll(raw, []byte("$1"))
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return m, errors.New("empty mail")
	}
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return m, fmt.Errorf("mail headers: %w", err)
	}
	h := msg.Header
	header := func(k string) string { return DecodeHeader(h.Get(k)) }
	m.Subject, m.Date, m.MessageID = header("Subject"), header("Date"), header("Message-Id")
	m.From = header("From")
	if a, err := mail.ParseAddress(h.Get("From")); err == nil {
		m.From = formatAddress(a)
	}
	body, err := io.ReadAll(msg.Body)
	if err != nil {
		return m, err
	}
	err = m.part(textproto.MIMEHeader(h), body, 0)
	return m, err
}

// DecodeHeader undoes a header value's RFC 2047 encoding (=?utf-8?q?...?=)
// and trims it; a value it cannot decode is kept as it is.
func DecodeHeader(v string) string {
	if d, err := new(mime.WordDecoder).DecodeHeader(v); err == nil {
		v = d
	}
	return strings.TrimSpace(v)
}

// formatAddress writes "Name <addr>" in UTF-8, quoting the name only when
// it needs it ("Doe, John"): git mailinfo reads either.
func formatAddress(a *mail.Address) string {
	if a.Name == "" {
		return "<" + a.Address + ">"
	}
	name := a.Name
	if strings.ContainsAny(name, "()<>[]:;@\\,.\"") {
		name = `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(name) + `"`
	}
	return name + " <" + a.Address + ">"
}

// part decodes one MIME entity into m: the first inline text/plain leaf
// becomes m.Text, other leaves become attachments.
func (m *Mail) part(h textproto.MIMEHeader, body []byte, depth int) error {
	if depth > 8 {
		return errors.New("MIME parts nested deeper than 8")
	}
	ctype, params := "text/plain", map[string]string{}
	if ct := h.Get("Content-Type"); ct != "" {
		t, p, err := mime.ParseMediaType(ct)
		if err != nil {
			return fmt.Errorf("Content-Type %q: %w", ct, err)
		}
		ctype, params = t, p
	}
	if strings.HasPrefix(ctype, "multipart/") {
		return m.multipart(ctype, params["boundary"], body, depth)
	}
	data, err := transferDecode(h.Get("Content-Transfer-Encoding"), body)
	if err != nil {
		return err
	}
	disp, dparams, _ := mime.ParseMediaType(h.Get("Content-Disposition"))
	name := dparams["filename"]
	if name == "" {
		name = params["name"]
	}
	if ctype == "text/plain" && disp != "attachment" && name == "" && m.Text == "" {
		text, err := toUTF8(data, params["charset"])
		if err != nil {
			return err
		}
		m.Text = string(lf([]byte(text)))
		return nil
	}
	m.Attachments = append(m.Attachments, Attachment{Name: name, Type: ctype, Data: data})
	return nil
}

func (m *Mail) multipart(ctype, boundary string, body []byte, depth int) error {
	if boundary == "" {
		return fmt.Errorf("%s without a boundary", ctype)
	}
	r := multipart.NewReader(bytes.NewReader(body), boundary)
	for i := 0; ; i++ {
		p, err := r.NextRawPart()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s part %d: %w", ctype, i+1, err)
		}
		data, err := io.ReadAll(p)
		if err != nil {
			return fmt.Errorf("%s part %d: %w", ctype, i+1, err)
		}
		t, _, _ := mime.ParseMediaType(p.Header.Get("Content-Type"))
		switch {
		case ctype == "multipart/signed" && i > 0:
			// The signature; the content is part 1.
			continue
		case ctype == "multipart/alternative" && t != "" && t != "text/plain":
			// The same text as HTML or rich text: keep the plain one.
			continue
		}
		if err := m.part(p.Header, data, depth+1); err != nil {
			return fmt.Errorf("%s part %d: %w", ctype, i+1, err)
		}
	}
}

// transferDecode undoes a Content-Transfer-Encoding.
func transferDecode(cte string, body []byte) ([]byte, error) {
	switch strings.ToLower(strings.TrimSpace(cte)) {
	case "", "7bit", "8bit", "binary":
		return body, nil
	case "quoted-printable":
		out, err := io.ReadAll(quotedprintable.NewReader(bytes.NewReader(body)))
		if err != nil {
			return nil, fmt.Errorf("quoted-printable body: %w", err)
		}
		return out, nil
	case "base64":
		// The decoder skips \r and \n but not spaces some mailers leave.
		clean := bytes.Map(func(r rune) rune {
			if r == ' ' || r == '\t' {
				return -1
			}
			return r
		}, body)
		out, err := io.ReadAll(base64.NewDecoder(base64.StdEncoding, bytes.NewReader(clean)))
		if err != nil {
			return nil, fmt.Errorf("base64 body: %w", err)
		}
		return out, nil
	default:
		return nil, fmt.Errorf("Content-Transfer-Encoding %q: lab reads 7bit, 8bit, quoted-printable and base64", cte)
	}
}

// toUTF8 converts text in charset to UTF-8. Mail that crosses a kernel
// list is UTF-8 or ASCII nearly always; Latin-1 is converted, anything
// else must already be valid UTF-8.
func toUTF8(data []byte, charset string) (string, error) {
	switch strings.ToLower(charset) {
	case "iso-8859-1", "latin1", "iso_8859-1", "l1":
		var b strings.Builder
		for _, c := range data {
			b.WriteRune(rune(c))
		}
		return b.String(), nil
	}
	if !utf8.Valid(data) {
		if charset == "" {
			charset = "none given"
		}
		return "", fmt.Errorf("body is not UTF-8 (charset %s): lab reads UTF-8, ASCII and Latin-1 mail", charset)
	}
	return string(data), nil
}

// lf turns CRLF line ends into LF when every line has one (a mail client's
// or a Windows save); a mail with some CRLF lines only (a diff of a file
// with CRLF line ends) is left alone.
func lf(b []byte) []byte {
	n := bytes.Count(b, []byte("\n"))
	if n == 0 || n != bytes.Count(b, []byte("\r\n")) {
		return b
	}
	return bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n"))
}
