// Package series reads a patch series and applies it to, or reverts it
// from, a git work tree. Load reads a series folder (a file per patch);
// Open also reads what a mailing list delivers (an mbox such as b4 am's
// .mbx with its .cover, one mail, a bare diff, stdin), with what the list
// adds: the cover letter, the version, the base-commit, each patch's
// author and trailers. Its leaf package mbox decodes the mail.
package series

import (
	"bufio"
	"bytes"
	"context"
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

	"lab/internal/gitcmd"
)

// Modes say which side of the comparison a series is on.
const (
	// ModeApply: the baseline is the source, patched is the source with
	// the series applied.
	ModeApply = "apply"
	// ModeRevert: patched is the source (which already has the series),
	// the baseline is the source with the series reverse-applied, last
	// patch first.
	ModeRevert = "revert"
)

// Patch is one file of a series.
type Patch struct {
	Path    string // absolute path
	Name    string // file name, e.g. 0001-uprobes-....patch
	Subject string // the Subject: header, without [PATCH n/m]
	SHA256  string
	// CRLF: every line ends in \r\n, as a mail client may save a patch;
	// Apply and Revert feed git a copy with \n endings.
	CRLF bool
	// Files are the paths the patch changes (its "+++ b/" and "--- a/"
	// lines), to name the patch behind a compiler error.
	Files []string

	// What the list says of the patch; Open sets these, Load does not.
	Author   string    // its From:, "Name <address>"
	Number   int       // N of its [PATCH N/M] tag; 0 when untagged
	Total    int       // M of the tag
	Trailers []Trailer // Signed-off-by, Acked-by, Link...: in the commit message, recorded here
	// MailSHA256 is the sha256 of the mail as it was in the input (CRLF,
	// transfer encoding, mbox separator and all), for the provenance;
	// SHA256 is that of the file git am gets.
	MailSHA256 string
	Origin     string // where the mail was: "FILE mail 3", or the patch file
}

// Series is an ordered list of patches.
type Series struct {
	Name    string
	Dir     string
	Patches []Patch
	// Notes are what Load skipped and why (a cover letter), for the
	// caller to show.
	Notes []string

	// What Open recognised; Load leaves these zero.
	Kind        string // KindFolder, KindMbox, KindMail or KindDiff
	Input       string // the path Open was given; "-" for stdin
	InputSHA256 string // of the input file; "" for a folder
	Version     int    // the series' version, 2 for [PATCH v2 n/m]; 1 when untagged
	RFC         bool   // tagged RFC
	BaseCommit  string // the base-commit: line (the cover letter's, else a patch's); "" if none
	Cover       *Cover // the cover letter; nil if there is none
	temp        bool   // Dir is a temporary folder Open made: Close removes it
}

// patchExts are the file names a series folder may hold.
var patchExts = []string{".patch", ".mbox", ".mbx", ".diff", ".eml"}

// Load reads a series folder: every file must be a patch (git format-patch
// output or one mail of an mbox), applied in name order. Hidden files
// (.gitkeep, an editor's swap file) are ignored: nobody means them as a
// patch. Every other file that is not a patch (a README, a .orig or .rej
// left by patch(1), a quilt "series" file) is an error naming it, since
// skipping it silently could drop a patch the user meant. A cover letter
// (0000-*.patch, or a "[PATCH 0/n]" mail without a diff) is skipped with a
// note in Notes. Open reads the other forms a series arrives in.
func Load(dir string) (*Series, error) {
	s, _, err := load(dir)
	return s, err
}

// lookedAt is " (looked for /abs/path)" for a relative path, so that a
// message says where, from which folder, the series was looked for.
func lookedAt(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil || filepath.IsAbs(path) {
		return ""
	}
	return " (looked for " + abs + ")"
}

// load is Load, also returning the cover letters' paths.
func load(dir string) (*Series, []string, error) {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil, fmt.Errorf("series folder %s does not exist%s", dir, lookedAt(dir))
	case err != nil:
		return nil, nil, fmt.Errorf("series folder: %w", err)
	case !fi.IsDir():
		return nil, nil, fmt.Errorf("series %s is a file: a series is a folder of patches (git format-patch -o FOLDER)", dir)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("read series: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, nil, err
	}
	s := &Series{Name: filepath.Base(abs), Dir: abs}
	var covers []string
	for _, e := range ents { // ReadDir sorts by name: the order patches apply in
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		p := filepath.Join(abs, e.Name())
		if !e.Type().IsRegular() {
			return nil, nil, fmt.Errorf("%s: not a patch file: a series folder holds only patch files (%s), no folders or links", p, strings.Join(patchExts, ", "))
		}
		if !slices.Contains(patchExts, filepath.Ext(e.Name())) {
			return nil, nil, misnamed(p)
		}
		patch, note, err := readPatch(p)
		if err != nil {
			return nil, nil, err
		}
		if note != "" {
			s.Notes = append(s.Notes, note)
			covers = append(covers, p)
			continue
		}
		s.Patches = append(s.Patches, patch)
	}
	if len(s.Patches) == 0 {
		return nil, nil, fmt.Errorf("series folder %s has no patches: put the series there with git format-patch -o %s BASE..TIP", dir, dir)
	}
	return s, covers, nil
}

// backupExts are the names of copies patch(1) and editors leave.
var backupExts = []string{".orig", ".rej", ".bak", ".old"}

// misnamed is the error for a file of a series folder without a patch's
// name. One that holds a patch mail (saved from a mail client as .txt, or
// with no extension) gets its new name: "not a patch file" would tell the
// user to move out the very patch they meant.
func misnamed(p string) error {
	exts := strings.Join(patchExts, ", ")
	if !looksLikePatchMail(p) {
		return fmt.Errorf("%s: not a patch file: a series folder holds only patch files (%s), applied in name order; move it out of the folder", p, exts)
	}
	to := strings.TrimSuffix(filepath.Base(p), filepath.Ext(p))
	if filepath.Ext(to) != ".patch" {
		to += ".patch"
	}
	if exists(filepath.Join(filepath.Dir(p), to)) || slices.Contains(backupExts, filepath.Ext(p)) || strings.HasSuffix(p, "~") {
		// A copy patch(1) or an editor left (0001-x.patch.orig):
		// renamed, it would overwrite the patch or apply it twice.
		return fmt.Errorf("%s: not a patch file by its name, though it holds a patch mail: a leftover copy (of %s?); move it out of the folder", p, to)
	}
	return fmt.Errorf("%s: holds a patch mail, but lab reads only files named %s in a series folder: rename it to %s", p, exts, to)
}

// looksLikePatchMail reports whether the file at p starts like a patch
// mail: git format-patch's "From <sha>" line, or a Subject: header, over
// a diff.
func looksLikePatchMail(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 64<<10) // a patch's headers and the start of its diff
	n, _ := io.ReadFull(f, head)
	text := strings.ReplaceAll(string(head[:n]), "\r\n", "\n")
	mail := mboxFrom.MatchString(text) || rawSubject(text) != ""
	return mail && (HasDiff(text) || strings.HasPrefix(rawSubject(text), "[PATCH"))
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// readPatch reads one patch file; a cover letter gives a note instead.
func readPatch(p string) (Patch, string, error) {
	name := filepath.Base(p)
	data, err := os.ReadFile(p)
	if err != nil {
		return Patch{}, "", err
	}
	text := string(data)
	crlf := strings.Count(text, "\n") > 0 && strings.Count(text, "\n") == strings.Count(text, "\r\n")
	if crlf {
		text = strings.ReplaceAll(text, "\r\n", "\n")
	}
	switch {
	case len(data) == 0:
		return Patch{}, "", fmt.Errorf("%s: empty file: not a patch", p)
	case !utf8.Valid(data) || strings.ContainsRune(text, 0):
		return Patch{}, "", fmt.Errorf("%s: not a text file: not a patch", p)
	case mails(text) > 1:
		return Patch{}, "", fmt.Errorf("%s: holds %d mails: lab applies one patch per file; split it with git mailsplit -o FOLDER %s", p, mails(text), name)
	}
	subj := subject(text)
	diff := HasDiff(text)
	switch {
	case !diff && (strings.HasPrefix(name, "0000-") || coverSubject(text)):
		return Patch{}, fmt.Sprintf("%s: cover letter (no diff), skipped", name), nil
	case subj == "":
		return Patch{}, "", fmt.Errorf("%s: no Subject: header: not a mail; write patches with git format-patch", p)
	case !diff:
		return Patch{}, "", fmt.Errorf("%s: %q has no diff: nothing to apply", p, subj)
	}
	sum := sha256.Sum256(data)
	return Patch{Path: p, Name: name, Subject: subj, SHA256: hex.EncodeToString(sum[:]), CRLF: crlf, Files: Touched(text)}, "", nil
}

// mboxFrom is the "From " line that starts each mail of an mbox (git
// format-patch writes "From <sha> Mon Sep 17 00:00:00 2001").
var mboxFrom = regexp.MustCompile(`(?m)^From \S+ +(Mon|Tue|Wed|Thu|Fri|Sat|Sun) `)

func mails(text string) int { return len(mboxFrom.FindAllStringIndex(text, -1)) }

// Touched lists the files a patch changes, in the order of its diff:
// old and new names, renames' and copies' included.
func Touched(text string) []string {
	files, _ := touched(text)
	return files
}

// touched is Touched, and false when a name may be missing from it (git
// quoted it, or a "diff --git" line names its files in a way not read
// here).
func touched(text string) (files []string, complete bool) {
	seen := map[string]bool{}
	complete = true
	for _, l := range strings.Split(text, "\n") {
		ps, ok := diffPaths(strings.TrimSuffix(l, "\r"))
		complete = complete && ok
		for _, f := range ps {
			if !seen[f] {
				seen[f] = true
				files = append(files, f)
			}
		}
	}
	return files, complete
}

// Touching names the patches of the series that change file (a path in
// the tree, or one ending in it, as a compiler may print it).
func (s *Series) Touching(file string) []string {
	var out []string
	for _, p := range s.Patches {
		for _, f := range p.Files {
			if f == file || strings.HasSuffix(file, "/"+f) {
				out = append(out, p.Name)
				break
			}
		}
	}
	return out
}

// HasDiff reports whether the mail carries a diff git can apply.
func HasDiff(text string) bool {
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "diff --git ") || strings.HasPrefix(l, "+++ ") {
			return true
		}
	}
	return false
}

// coverSubject reports whether the mail is patch 0 of a series: "[PATCH 0/5]",
// "[PATCH v2 00/12]".
func coverSubject(text string) bool { return coverTag.MatchString(rawSubject(text)) }

var coverTag = regexp.MustCompile(`^\[[^\]]*\b0+/\d+\]`)

// Hash identifies the series' content: it changes when any patch changes.
// For a series Open wrote, the files hold the decoded mails, so the same
// patches hash the same whatever mbox, line ends or encoding carried them.
func (s *Series) Hash() string {
	h := sha256.New()
	for _, p := range s.Patches {
		fmt.Fprintf(h, "%s %s\n", p.Name, p.SHA256)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// subject is the mail's Subject: header without its [PATCH n/m] tag.
func subject(mail string) string {
	subj := rawSubject(mail)
	if i := strings.Index(subj, "]"); strings.HasPrefix(subj, "[") && i > 0 {
		subj = strings.TrimSpace(subj[i+1:])
	}
	return subj
}

// rawSubject is the Subject: header of the mail, folded lines joined.
func rawSubject(mail string) string {
	sc := bufio.NewScanner(strings.NewReader(mail))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var subj string
	in := false
	for sc.Scan() {
		l := sc.Text()
		if l == "" && subj != "" {
			break
		}
		switch {
		case strings.HasPrefix(l, "Subject: "):
			subj, in = strings.TrimPrefix(l, "Subject: "), true
		case in && (strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t")):
			subj += " " + strings.TrimSpace(l)
		default:
			in = false
		}
	}
	return strings.TrimSpace(subj)
}

// ApplyError says which patch did not apply, and where.
type ApplyError struct {
	Patch   string   // patch file
	Reverse bool     // reverse-applying (revert mode)
	Details []string // git's "error:" lines: the failing file and hunk line
	// What the list calls the patch: N/M of its tag and its subject, for
	// those who know it by its mail, not by a file.
	Number, Total int
	Subject       string
}

func (e *ApplyError) Error() string {
	what := e.Patch
	if e.Number > 0 {
		what += fmt.Sprintf(" (patch %d/%d %q)", e.Number, e.Total, e.Subject)
	}
	return fmt.Sprintf("%s %s: does not apply:\n  %s", e.verb(), what, strings.Join(e.Details, "\n  "))
}

// Public says what Error does, naming the patch by its number and subject
// instead of a file of this machine's: for a reply to a list.
func (e *ApplyError) Public() string {
	what := fmt.Sprintf("patch %q", e.Subject)
	if e.Number > 0 {
		what = fmt.Sprintf("patch %d/%d %q", e.Number, e.Total, e.Subject)
	}
	return fmt.Sprintf("%s %s: does not apply:\n  %s", e.verb(), what, strings.Join(e.Details, "\n  "))
}

func (e *ApplyError) verb() string {
	if e.Reverse {
		return "revert (reverse-apply)"
	}
	return "apply"
}

func applyError(p Patch, reverse bool, out string, err error) *ApplyError {
	return &ApplyError{Patch: p.Path, Reverse: reverse, Details: withHunks(p.Path, errorLines(out, err)),
		Number: p.Number, Total: p.Total, Subject: p.Subject}
}

// Apply commits the series on top of the work tree's HEAD with git am.
func (s *Series) Apply(ctx context.Context, g *gitcmd.Git) error {
	for _, p := range s.Patches {
		file, done, err := p.gitFile()
		if err != nil {
			return err
		}
		out, err := g.Run(ctx, "am", "--keep-cr", file)
		done()
		if err != nil {
			g.Run(ctx, "am", "--abort")
			return applyError(p, false, out, err)
		}
	}
	return nil
}

// gitFile is the file to give git: the patch itself, or for a CRLF patch a
// copy with \n endings (git would take the \r for part of each line); done
// removes the copy.
func (p Patch) gitFile() (file string, done func(), err error) {
	if !p.CRLF {
		return p.Path, func() {}, nil
	}
	data, err := os.ReadFile(p.Path)
	if err != nil {
		return "", nil, err
	}
	f, err := os.CreateTemp("", "lab-*-"+p.Name)
	if err != nil {
		return "", nil, err
	}
	defer f.Close()
	if _, err := f.Write(bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n"))); err != nil {
		os.Remove(f.Name())
		return "", nil, err
	}
	return f.Name(), func() { os.Remove(f.Name()) }, nil
}

// Revert reverse-applies the series, last patch first, committing one
// revert per patch.
func (s *Series) Revert(ctx context.Context, g *gitcmd.Git) error {
	for i := len(s.Patches) - 1; i >= 0; i-- {
		p := s.Patches[i]
		file, done, err := p.gitFile()
		if err != nil {
			return err
		}
		out, err := g.Run(ctx, "apply", "--index", "-R", file)
		done()
		if err != nil {
			return applyError(p, true, out, err)
		}
		msg := fmt.Sprintf("Revert \"%s\"\n\nReverse-applied by lab from %s (sha256 %s).", p.Subject, p.Name, p.SHA256)
		if _, err := g.Run(ctx, "commit", "-q", "--no-verify", "-m", msg); err != nil {
			return fmt.Errorf("commit revert of %s: %w", p.Name, err)
		}
	}
	return nil
}

// errorLines keeps git's explanation: lines naming the failing file and hunk.
func errorLines(out string, err error) []string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "error: ") || strings.HasPrefix(l, "Patch failed") || strings.Contains(l, "does not apply") {
			keep = append(keep, l)
		}
	}
	if len(keep) == 0 {
		keep = append(keep, strings.TrimSpace(out), err.Error())
	}
	return keep
}

// withHunks adds, after each "patch failed: FILE:LINE" line, the header of
// the patch's hunk that starts there, so the user sees which hunk failed.
func withHunks(patch string, lines []string) []string {
	data, err := os.ReadFile(patch)
	if err != nil {
		return lines
	}
	var out []string
	for _, l := range lines {
		out = append(out, l)
		loc, ok := strings.CutPrefix(l, "error: patch failed: ")
		if !ok {
			continue
		}
		i := strings.LastIndex(loc, ":")
		if i < 0 {
			continue
		}
		file, line := loc[:i], loc[i+1:]
		if h := findHunk(string(data), file, line); h != "" {
			out = append(out, "failing hunk: "+h)
		}
	}
	return out
}

func findHunk(patch, file, line string) string {
	inFile := false
	for _, l := range strings.Split(patch, "\n") {
		switch {
		case strings.HasPrefix(l, "diff --git "):
			inFile = strings.HasSuffix(l, " b/"+file)
		case inFile && strings.HasPrefix(l, "@@ "):
			var o1, o2, n1, n2 int
			if _, err := fmt.Sscanf(l, "@@ -%d,%d +%d,%d @@", &o1, &o2, &n1, &n2); err != nil {
				continue
			}
			if fmt.Sprint(o1) == line || fmt.Sprint(n1) == line {
				return l
			}
		}
	}
	return ""
}

// Paths lists every path the series' patches read or write (Touched), and
// whether the list is complete: a caller that needs them all must not rely
// on an incomplete one.
func (s *Series) Paths() (paths []string, complete bool, err error) {
	seen := map[string]bool{}
	complete = true
	for _, p := range s.Patches {
		data, err := os.ReadFile(p.Path)
		if err != nil {
			return nil, false, err
		}
		files, ok := touched(string(data))
		complete = complete && ok
		for _, f := range files {
			if !seen[f] {
				seen[f] = true
				paths = append(paths, f)
			}
		}
	}
	return paths, complete, nil
}

// diffPaths are the paths one line of a patch names, and false when it
// names one that cannot be read here (quoted, or a "diff --git" line whose
// two names do not split).
func diffPaths(l string) ([]string, bool) {
	if strings.HasPrefix(l, `--- "`) || strings.HasPrefix(l, `+++ "`) {
		return nil, false
	}
	for _, prefix := range []string{"--- a/", "+++ b/", "rename from ", "rename to ", "copy from ", "copy to "} {
		if f, ok := strings.CutPrefix(l, prefix); ok {
			if strings.HasPrefix(f, `"`) {
				return nil, false
			}
			if f = strings.TrimSpace(f); f == "" {
				return nil, true
			}
			return []string{f}, true
		}
	}
	rest, ok := strings.CutPrefix(l, "diff --git ")
	if !ok {
		return nil, true
	}
	// "a/X b/X" for a change in place; a rename's two names are on its
	// rename lines.
	if strings.HasPrefix(rest, `"`) {
		return nil, false
	}
	if n := len(rest); n%2 == 1 {
		half := (n - 1) / 2
		a, b := rest[:half], rest[half+1:]
		if strings.HasPrefix(a, "a/") && strings.HasPrefix(b, "b/") && a[2:] == b[2:] {
			return []string{a[2:]}, true
		}
	}
	return nil, strings.Contains(rest, " b/")
}
