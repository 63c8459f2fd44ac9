package report

import (
	"html"
	"reflect"
	"strings"
	"testing"

	"lab/internal/results"
)

// A series from a mailing list is named as the list named it, with what
// lab read it from; every report says so on top, with the mode lab chose
// and why, and what it did with the base-commit. A series folder run in
// its lab's mode reads as before.
func TestSeriesInTheReports(t *testing.T) {
	hash := strings.Repeat("ab", 32)
	twoPatches := []results.Patch{
		{Name: "0001-a.patch", Subject: "uprobes: a", SHA256: hash, Author: "A <a@example.org>", Number: 1, Total: 2,
			Trailers: []results.Trailer{{Key: "Acked-by", Value: "B <b@example.org>"}, {Key: "Link", Value: "https://lore.kernel.org/r/1"}}},
		{Name: "0002-b.patch", Subject: "uprobes: b", SHA256: hash, Author: "A <a@example.org>", Number: 2, Total: 2},
	}
	why := "revert: every patch applies in reverse (2 patches): the source already carries this series (forward, 0001-a.patch does not: patch failed: kernel/events/uprobes.c:1141)"
	base := "the series' base-commit 1b8f85defbc8: cannot be checked against the tarball linux-source-6.12.tar.xz (a tarball has no history); the series goes on the source as the tarball ships it"
	for _, tc := range []struct {
		name       string
		s          results.Series
		title      string
		provenance string
		header     []string
	}{
		{"a folder by name, as older records have it",
			results.Series{Name: "uprobe-srcu", Mode: "revert", Hash: hash},
			"uprobe-srcu", "uprobe-srcu (revert, sha256 abababababab)", nil},
		{"a folder by name, mode auto",
			results.Series{Name: "uprobe-srcu", Mode: "revert", Hash: hash, Kind: "folder", ModeAsked: "auto", ModeReason: why},
			"uprobe-srcu (0 patches, series folder)", "uprobe-srcu (0 patches, series folder; revert, sha256 abababababab)",
			[]string{"series: uprobe-srcu (0 patches, series folder)", "mode auto: " + why}},
		{"b4's mbox and .cover",
			results.Series{Name: "v2_20261202_a_uprobes", Mode: "revert", Hash: hash, Kind: "mbox", Version: 2, Patches: twoPatches,
				Cover:      &results.Cover{Subject: "uprobes: two common case speed ups", Version: 2, Total: 2, Origin: "/tmp/v2_20261202_a_uprobes.cover"},
				BaseCommit: "1b8f85defbc8aaaaaaaaaaaaaaaaaaaaaaaaaaaa", ModeAsked: "auto", ModeReason: why, Base: base},
			"[PATCH v2 0/2] uprobes: two common case speed ups (v2, 2 patches, b4 mbox, base-commit 1b8f85defbc8)",
			"[PATCH v2 0/2] uprobes: two common case speed ups (v2, 2 patches, b4 mbox, base-commit 1b8f85defbc8; revert, sha256 abababababab)",
			[]string{"series: [PATCH v2 0/2] uprobes: two common case speed ups (v2, 2 patches, b4 mbox, base-commit 1b8f85defbc8)", "mode auto: " + why, "base: " + base}},
		{"one RFC mail from standard input, mode apply",
			results.Series{Name: "x-y", Mode: "apply", Hash: hash, Kind: "mail", Input: "-", Version: 1, RFC: true, ModeAsked: "apply", ModeReason: "apply: the lab's mode",
				Patches: []results.Patch{{Name: "0001-x-y.patch", Subject: "x: y", SHA256: hash, Number: 1, Total: 1}}},
			"[RFC PATCH 1/1] x: y (1 patch, one mail from standard input)", "[RFC PATCH 1/1] x: y (1 patch, one mail from standard input; apply, sha256 abababababab)",
			[]string{"series: [RFC PATCH 1/1] x: y (1 patch, one mail from standard input)"}},
		{"a bare diff",
			results.Series{Name: "fix", Mode: "apply", Hash: hash, Kind: "diff", Version: 1, Patches: []results.Patch{{Name: "0001-fix.patch", Subject: "fix", SHA256: hash}}},
			"[PATCH] fix (1 patch, bare diff)", "[PATCH] fix (1 patch, bare diff; apply, sha256 abababababab)",
			[]string{"series: [PATCH] fix (1 patch, bare diff)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := SeriesTitle(tc.s); got != tc.title {
				t.Errorf("title\n got %q\nwant %q", got, tc.title)
			}
			if got := seriesProvenance(tc.s); got != tc.provenance {
				t.Errorf("provenance\n got %q\nwant %q", got, tc.provenance)
			}
			r := fakeRun()
			r.Series = []results.Series{tc.s}
			d := Build(r, "results/fake/20260101-000000", "test")
			if !reflect.DeepEqual(d.Header, tc.header) {
				t.Errorf("header\n got %q\nwant %q", d.Header, tc.header)
			}
			page, err := HTML(d)
			if err != nil {
				t.Fatal(err)
			}
			for name, text := range map[string]string{"terminal": Text(d, false), "mailing list": Plain(d), "markdown": Markdown(d), "html": page} {
				for _, h := range tc.header {
					switch name {
					case "mailing list":
						h = Wrap(h, 80, "  ")
					case "html":
						h = html.EscapeString(h)
					}
					if !strings.Contains(text, h) {
						t.Errorf("the %s report lacks %q:\n%s", name, h, text)
					}
				}
			}
			md := Markdown(d)
			if !strings.Contains(md, "- series: "+tc.provenance+"\n") {
				t.Errorf("provenance lacks the series line %q:\n%s", tc.provenance, md)
			}
			if tc.s.Patches != nil && tc.s.Patches[0].Author != "" &&
				!strings.Contains(md, "patch 0001-a.patch: uprobes: a (sha256 abababababab), by A <a@example.org>; Acked-by: B <b@example.org>; Link: https://lore.kernel.org/r/1\n") {
				t.Errorf("provenance lacks the patch's author and trailers:\n%s", md)
			}
		})
	}
}

// A run whose series came from the command line repeats from the lab it
// saved, not from a command line that read standard input.
func TestReproducerOfASavedLab(t *testing.T) {
	r := fakeRun()
	r.Command = []string{"lab", "run", "--series", "-", "--cache", "/c"}
	r.Repeat = []string{"lab", "run", "results/x/1/lab.yaml", "--cache", "/c"}
	if got, want := Reproducer(r), "git checkout abc1234 && go build -o lab ./cmd/lab && ./lab run results/x/1/lab.yaml --cache /c"; got != want {
		t.Errorf("reproducer %q, want %q", got, want)
	}
}
