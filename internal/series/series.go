// Package series reads a patch series (a folder of git format-patch or mbox
// files) and applies it to, or reverts it from, a git work tree.
package series

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"lab/internal/gitcmd"
)

// Patch is one file of a series.
type Patch struct {
	Path    string // absolute path
	Name    string // file name, e.g. 0001-uprobes-....patch
	Subject string // the Subject: header, without [PATCH n/m]
	SHA256  string
}

// Series is an ordered list of patches.
type Series struct {
	Name    string
	Dir     string
	Patches []Patch
}

// Load reads every *.patch, *.mbox, *.diff and *.eml file of dir, in name order.
func Load(dir string) (*Series, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read series: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	s := &Series{Name: filepath.Base(abs), Dir: abs}
	for _, e := range ents {
		switch filepath.Ext(e.Name()) {
		case ".patch", ".mbox", ".diff", ".eml":
		default:
			continue
		}
		p := filepath.Join(abs, e.Name())
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(data)
		subj := subject(string(data))
		if subj == "" {
			return nil, fmt.Errorf("%s: no Subject: header (write patches with git format-patch)", p)
		}
		s.Patches = append(s.Patches, Patch{Path: p, Name: e.Name(), Subject: subj, SHA256: hex.EncodeToString(sum[:])})
	}
	sort.Slice(s.Patches, func(i, j int) bool { return s.Patches[i].Name < s.Patches[j].Name })
	if len(s.Patches) == 0 {
		return nil, fmt.Errorf("series %s: no .patch/.mbox files", dir)
	}
	return s, nil
}

// Hash identifies the series' content: it changes when any patch changes.
func (s *Series) Hash() string {
	h := sha256.New()
	for _, p := range s.Patches {
		fmt.Fprintf(h, "%s %s\n", p.Name, p.SHA256)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func subject(mail string) string {
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
	if i := strings.Index(subj, "]"); strings.HasPrefix(subj, "[") && i > 0 {
		subj = strings.TrimSpace(subj[i+1:])
	}
	return subj
}

// ApplyError says which patch did not apply, and where.
type ApplyError struct {
	Patch   string   // patch file
	Reverse bool     // reverse-applying (revert mode)
	Details []string // git's "error:" lines: the failing file and hunk line
}

func (e *ApplyError) Error() string {
	verb := "apply"
	if e.Reverse {
		verb = "revert (reverse-apply)"
	}
	return fmt.Sprintf("%s %s: does not apply:\n  %s", verb, e.Patch, strings.Join(e.Details, "\n  "))
}

// Apply commits the series on top of the work tree's HEAD with git am.
func (s *Series) Apply(ctx context.Context, g *gitcmd.Git) error {
	for _, p := range s.Patches {
		if out, err := g.Run(ctx, "am", "--keep-cr", p.Path); err != nil {
			g.Run(ctx, "am", "--abort")
			return &ApplyError{Patch: p.Path, Details: withHunks(p.Path, errorLines(out, err))}
		}
	}
	return nil
}

// Revert reverse-applies the series, last patch first, committing one
// revert per patch.
func (s *Series) Revert(ctx context.Context, g *gitcmd.Git) error {
	for i := len(s.Patches) - 1; i >= 0; i-- {
		p := s.Patches[i]
		if out, err := g.Run(ctx, "apply", "--index", "-R", p.Path); err != nil {
			return &ApplyError{Patch: p.Path, Reverse: true, Details: withHunks(p.Path, errorLines(out, err))}
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
