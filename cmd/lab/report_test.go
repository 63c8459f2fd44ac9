package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"lab/internal/results"
	"lab/internal/testenv"
)

// TestReportOnExamples regenerates every report of the committed example
// runs from their results.json, checks that benchstat reads the benchmark
// files, and opens the HTML page in headless Chromium: the browser must lay
// out every chart. Screenshots are kept in $TMPDIR/lab-report-screenshots.
func TestReportOnExamples(t *testing.T) {
	runs, _ := filepath.Glob("../../results/examples/*/*/results.json")
	if len(runs) == 0 {
		t.Fatal("no committed example results")
	}
	// Chromium is a test dependency (./scripts/install-deps --test installs
	// it). It renders the pages in the end-to-end suite (LAB_E2E=1, as
	// ./scripts/test sets), where it is required; the fast suite checks
	// the files without it.
	browser := ""
	if testenv.Enabled() {
		var err error
		if browser, err = exec.LookPath("chromium"); err != nil {
			t.Fatal("chromium not found: run ./scripts/install-deps --test (Debian package chromium)")
		}
	}
	// benchstat built once: `go tool benchstat` would start the go command
	// for every example.
	benchstat := filepath.Join(t.TempDir(), "benchstat")
	if out, err := exec.Command("go", "build", "-o", benchstat, "golang.org/x/perf/cmd/benchstat").CombinedOutput(); err != nil {
		t.Fatalf("build benchstat: %v\n%s", err, out)
	}
	shots := filepath.Join(os.TempDir(), "lab-report-screenshots")
	os.MkdirAll(shots, 0o755)
	// Chromium lays out one page of each kind (two launches, ~7 s an
	// example here): the pages of a kind come from the same writer and
	// differ in data only, which the files' checks cover for every one.
	laidOut := map[string]string{}
	for _, rj := range runs {
		dir := filepath.Dir(rj)
		name := filepath.Base(filepath.Dir(dir)) + "-" + filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			out := t.TempDir()
			var stdout, stderr strings.Builder
			if code := runMain(context.Background(), []string{"report", dir, "-out", out}, &stdout, &stderr); code != 0 {
				t.Fatalf("lab report: exit %d: %s", code, stderr.String())
			}
			if r, err := results.Load(rj); err != nil {
				t.Fatal(err)
			} else if r.Bisect != nil {
				// A bisect's reports: no baseline/patched files for benchstat.
				for _, f := range []string{"report.txt", "report.md", "report-80.txt", "report.json", "report.html", "junit.xml"} {
					if fi, err := os.Stat(filepath.Join(out, f)); err != nil || fi.Size() == 0 {
						t.Errorf("%s: %v", f, err)
					}
				}
				return
			}
			// One Go benchmark file a kernel: baseline and patched, or the
			// baseline and each series of a run of several.
			kernels := []string{"patched"}
			if r, _ := results.Load(rj); r != nil && len(r.Series) > 0 {
				kernels = nil
				for _, s := range r.Series {
					kernels = append(kernels, string(s.Variant))
				}
			}
			for _, f := range []string{"report.txt", "report.md", "report-80.txt", "report.csv", "report.json", "report.html", "baseline.txt"} {
				if fi, err := os.Stat(filepath.Join(out, f)); err != nil || fi.Size() == 0 {
					t.Errorf("%s: %v", f, err)
				}
			}
			for _, k := range kernels {
				bs := exec.Command(benchstat, filepath.Join(out, "baseline.txt"), filepath.Join(out, k+".txt"))
				got, err := bs.CombinedOutput()
				if err != nil || !strings.Contains(string(got), "vs base") {
					t.Errorf("benchstat baseline against %s: %v\n%s", k, err, got)
				}
			}
			if browser == "" {
				t.Skip("the page was written, not opened in Chromium: set LAB_E2E=1 (./scripts/test does; ./scripts/install-deps --test installs Chromium)")
			}
			kind := pageKind(rj)
			if other, ok := laidOut[kind]; ok {
				t.Skipf("a page of its kind (%s) was laid out in Chromium: %s", kind, other)
			}
			laidOut[kind] = name
			html := filepath.Join(out, "report.html")
			page, _ := os.ReadFile(html)
			want := strings.Count(string(page), `<figure class="chart">`)
			if want == 0 {
				t.Fatal("the page has no charts")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			flags := []string{"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1400,2400"}
			dom, err := exec.CommandContext(ctx, browser, append(flags, "--virtual-time-budget=5000", "--dump-dom", "file://"+html)...).Output()
			if err != nil {
				t.Fatalf("chromium --dump-dom: %v", err)
			}
			m := regexp.MustCompile(`data-charts-rendered="(\d+)"`).FindSubmatch(dom)
			if m == nil || string(m[1]) != strconv.Itoa(want) {
				t.Errorf("chromium laid out %s of %d charts", m, want)
			}
			shot := filepath.Join(shots, name+".png")
			if err := exec.CommandContext(ctx, browser, append(flags, "--screenshot="+shot, "file://"+html)...).Run(); err != nil {
				t.Fatalf("chromium --screenshot: %v", err)
			}
			fi, err := os.Stat(shot)
			if err != nil || fi.Size() < 10000 {
				t.Fatalf("screenshot %s: %v", shot, err)
			}
			t.Logf("screenshot: %s (%d bytes, %d charts)", shot, fi.Size(), want)
		})
	}
}

// pageKind is what shapes a run's HTML page: a bisect or track, several
// series, guest tools' rows, the clock.
func pageKind(resultsJSON string) string {
	r, err := results.Load(resultsJSON)
	if err != nil {
		return resultsJSON
	}
	kind := "run"
	switch {
	case r.Bisect != nil:
		kind = "bisect " + r.Bisect.Outcome
	case len(r.Series) > 1:
		kind = "several"
	}
	clocks := map[string]bool{}
	tools := false
	for _, b := range r.Boots {
		clocks[string(b.Clock)] = true
		for _, res := range b.Results {
			tools = tools || res.Tool != ""
		}
	}
	return fmt.Sprintf("%s, tools %v, clocks %v", kind, tools, slices.Sorted(maps.Keys(clocks)))
}
