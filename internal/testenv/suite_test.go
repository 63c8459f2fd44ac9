package testenv

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// scripts/test runs the end-to-end phase on the packages it names, not on
// ./... (which relinked every test binary of the fast suite for nothing):
// every package with a test that runs only under LAB_E2E=1 must be named
// there, or its end-to-end tests would silently never run.
func TestSuiteNamesEveryEndToEndPackage(t *testing.T) {
	script, err := os.ReadFile("../../scripts/test")
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`(?m)^e2e_packages=".*"$`).Find(script)
	if line == nil || !regexp.MustCompile(`(?m)^LAB_E2E=1 go test .*\$e2e_packages`).Match(script) {
		t.Fatal(`scripts/test has no line e2e_packages="..." or no line LAB_E2E=1 go test ... $e2e_packages`)
	}
	named := strings.Fields(strings.Trim(strings.TrimPrefix(string(line), "e2e_packages="), `"`))
	gate := regexp.MustCompile(`testenv\.(E2E|Enabled)\(`)
	var missing []string
	err = filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil || !gate.Match(src) {
			return err
		}
		pkg := "./" + filepath.ToSlash(filepath.Dir(strings.TrimPrefix(path, "../../")))
		if !slices.Contains(named, pkg) && !slices.Contains(missing, pkg) {
			missing = append(missing, pkg)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) > 0 {
		t.Errorf("scripts/test's end-to-end line does not name %s, whose tests run only under %s=1:\n%s", strings.Join(missing, " "), Var, line)
	}
}
