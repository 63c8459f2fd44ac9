// Package docs holds no code: its tests check the README and the pages in
// this folder, so that a link to a file or a heading that moved fails here
// and not in a reader's browser.
package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// MaxREADMELines is the README's own limit (issue #58): what a newcomer reads
// in the first hour; the rest is in docs/.
const MaxREADMELines = 250

// pages are README.md and every docs/*.md, as paths from this folder.
func pages(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) == 0 {
		t.Fatal("no docs/*.md found")
	}
	return append([]string{filepath.Join("..", "README.md")}, docs...)
}

var (
	fence    = regexp.MustCompile("^\\s*(```|~~~)")
	heading  = regexp.MustCompile(`^#{1,6}[ \t]+(.*?)[ \t#]*$`)
	codeSpan = regexp.MustCompile("`+[^`]*`+")
	// [text](target) and ![alt](target); the text may wrap over lines.
	link     = regexp.MustCompile(`!?\[([^\]]*)\]\(([^()\s]+)(?:\s+"[^"]*")?\)`)
	external = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// prose is a page without its fenced code blocks: links and headings there
// are text, not Markdown.
func prose(text string) []string {
	var out []string
	in := false
	for _, l := range strings.Split(text, "\n") {
		if fence.MatchString(l) {
			in = !in
			continue
		}
		if !in {
			out = append(out, l)
		}
	}
	return out
}

// Slug is GitHub's anchor for a heading: lower case, every character but
// letters, digits, spaces, hyphens and underscores dropped, spaces as hyphens.
func Slug(h string) string {
	h = link.ReplaceAllString(h, "$1") // a link in a heading shows its text
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors are the slugs of a page's headings, a repeated heading numbered as
// GitHub numbers it (-1, -2, ...).
func anchors(text string) map[string]bool {
	seen := map[string]int{}
	out := map[string]bool{}
	for _, l := range prose(text) {
		m := heading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		s := Slug(m[1])
		if n := seen[s]; n > 0 {
			out[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// links are the relative targets of a page's Markdown links.
func links(text string) []string {
	body := codeSpan.ReplaceAllStringFunc(strings.Join(prose(text), "\n"), func(s string) string {
		return strings.Repeat("x", len(strings.TrimSpace(s))) // `a](b)` in code is no link
	})
	var out []string
	for _, m := range link.FindAllStringSubmatch(body, -1) {
		if !external.MatchString(m[2]) {
			out = append(out, m[2])
		}
	}
	return out
}

// Every relative link names a file that exists and, with #anchor into a
// Markdown page, a heading of that page.
func TestLinks(t *testing.T) {
	cache := map[string]map[string]bool{}
	headings := func(path string) (map[string]bool, error) {
		if a, ok := cache[path]; ok {
			return a, nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		cache[path] = anchors(string(b))
		return cache[path], nil
	}
	checked := 0
	for _, page := range pages(t) {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.ToSlash(filepath.Clean(filepath.Join("docs", page)))
		for _, target := range links(string(b)) {
			checked++
			file, anchor, _ := strings.Cut(target, "#")
			path := page
			if file != "" {
				path = filepath.Join(filepath.Dir(page), filepath.FromSlash(file))
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s: link %s: no file %s", name, target, file)
					continue
				}
			}
			if anchor == "" || !strings.HasSuffix(path, ".md") {
				continue
			}
			a, err := headings(path)
			if err != nil {
				t.Errorf("%s: link %s: %v", name, target, err)
				continue
			}
			if !a[anchor] {
				t.Errorf("%s: link %s: %s has no heading #%s", name, target, filepath.Base(path), anchor)
			}
		}
	}
	if checked == 0 {
		t.Error("no links found: the parser is broken")
	}
}

func TestREADMELength(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	// wc -l: the newlines.
	if n := strings.Count(string(b), "\n"); n > MaxREADMELines {
		t.Errorf("README.md is %d lines, over its limit of %d: move the detail into docs/", n, MaxREADMELines)
	}
}

func TestSlug(t *testing.T) {
	for _, c := range []struct{ heading, slug string }{
		{"How many boots under icount", "how-many-boots-under-icount"},
		{"KVM, TCG and what the figures mean", "kvm-tcg-and-what-the-figures-mean"},
		{"Which patch did it: `lab bisect`", "which-patch-did-it-lab-bisect"},
		{"Measuring a branch: `lab track`", "measuring-a-branch-lab-track"},
		{"The guests' figures did not move", "the-guests-figures-did-not-move"},
		{"Where a boot goes now, and why 1.0 s at 2 vCPUs depends on the hour", "where-a-boot-goes-now-and-why-10-s-at-2-vcpus-depends-on-the-hour"},
		{"snake_case and [a link](x.md)", "snake_case-and-a-link"},
	} {
		if got := Slug(c.heading); got != c.slug {
			t.Errorf("Slug(%q) = %q, want %q", c.heading, got, c.slug)
		}
	}
}

func TestLinksParser(t *testing.T) {
	text := "See [a](a.md#x) and ![img](p.png),\n[wrapped\ntext](b.md) [web](https://x.org) [mail](mailto:a@b)\n" +
		"`[code](c.md)` and\n```\n[fenced](d.md)\n```\n[anchor](#here)\n"
	got := strings.Join(links(text), " ")
	if want := "a.md#x p.png b.md #here"; got != want {
		t.Errorf("links = %q, want %q", got, want)
	}
	a := anchors("# Top\n```\n# not a heading\n```\n## Top\n#0x31 is no heading\n")
	if !a["top"] || !a["top-1"] || a["not-a-heading"] || len(a) != 2 {
		t.Errorf("anchors = %v", a)
	}
}
