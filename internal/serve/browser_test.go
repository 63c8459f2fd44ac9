package serve

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"lab/internal/history"
	"lab/internal/historyreport"
	"lab/internal/lines"
	"lab/internal/testenv"
)

// Debian's Chromium, headless, follows a regression from the dashboard to
// its culprit's bisect and to a boot's console log, annotates it through
// the page's form, and compares two runs picked in the list: on an SQLite
// history and on a PostgreSQL server started for the test.
func TestBrowser(t *testing.T) {
	testenv.E2E(t, "drives Debian's headless Chromium through lab serve's pages")
	browser, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium not found: run ./scripts/install-deps --test (Debian package chromium)")
	}
	pg := testenv.StartPostgres(t)
	for _, db := range []struct {
		name  string
		where func(t *testing.T) string
	}{
		{"sqlite", func(t *testing.T) string { return "" }},
		{"postgres", pg.NewDB},
	} {
		t.Run(db.name, func(t *testing.T) {
			s := exampleHistory(t, db.where(t))
			ts := start(t, s, token)
			bctx := chromium(t, browser)
			browse(t, bctx, ts.URL, db.name)
			annotateInBrowser(t, bctx, s)
			compareInBrowser(t, bctx, ts.URL)
		})
	}
}

// browse goes from the dashboard to the first regression's line, its
// culprit's bisect, the boots after it and one's console log.
func browse(t *testing.T, ctx context.Context, base, name string) {
	step := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := chromedp.Do(sctx, steps...); err != nil {
			loc, _ := chromedp.Run(ctx, chromedp.Location())
			t.Fatalf("%s: %v (at %s)", what, err, loc)
		}
	}
	value := func(what string, a chromedp.Action[string]) string {
		t.Helper()
		v, err := chromedp.Run(ctx, a)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return v
	}
	step("the dashboard", chromedp.Navigate(base+"/"), chromedp.WaitVisible("#changes"))
	shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	dir := filepath.Join(os.TempDir(), "lab-serve-screenshots")
	os.MkdirAll(dir, 0o755)
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, shot, 0o644); err != nil || len(shot) < 10000 {
		t.Errorf("screenshot %s: %d bytes, %v", path, len(shot), err)
	}
	t.Logf("screenshot of the dashboard: %s", path)
	step("a regression's line", follow(click("#changes tr.slower a"), "figure.chart svg"))
	charts, err := chromedp.Run(ctx, chromedp.AttributeValue("body", "data-charts-rendered"))
	if err != nil || charts.Value != "1" {
		t.Errorf("the line page laid out %q charts (%v), want 1", charts.Value, err)
	}
	step("its culprit", follow(click("a.culprit"), "h1"))
	if title := value("the bisect's title", chromedp.Title()); !strings.Contains(strings.ToLower(title), "bisect") {
		t.Errorf("the culprit's link led to %q, not its bisect", title)
	}
	step("the boots after it", follow(back(), "a.after"), follow(click("a.after"), "#boots"))
	boots := value("the boots' address", chromedp.Location())
	step("a console log", follow(click("a.console"), "body"))
	if console := value("the console log", chromedp.Text("body")); !strings.Contains(boots, "/levels/") || !strings.Contains(console, "lab-agent") {
		t.Errorf("boots %s, console log %.200q", boots, console)
	}
	step("back to the line", follow(back(), "#boots"), follow(back(), "form.annotate"))
}

// annotateInBrowser marks the line's first change point a false positive
// through the form, and finds the mark on the page and in what lab
// history detect prints.
func annotateInBrowser(t *testing.T, ctx context.Context, s *history.Store) {
	note := fmt.Sprintf("planted by the test at %d", time.Now().UnixNano())
	err := chromedp.Do(ctx,
		fill("form.annotate select[name=label]", history.LabelFalsePositive),
		fill("form.annotate input[name=note]", note),
		fill("form.annotate input[name=author]", "Ann Reviewer"),
		fill("form.annotate input[name=token]", token),
		follow(click("form.annotate button[type=submit]"), "ul.annotations"),
	)
	if err != nil {
		t.Fatalf("annotating: %v", err)
	}
	shown, err := chromedp.Run(ctx, chromedp.Text("ul.annotations"))
	if err != nil || !strings.Contains(shown, note) || !strings.Contains(shown, "Ann Reviewer") {
		t.Errorf("the page shows %q after annotating (%v)", shown, err)
	}
	h, err := historyreport.Load(context.Background(), s, lines.Options{MinPct: -1})
	if err != nil {
		t.Fatal(err)
	}
	detect := historyreport.Text(h.ChangeTables())
	if !strings.Contains(detect, "false positive: "+note+" (Ann Reviewer)") {
		t.Errorf("lab history detect does not show the annotation:\n%s", detect)
	}
}

// compareInBrowser ticks two runs in the list and compares them.
func compareInBrowser(t *testing.T, ctx context.Context, base string) {
	err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/runs/"),
		chromedp.WaitVisible("#runs"),
		click(`input[value="watch-probes/v1"]`),
		click(`input[value="watch-probes/v2"]`),
		follow(click(`form button[type=submit]`), "table"),
	)
	if err != nil {
		t.Fatalf("comparing two runs: %v", err)
	}
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	text, _ := chromedp.Run(ctx, chromedp.Text("body"))
	if !strings.Contains(loc, "/compare?") || !strings.Contains(text, "watch-probes/v1") || !strings.Contains(text, "watch-probes/v2") {
		t.Errorf("compare page %s:\n%.400s", loc, text)
	}
}

// click clicks the first element the selector finds on the page shown
// now, as a person would (the browser follows a link, submits a form).
func click(selector string) chromedp.Action[chromedp.Void] {
	return js(fmt.Sprintf("document.querySelector(%q).click()", selector))
}

// fill types a value into a form's field.
func fill(selector, value string) chromedp.Action[chromedp.Void] {
	return js(fmt.Sprintf("document.querySelector(%q).value = %q", selector, value))
}

func js(expr string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := chromedp.Evaluate[bool](expr+"; true")(ctx, t)
		return chromedp.Void{}, err
	}
}

// back goes back a page, as the browser's button does.
func back() chromedp.Action[chromedp.Void] { return js("history.back()") }

// follow does what leads to another page (a click, back), then waits for
// that page: its address changed, loaded, with an element the selector
// finds. chromedp's own queries kept to the page before.
func follow(do chromedp.Action[chromedp.Void], selector string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		before, err := chromedp.Evaluate[string]("location.href")(ctx, t)
		if err != nil {
			return chromedp.Void{}, err
		}
		if _, err := do(ctx, t); err != nil {
			return chromedp.Void{}, err
		}
		for {
			found, err := chromedp.Evaluate[bool](fmt.Sprintf("location.href != %q && document.readyState == 'complete' && document.querySelector(%q) !== null", before, selector))(ctx, t)
			if err == nil && found {
				return chromedp.Void{}, nil
			}
			select {
			case <-ctx.Done():
				return chromedp.Void{}, fmt.Errorf("waiting for %s: %w (last: %v)", selector, ctx.Err(), err)
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}
