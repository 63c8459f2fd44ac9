package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"lab/internal/history"
	"lab/internal/lines"
)

// examples is the committed examples' folder: the history the tests serve
// is made of its runs, as lab history import makes it.
const examples = "../../results/examples"

const token = "0123456789abcdef-test-token"

// exampleHistory imports every committed example run into the history at
// where ("" for a new SQLite file).
func exampleHistory(t testing.TB, where string) *history.Store {
	t.Helper()
	if where == "" {
		where = filepath.Join(t.TempDir(), "history.db")
	}
	dirs, _ := filepath.Glob(filepath.Join(examples, "*", "*", "results.json"))
	for i := range dirs {
		dirs[i] = filepath.Dir(dirs[i])
	}
	saved, err := history.ReadSaved(dirs)
	if err != nil {
		t.Fatal(err)
	}
	s, err := history.Open(context.Background(), where)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Import(context.Background(), saved); err != nil {
		t.Fatal(err)
	}
	return s
}

// start serves the store and the examples' folder.
func start(t testing.TB, s *history.Store, tok string) *httptest.Server {
	t.Helper()
	srv, err := New(Options{Store: s, Results: examples, Token: tok, MinPct: -1, Generator: "lab test"})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(func() { ts.Close(); srv.Close() })
	return ts
}

func get(t testing.TB, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// firstSlower is the line and level of the history's first change point
// where a figure went down.
func firstSlower(t testing.TB, s *history.Store) (*lines.Line, lines.Change) {
	t.Helper()
	h, err := lines.Load(context.Background(), s, lines.Options{MinPct: -1})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range h.Changes() {
		if f.Change.Slower {
			return f.Line, f.Change
		}
	}
	t.Fatal("the examples' history has no regression")
	return nil, lines.Change{}
}

// From the index to a change point's line, its culprit's bisect, the boots
// after it and one's console log.
func TestPages(t *testing.T) {
	s := exampleHistory(t, "")
	ts := start(t, s, "")
	code, index := get(t, ts.URL+"/")
	if code != 200 || !strings.Contains(index, "Change points") || !strings.Contains(index, "track-stream") {
		t.Fatalf("index: %d\n%.500s", code, index)
	}
	l, c := firstSlower(t, s)
	id := LineID(l.Key)
	if !strings.Contains(index, `href="/lines/`+id+`"`) {
		t.Errorf("the index does not link the line of %s", l.Key)
	}
	code, line := get(t, ts.URL+"/lines/"+id)
	if code != 200 || !strings.Contains(line, "<svg") || !strings.Contains(line, "Levels") {
		t.Fatalf("line: %d\n%.500s", code, line)
	}
	if strings.Contains(line, `<form class="annotate"`) {
		t.Error("a read-only server offers the annotation form")
	}
	culprit := regexp.MustCompile(`class="culprit" href="([^"]+)"`).FindStringSubmatch(line)
	if culprit == nil {
		t.Fatalf("no bisect linked from the line of %s", l.Key)
	}
	if code, page := get(t, ts.URL+culprit[1]); code != 200 || !strings.Contains(page, "bisect") {
		t.Errorf("culprit's bisect %s: %d\n%.300s", culprit[1], code, page)
	}
	// A culprit whose bisect profiled it shows where it moved the path.
	i := slices.IndexFunc(l.Changes, func(c lines.Change) bool { return c.Culprit != nil && c.Culprit.BisectRun != "" })
	if i < 0 {
		t.Fatalf("no change point of %s has a bisected culprit", l.Key)
	}
	{
		profiled := *l.Changes[i].Culprit
		profiled.Where, profiled.Added = "where the culprit moved it (step 3 against step 2; exact):\n  lab_delay  0.00  11.40  +11.40  100%", time.Now()
		if err := s.AddCulprit(context.Background(), profiled); err != nil {
			t.Fatal(err)
		}
		// The server reads the new culprit in the background.
		var line string
		for range 200 {
			if _, line = get(t, ts.URL+"/lines/"+id); !strings.Contains(line, "being read") {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if !strings.Contains(line, `<pre class="where">where the culprit moved it (step 3 against step 2; exact):`) {
			t.Errorf("the change point's culprit has no where-block:\n%s", line)
		}
	}
	code, boots := get(t, fmt.Sprintf("%s/lines/%s/levels/%d", ts.URL, id, c.Index))
	if code != 200 {
		t.Fatalf("boots: %d\n%s", code, boots)
	}
	console := regexp.MustCompile(`class="console" href="([^"]+)"`).FindStringSubmatch(boots)
	if console == nil {
		t.Fatalf("no console log on the boots page:\n%s", boots)
	}
	resp, err := http.Get(ts.URL + console[1])
	if err != nil {
		t.Fatal(err)
	}
	log, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") || !strings.Contains(string(log), "lab-agent") {
		t.Errorf("console log %s: %d %s\n%.300s", console[1], resp.StatusCode, resp.Header.Get("Content-Type"), log)
	}
	for path, want := range map[string]string{"/runs/": `<table id="runs">`, "/watch": "watch queue",
		"/compare?run=watch-probes/v1&run=watch-probes/v2": "watch-probes/v2"} {
		if code, page := get(t, ts.URL+path); code != 200 || !strings.Contains(page, want) {
			t.Errorf("%s: %d, want %q\n%.300s", path, code, want, page)
		}
	}
}

// An annotation written through the page is in the history, and takes its
// change point out of the verdict.
func TestAnnotate(t *testing.T) {
	s := exampleHistory(t, "")
	ts := start(t, s, token)
	l, c := firstSlower(t, s)
	id := LineID(l.Key)
	if _, page := get(t, ts.URL+"/lines/"+id); !strings.Contains(page, `<form class="annotate"`) {
		t.Fatal("no annotation form with a token")
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	form := url.Values{"label": {history.LabelFalsePositive}, "note": {"the planted step"}, "author": {"Ann"}, "token": {token}}
	resp, err := client.PostForm(fmt.Sprintf("%s/lines/%s/changes/%d/annotations", ts.URL, id, c.Index), form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("annotate: %d", resp.StatusCode)
	}
	notes, err := s.Annotations(context.Background(), l.Key.Lab)
	if err != nil || len(notes) != 1 || notes[0].Commit != l.Levels[c.Index].Ref() || notes[0].Author != "Ann" {
		t.Fatalf("annotations %+v %v", notes, err)
	}
	if _, page := get(t, ts.URL+"/lines/"+id); !strings.Contains(page, "the planted step") {
		t.Error("the line page does not show the annotation")
	}
	h, err := lines.Load(context.Background(), s, lines.Options{Lab: l.Key.Lab, MinPct: -1})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range h.Changes() {
		if f.Line.Key == l.Key && f.Change.Index == c.Index && !f.Change.Dismissed() {
			t.Error("the change point marked a false positive still counts")
		}
	}
}

// Bad requests get a clear 4xx each, and the server keeps serving.
func TestBadRequests(t *testing.T) {
	s := exampleHistory(t, "")
	ts := start(t, s, token)
	l, c := firstSlower(t, s)
	id := LineID(l.Key)
	annotate := fmt.Sprintf("/lines/%s/changes/%d/annotations", id, c.Index)
	for _, tc := range []struct {
		name, method, target, body string
		code                       int
		want                       string
	}{
		// net/http cleans a path of dots by a redirect to the clean one,
		// inside the server.
		{"dot-dot in a run path", "GET", "/runs/uprobe-srcu/../../../../etc/passwd", "", 307, `href="/etc/passwd"`},
		{"encoded dot-dot", "GET", "/runs/uprobe-srcu/%2e%2e/%2e%2e/%2e%2e/etc/passwd", "", 400, "not a path inside"},
		{"absolute path", "GET", "/runs//etc/passwd", "", 307, `href="/runs/etc/passwd"`},
		{"absolute path, cleaned", "GET", "/runs/etc/passwd", "", 404, "nothing at"},
		{"the cleaned dot-dot", "GET", "/etc/passwd", "", 404, ""},
		{"hidden file", "GET", "/runs/.git/config", "", 400, "hidden"},
		{"unknown run", "GET", "/runs/nolab/norun/", "", 404, "nothing at"},
		{"folder that is no run", "GET", "/runs/uprobe-srcu/", "", 404, "no run folder"},
		{"unknown line", "GET", "/lines/0123456789abcdef", "", 404, "no line"},
		{"level out of range", "GET", "/lines/" + id + "/levels/99999", "", 404, "no level"},
		{"level not a number", "GET", "/lines/" + id + "/levels/x", "", 404, "no level"},
		{"huge query string", "GET", "/?q=" + strings.Repeat("a", MaxURL), "", 414, "at most"},
		{"compare one run", "GET", "/compare?run=uprobe-srcu/x86_64-1cpu-icount", "", 400, "2 to 8 runs"},
		{"compare a folder that is no run", "GET", "/compare?run=uprobe-srcu/x86_64-1cpu-icount&run=uprobe-srcu", "", 404, "no run folder"},
		{"annotate without token", "POST", annotate, "label=expected&author=a", 403, "token"},
		{"annotate with a wrong token", "POST", annotate, "label=expected&author=a&token=nope", 403, "token"},
		{"annotate with a bad label", "POST", annotate, "label=bogus&author=a&token=" + token, 400, "want one of"},
		{"annotate without author", "POST", annotate, "label=expected&token=" + token, 400, "author"},
		{"annotate a level that is no change point", "POST", "/lines/" + id + "/changes/0/annotations", "label=expected&author=a&token=" + token, 404, "no change point"},
		{"annotate with a huge body", "POST", annotate, "note=" + strings.Repeat("x", 1<<20), 400, "the form"},
		{"a method not served", "DELETE", "/", "", 405, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := raw(t, ts, tc.method, tc.target, tc.body)
			if code != tc.code || !strings.Contains(body, tc.want) {
				t.Errorf("%s %s: %d %q, want %d with %q", tc.method, clip(tc.target), code, clip(body), tc.code, tc.want)
			}
		})
	}
	if code, _ := get(t, ts.URL+"/"); code != 200 {
		t.Errorf("after the bad requests: %d", code)
	}
}

// raw sends a request as written, unlike net/http's client, which cleans
// the path first.
func raw(t *testing.T, ts *httptest.Server, method, target, body string) (int, string) {
	t.Helper()
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n", method, target)
	if body != "" {
		fmt.Fprintf(conn, "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\n", len(body))
	}
	fmt.Fprintf(conn, "\r\n%s", body)
	resp, err := http.ReadResponse(bufioReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

// A symbolic link in the results folder that points out of it is not
// followed.
func TestNoEscapeThroughALink(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "lab"), 0o755)
	if err := os.Symlink("/etc", filepath.Join(dir, "lab", "etc")); err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Store: exampleHistory(t, ""), Results: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ts := httptest.NewServer(srv)
	defer ts.Close()
	if code, body := get(t, ts.URL+"/runs/lab/etc/passwd"); code != 404 || strings.Contains(body, "root:") {
		t.Errorf("through the link: %d\n%.200s", code, body)
	}
}

// Annotations sent at once are all kept, and every one is answered.
func TestConcurrentAnnotations(t *testing.T) {
	s := exampleHistory(t, "")
	ts := start(t, s, token)
	l, c := firstSlower(t, s)
	target := fmt.Sprintf("%s/lines/%s/changes/%d/annotations", ts.URL, LineID(l.Key), c.Index)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	const n = 16
	var wg sync.WaitGroup
	codes := make([]int, n)
	for i := range n {
		wg.Go(func() {
			resp, err := client.PostForm(target, url.Values{"label": {history.LabelNote}, "note": {fmt.Sprint("note ", i)}, "author": {"Bo"}, "token": {token}})
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			codes[i] = resp.StatusCode
		})
	}
	wg.Wait()
	for i, code := range codes {
		if code != http.StatusSeeOther {
			t.Errorf("annotation %d: %d", i, code)
		}
	}
	if notes, err := s.Annotations(context.Background(), ""); err != nil || len(notes) != n {
		t.Errorf("%d annotations kept (%v), want %d", len(notes), err, n)
	}
}

func bufioReader(r io.Reader) *bufio.Reader { return bufio.NewReader(r) }

// Boots added while the server runs (a track writing the history) are read
// in the background: the page before says so, without waiting; a later one
// has them.
func TestNewBootsReadInTheBackground(t *testing.T) {
	s := exampleHistory(t, "")
	ts := start(t, s, "")
	figures := func(page string) string {
		return regexp.MustCompile(`(\d+) figures`).FindString(page)
	}
	_, page := get(t, ts.URL+"/")
	if strings.Contains(page, "being read") {
		t.Fatal("a fresh analysis is marked stale")
	}
	before := figures(page)
	saved, err := history.ReadSaved([]string{filepath.Join(examples, "watch-probes", "v1")})
	if err != nil {
		t.Fatal(err)
	}
	saved[0].Run.RunID = "a-later-run"
	for i := range saved[0].Run.Boots {
		saved[0].Run.Boots[i].Digest = ""
	}
	if err := s.Import(context.Background(), saved); err != nil {
		t.Fatal(err)
	}
	if code, page := get(t, ts.URL+"/"); code != 200 || !strings.Contains(page, "being read") {
		t.Errorf("the page after new boots: %d, not marked stale", code)
	}
	for range 200 {
		_, page := get(t, ts.URL+"/")
		if !strings.Contains(page, "being read") {
			if after := figures(page); after == before {
				t.Errorf("the new analysis has %s, as before the new boots", after)
			}
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Error("the new boots were never read")
}

// The dashboard lists the lines with a change point first, folds the
// others by group, narrows them by each filter, and tells a page whether
// the history changed since it was drawn.
func TestDashboard(t *testing.T) {
	s := exampleHistory(t, "")
	ts := start(t, s, token)
	_, all := get(t, ts.URL+"/")
	for _, want := range []string{`<form id="filters"`, `<select name="lab">`, `<select name="method">`, "<details class=\"group\">",
		`<svg class="spark"`, `fetch("/generation")`} {
		if !strings.Contains(all, want) {
			t.Errorf("the dashboard lacks %q", want)
		}
	}
	if c, d := strings.Index(all, `id="changes"`), strings.Index(all, "Lines without a change point"); c < 0 || d < c {
		t.Errorf("the change points do not come first (%d, %d)", c, d)
	}
	l, _ := firstSlower(t, s)
	for _, tc := range []struct {
		query string
		line  bool // the regression's line is listed
	}{
		{"?lab=" + url.QueryEscape(l.Key.Lab), true},
		{"?benchmark=" + url.QueryEscape(l.Key.Benchmark) + "&arch=" + l.Key.Arch, true},
		{"?lab=" + url.QueryEscape(l.Key.Lab) + "&benchmark=no-such", false},
	} {
		code, page := get(t, ts.URL+"/"+tc.query)
		if code != 200 {
			t.Fatalf("%s: %d", tc.query, code)
		}
		if got := strings.Contains(page, `href="/lines/`+LineID(l.Key)+`"`); got != tc.line {
			t.Errorf("%s: the regression's line listed %v, want %v", tc.query, got, tc.line)
		}
		if !tc.line && !strings.Contains(page, "0 lines of ") {
			t.Errorf("%s: no line matches, and the page does not say so", tc.query)
		}
	}
	var g struct {
		Generation string `json:"generation"`
		Stale      bool   `json:"stale"`
	}
	_, body := get(t, ts.URL+"/generation")
	if err := json.Unmarshal([]byte(body), &g); err != nil || g.Generation == "" || g.Stale || !strings.Contains(all, strconv.Quote(g.Generation)) {
		t.Errorf("/generation %q (%v): the page was drawn at another", body, err)
	}
}
