package series

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// What a mailing list adds to a patch: the subject's tag, the trailers,
// the cover letter's base-commit: line; and what it can break: a diff cut
// short.

// Tag is what a subject's bracketed prefix says:
// "[RFC PATCH net-next v3 02/10] mm: x".
type Tag struct {
	Version int // v3; 0 when the subject names none
	N, M    int // 2/10; 0, 0 when the subject has no N/M
	RFC     bool
	Resend  bool   // RESEND: a posting sent again, of the same version
	Reply   bool   // "Re: [PATCH 1/2] ..."
	Subject string // the subject without its prefixes
}

var (
	replyPrefix = regexp.MustCompile(`(?i)^(re|aw|fwd?):\s*`)
	bracket     = regexp.MustCompile(`^\[([^\]]*)\]\s*`)
	versionTok  = regexp.MustCompile(`^v(\d+)$`)
	countTok    = regexp.MustCompile(`^(\d+)/(\d+)$`)
	squashedTok = regexp.MustCompile(`^(?i)patch-?(v\d+)$`) // [PATCHv2 1/3], [PATCH-v2 1/3]
)

// ParseTag reads every bracketed group at the start of a subject, as git
// am strips them: a version, an N/M, RFC, RESEND; other words (PATCH, a
// tree such as net-next) are ignored.
func ParseTag(subject string) Tag {
	var t Tag
	s := strings.TrimSpace(subject)
	for loc := replyPrefix.FindStringIndex(s); loc != nil; loc = replyPrefix.FindStringIndex(s) {
		t.Reply, s = true, s[loc[1]:]
	}
	for {
		g := bracket.FindStringSubmatch(s)
		if g == nil {
			break
		}
		s = s[len(g[0]):]
		for _, tok := range strings.FieldsFunc(g[1], func(r rune) bool { return r == ' ' || r == ',' || r == '\t' }) {
			if sq := squashedTok.FindStringSubmatch(tok); sq != nil {
				tok = strings.ToLower(sq[1])
			}
			if v := versionTok.FindStringSubmatch(strings.ToLower(tok)); v != nil {
				t.Version, _ = strconv.Atoi(v[1])
			} else if c := countTok.FindStringSubmatch(tok); c != nil {
				t.N, _ = strconv.Atoi(c[1])
				t.M, _ = strconv.Atoi(c[2])
			} else if strings.EqualFold(tok, "RFC") {
				t.RFC = true
			} else if strings.EqualFold(tok, "RESEND") {
				t.Resend = true
			}
		}
	}
	t.Subject = strings.TrimSpace(s)
	return t
}

// Trailer is one "Key: value" line of a commit message's last paragraph:
// Signed-off-by, Acked-by, Reviewed-by, Tested-by, Reported-by, Link,
// Fixes, Cc, Closes. They stay in the commit message git am writes; they
// are recorded here for the provenance and the report.
type Trailer struct {
	Key   string
	Value string
}

func (t Trailer) String() string { return t.Key + ": " + t.Value }

var trailerLine = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)*):[ \t]+(\S.*)$`)

// trailerKeys are the keys that are not "*-by" but are trailers.
var trailerKeys = map[string]bool{"link": true, "fixes": true, "cc": true, "closes": true, "buglink": true}

// trailers reads the trailers of a mail's message: the last paragraph
// before the "---" line or the diff. Other lines of that paragraph (a
// maintainer's "[bp: fix typo]") are skipped.
func trailers(text string) []Trailer {
	lines := strings.Split(message(text), "\n")
	end := len(lines)
	for end > 0 && strings.TrimSpace(lines[end-1]) == "" {
		end--
	}
	start := end
	for start > 0 && strings.TrimSpace(lines[start-1]) != "" {
		start--
	}
	var out []Trailer
	for _, l := range lines[start:end] {
		g := trailerLine.FindStringSubmatch(strings.TrimRight(l, " \t"))
		if g == nil {
			continue
		}
		if k := strings.ToLower(g[1]); strings.HasSuffix(k, "-by") || trailerKeys[k] {
			out = append(out, Trailer{Key: g[1], Value: g[2]})
		}
	}
	return out
}

// message is the commit message part of a patch mail's text: up to the
// "---" line or the first line of the diff.
func message(text string) string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if l == "---" || strings.HasPrefix(l, "diff --git ") || strings.HasPrefix(l, "Index: ") ||
			(strings.HasPrefix(l, "--- ") && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "+++ ")) {
			return strings.Join(lines[:i], "\n")
		}
	}
	return text
}

var baseCommitLine = regexp.MustCompile(`(?m)^base-commit: *([0-9a-f]{7,64})[ \t]*$`)

// baseCommit is the commit a "base-commit:" line (git format-patch --base,
// b4) names; "" if there is none.
func baseCommit(text string) string {
	if g := baseCommitLine.FindStringSubmatch(text); g != nil {
		return g[1]
	}
	return ""
}

var (
	hunkHeader = regexp.MustCompile(`^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@`)
	diffStat   = regexp.MustCompile(`(?m)^ (\d+) files? changed`)
)

// CheckDiff finds a diff cut short, as a truncated mbox or a mailer that
// dropped lines leaves it: a hunk with fewer lines than its @@ header
// counts, a file with a ---/+++ header and no hunk, or fewer files than
// the diffstat announces. git apply would say "corrupt patch" with a line
// number in a temporary file; this says which file and hunk.
func CheckDiff(text string) error {
	// Blank lines at the end are the mbox's, not the diff's: a mail cut
	// mid-hunk must not have them taken for context lines.
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	start := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "diff --git ") || (strings.HasPrefix(l, "--- ") && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "+++ ")) {
			start = i
			break
		}
	}
	if start < 0 {
		return nil
	}
	var d diffReader
	for _, l := range lines[start:] {
		var err error
		if d.hunk != "" {
			err = d.hunkLine(l)
		} else {
			err = d.header(l)
		}
		if err != nil {
			return err
		}
	}
	if d.hunk != "" {
		return fmt.Errorf("diff of %s ends inside hunk %q (%d old and %d new lines missing): the mail is cut short", d.file, d.hunk, d.old, d.new)
	}
	if err := d.endFile(); err != nil {
		return err
	}
	if g := diffStat.FindStringSubmatch(strings.Join(lines[:start], "\n")); g != nil && d.files > 0 {
		if want, _ := strconv.Atoi(g[1]); d.files < want {
			return fmt.Errorf("the diffstat says %d files changed but the diff has %d: the mail is cut short", want, d.files)
		}
	}
	return nil
}

// diffReader follows a diff line by line, counting each hunk's lines
// against its header.
type diffReader struct {
	file       string // the file being read, from its +++ line
	hunk       string // the open hunk's header
	old, new   int    // lines the open hunk still needs
	hunks      int    // hunks of the current file
	headerOnly bool   // a +++ line and no hunk yet
	files      int
	binary     bool
}

// hunkLine takes a line of the open hunk.
func (d *diffReader) hunkLine(l string) error {
	switch {
	case l == "" || l[0] == ' ':
		d.old, d.new = d.old-1, d.new-1
	case l[0] == '-':
		d.old--
	case l[0] == '+':
		d.new--
	case l[0] == '\\': // "\ No newline at end of file"
	default:
		return fmt.Errorf("diff of %s ends inside hunk %q (%d old and %d new lines missing): the mail is cut short", d.file, d.hunk, max(d.old, 0), max(d.new, 0))
	}
	if d.old < 0 || d.new < 0 {
		return fmt.Errorf("diff of %s: hunk %q has more lines than its header counts: the patch was edited by hand or mangled", d.file, d.hunk)
	}
	if d.old == 0 && d.new == 0 {
		d.hunk = ""
	}
	return nil
}

// header takes a line between hunks: a file's header or a hunk's.
func (d *diffReader) header(l string) error {
	switch {
	case strings.HasPrefix(l, "diff --git "):
		if err := d.endFile(); err != nil {
			return err
		}
		d.files++
		d.file, d.hunks, d.headerOnly, d.binary = strings.TrimPrefix(l, "diff --git "), 0, false, false
	case strings.HasPrefix(l, "+++ "):
		d.file, d.headerOnly = strings.TrimPrefix(strings.TrimPrefix(l, "+++ "), "b/"), true
	case strings.HasPrefix(l, "GIT binary patch"), strings.HasPrefix(l, "Binary files "):
		d.binary = true
	case hunkHeader.MatchString(l):
		g := hunkHeader.FindStringSubmatch(l)
		d.old, d.new = 1, 1
		if g[1] != "" {
			d.old, _ = strconv.Atoi(g[1])
		}
		if g[2] != "" {
			d.new, _ = strconv.Atoi(g[2])
		}
		d.hunks++
		if d.old > 0 || d.new > 0 {
			d.hunk = hunkHeader.FindString(l)
		}
	}
	return nil
}

// endFile refuses a file header with no hunk after it (a binary patch
// has none).
func (d *diffReader) endFile() error {
	if d.headerOnly && d.hunks == 0 && !d.binary {
		return fmt.Errorf("diff of %s has no hunk after its header: the mail is cut short", d.file)
	}
	return nil
}
