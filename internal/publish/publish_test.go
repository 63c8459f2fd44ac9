package publish

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPublish(t *testing.T) {
	o := Outputs{Files: map[string][]byte{"report.md": []byte("# r"), "report.txt": []byte("table")}, Text: "TEXT\n", Table: "table", JUnit: []byte("<testsuite/>"), Summary: "summary"}
	for _, ci := range []bool{false, true} {
		dir := t.TempDir()
		summary := filepath.Join(dir, "summary.md")
		t.Setenv(StepSummaryVar, summary)
		var out bytes.Buffer
		opt := Options{ReportDir: filepath.Join(dir, "report"), TablePath: filepath.Join(dir, "table.txt"), JUnitPath: filepath.Join(dir, "junit.xml"), Out: &out, CI: ci}
		paths, err := Publish(o, opt)
		if err != nil {
			t.Fatal(err)
		}
		if len(paths) != 2 || !strings.HasSuffix(paths[0], "report.md") {
			t.Errorf("paths %v", paths)
		}
		if table, _ := os.ReadFile(opt.TablePath); string(table) != "table" {
			t.Errorf("table.txt %q", table)
		}
		if !strings.HasPrefix(out.String(), "TEXT\nreports: ") {
			t.Errorf("terminal %q: the text, then the paths", out.String())
		}
		_, jerr := os.Stat(opt.JUnitPath)
		sum, _ := os.ReadFile(summary)
		if ci != (jerr == nil) || ci != (string(sum) == "summary\n") {
			t.Errorf("ci=%v: junit written %v, summary %q: CI outputs are for a run, merge or bisect alone", ci, jerr == nil, sum)
		}
	}
}

func TestStepSummaryCut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "summary.md")
	t.Setenv(StepSummaryVar, path)
	if err := StepSummary(strings.Repeat("x", stepSummaryLimit+10)); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if len(data) >= stepSummaryLimit || !strings.Contains(string(data), "cut to GitHub's 1 MiB") {
		t.Errorf("summary of %d bytes: want it cut under GitHub's limit, saying so", len(data))
	}
}
