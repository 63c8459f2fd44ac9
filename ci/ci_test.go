// Package ci holds lab's templates for CI systems; its test validates them
// offline.
package ci

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rhysd/actionlint"
	"gopkg.in/yaml.v3"
)

// Every GitHub Actions workflow passes actionlint (its Go module, offline:
// shellcheck and pyflakes are not run).
func TestGitHubWorkflows(t *testing.T) {
	files, _ := filepath.Glob("github/*.yml")
	if len(files) == 0 {
		t.Fatal("no workflows under ci/github")
	}
	for _, f := range files {
		var out bytes.Buffer
		l, err := actionlint.NewLinter(&out, &actionlint.LinterOptions{Shellcheck: "", Pyflakes: ""})
		if err != nil {
			t.Fatal(err)
		}
		errs, err := l.LintFile(f, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range errs {
			t.Errorf("%s: %s", f, e.Error())
		}
	}
}

// gitlabJob is what lab's GitLab templates must have; unknown keys fail
// the decoding, so a misspelt key does not pass unnoticed.
type gitlabJob struct {
	Image     string            `yaml:"image"`
	Stage     string            `yaml:"stage"`
	Timeout   string            `yaml:"timeout"`
	Variables map[string]string `yaml:"variables"`
	Cache     struct {
		Key   string   `yaml:"key"`
		Paths []string `yaml:"paths"`
	} `yaml:"cache"`
	Rules []struct {
		If      string   `yaml:"if"`
		Changes []string `yaml:"changes"`
	} `yaml:"rules"`
	Script    []string `yaml:"script"`
	Artifacts struct {
		When    string            `yaml:"when"`
		Paths   []string          `yaml:"paths"`
		Reports map[string]string `yaml:"reports"`
	} `yaml:"artifacts"`
}

func TestGitLabJobs(t *testing.T) {
	files, _ := filepath.Glob("gitlab/*.yml")
	if len(files) == 0 {
		t.Fatal("no jobs under ci/gitlab")
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		var jobs map[string]gitlabJob
		if err := dec.Decode(&jobs); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for name, j := range jobs {
			if j.Image == "" || len(j.Script) == 0 || !strings.Contains(strings.Join(j.Script, "\n"), "./lab ") {
				t.Errorf("%s: job %s runs no lab command: %+v", f, name, j)
			}
		}
	}
}
