// Package publish hands a finished run, merge, bisect, report or compare to
// people and to CI, the same way for every command: the report files, the
// table on the terminal, the JUnit file and the GitHub job summary. Each
// command renders its outputs once (report.Outputs, bisectreport.Outputs) and
// publishes them here; the gates' exit codes are judged by the caller from
// the same document.
package publish

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Outputs are what a command hands over, rendered once.
type Outputs struct {
	Files   map[string][]byte // the report folder's files, by name
	Text    string            // what the terminal shows
	Table   string            // the terminal's table without colour, kept in the run folder ("" for none)
	JUnit   []byte            // JUnit XML, written when --junit names a file
	Summary string            // Markdown appended to $GITHUB_STEP_SUMMARY in a GitHub Actions job
}

// Options say where the outputs go.
type Options struct {
	ReportDir string    // the report folder
	TablePath string    // where Table goes ("" for nowhere)
	JUnitPath string    // --junit ("" for none)
	Out       io.Writer // the terminal
	// CI writes the JUnit file and the job summary: a run, merge or bisect
	// does; regenerating reports (lab report, compare) does not append to a
	// job's summary again.
	CI bool
}

// Publish writes the files, prints the text and the report paths and, for
// CI, the JUnit file and the job summary. It returns the report paths.
func Publish(o Outputs, opt Options) ([]string, error) {
	paths, err := WriteFiles(opt.ReportDir, o.Files)
	if err != nil {
		return nil, err
	}
	if opt.TablePath != "" && o.Table != "" {
		if err := os.WriteFile(opt.TablePath, []byte(o.Table), 0o644); err != nil {
			return nil, fmt.Errorf("write the table: %w", err)
		}
	}
	if opt.Out != nil {
		fmt.Fprint(opt.Out, o.Text)
		fmt.Fprintf(opt.Out, "reports: %s\n", strings.Join(paths, " "))
	}
	if !opt.CI {
		return paths, nil
	}
	if opt.JUnitPath != "" && o.JUnit != nil {
		if err := os.WriteFile(opt.JUnitPath, o.JUnit, 0o644); err != nil {
			return nil, fmt.Errorf("--junit: %w", err)
		}
	}
	return paths, StepSummary(o.Summary)
}

// WriteFiles saves every file in dir and returns the paths, sorted.
func WriteFiles(dir string, files map[string][]byte) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("report folder: %w", err)
	}
	var paths []string
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return nil, fmt.Errorf("write report: %w", err)
		}
		paths = append(paths, p)
	}
	sort.Strings(paths)
	return paths, nil
}

// StepSummaryVar names the file GitHub Actions shows as a job's summary.
const StepSummaryVar = "GITHUB_STEP_SUMMARY"

// stepSummaryLimit is GitHub's limit on a step summary.
const stepSummaryLimit = 1 << 20

// StepSummary appends md to the job summary when running in GitHub Actions
// (and does nothing elsewhere), cut to stay under GitHub's 1 MiB.
func StepSummary(md string) error {
	path := os.Getenv(StepSummaryVar)
	if path == "" || md == "" {
		return nil
	}
	if len(md) > stepSummaryLimit-1024 {
		md = md[:stepSummaryLimit-1024] + "\n\n(cut to GitHub's 1 MiB step summary limit: see the report artifact)\n"
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("$%s: %w", StepSummaryVar, err)
	}
	if _, err := f.WriteString(md + "\n"); err != nil {
		f.Close()
		return fmt.Errorf("$%s: %w", StepSummaryVar, err)
	}
	return f.Close()
}
