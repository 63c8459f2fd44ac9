package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Mail writes a mail of the given headers, in order, and body.
func Mail(headers [][2]string, body string) []byte {
	var b strings.Builder
	for _, h := range headers {
		fmt.Fprintf(&b, "%s: %s\n", h[0], h[1])
	}
	b.WriteString("\n" + body)
	return []byte(b.String())
}

// LazyPatch is patch n (1 or 2) of the lazy uprobe args buffer series as
// lab ships it (patches/uprobe-lazy-buffer), after git format-patch's
// headers: the commit message, the diffstat and the diff.
func LazyPatch(t testing.TB, root string, n int) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(root, "patches", "uprobe-lazy-buffer", "*.patch"))
	slices.Sort(files)
	if n < 1 || n > len(files) {
		t.Fatalf("no patch %d of uprobe-lazy-buffer in %s", n, root)
	}
	data, err := os.ReadFile(files[n-1])
	if err != nil {
		t.Fatal(err)
	}
	_, body, _ := strings.Cut(string(data), "\n\n")
	return body
}

// LazySeries is the lazy-buffer series as git send-email posts version v
// to a list: a cover letter (in reply to the previous version's, with b4's
// "Link to v1:", when prevCover is given; its Message-ID is
// lazy-vV@kernel.org) and each patch in reply to it.
func LazySeries(t testing.TB, root string, v int, prevCover string) [][]byte {
	cover := fmt.Sprintf("lazy-v%d@kernel.org", v)
	tag := "PATCH"
	if v > 1 {
		tag = fmt.Sprintf("PATCH v%d", v)
	}
	from := [2]string{"From", "Andrii Nakryiko <andrii@kernel.org>"}
	to := [2]string{"To", "test-list@example.org"}
	h := [][2]string{from, to, {"Subject", fmt.Sprintf("[%s 0/2] uprobes: two common case speed ups", tag)}, {"Message-ID", "<" + cover + ">"},
		{"Date", fmt.Sprintf("Mon, 1%d Mar 2024 11:17:27 -0700", v)}}
	body := "Two speed ups of the uprobe hit path.\n"
	if prevCover != "" {
		h = append(h, [2]string{"In-Reply-To", "<" + prevCover + ">"}, [2]string{"References", "<" + prevCover + ">"})
		body += fmt.Sprintf("\nChanges in v%d:\n- commit messages\n- Link to v%d: https://lore.kernel.org/r/%s\n", v, v-1, prevCover)
	}
	mails := [][]byte{Mail(h, body)}
	for n, subject := range []string{"uprobes: prepare uprobe args buffer lazily", "uprobes: prevent mutex_lock() under rcu_read_lock()"} {
		mails = append(mails, Mail([][2]string{from, to, {"Subject", fmt.Sprintf("[%s %d/2] %s", tag, n+1, subject)},
			{"Message-ID", fmt.Sprintf("<lazy-v%d-%d@kernel.org>", v, n+1)}, {"In-Reply-To", "<" + cover + ">"}, {"References", "<" + cover + ">"},
			{"Date", fmt.Sprintf("Mon, 1%d Mar 2024 11:17:2%d -0700", v, n+1)}}, LazyPatch(t, root, n+1)))
	}
	return mails
}

// UnrelatedPatch is a patch to a file no lab of lab's measures.
func UnrelatedPatch() []byte {
	return Mail([][2]string{{"From", "Mm Dev <mm@example.org>"}, {"To", "test-list@example.org"}, {"Subject", "[PATCH] mm: fix a comment"}, {"Message-ID", "<mm-1@example.org>"}},
		"A comment.\n---\n mm/memory.c | 2 +-\n 1 file changed, 1 insertion(+), 1 deletion(-)\n\ndiff --git a/mm/memory.c b/mm/memory.c\n--- a/mm/memory.c\n+++ b/mm/memory.c\n@@ -1,3 +1,3 @@\n a\n-b\n+c\n d\n")
}

// BrokenPatch is a patch mail numbered beyond its series' end ([PATCH 3/2]).
func BrokenPatch(t testing.TB, root string) []byte {
	return Mail([][2]string{{"From", "x@example.org"}, {"To", "test-list@example.org"}, {"Subject", "[PATCH 3/2] uprobes: one more"}, {"Message-ID", "<broken@example.org>"}},
		"x\n---\n"+LazyPatch(t, root, 2))
}
