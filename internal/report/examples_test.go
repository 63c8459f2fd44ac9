package report

import (
	"path/filepath"
	"strings"
	"testing"

	"lab/internal/results"
)

// Every committed example, whatever schema it was written in, renders into
// every report file; its table names the matrix's arch and the claims it
// records are judged.
func TestExamplesRender(t *testing.T) {
	paths, _ := filepath.Glob("../../results/examples/*/*/results.json")
	if len(paths) < 10 {
		t.Fatalf("found %d committed examples: want them all", len(paths))
	}
	for _, p := range paths {
		dir := filepath.Dir(p)
		t.Run(filepath.Base(filepath.Dir(dir))+"/"+filepath.Base(dir), func(t *testing.T) {
			r, err := results.Load(p)
			if err != nil {
				t.Fatal(err)
			}
			d := Build(r, dir, "test")
			files, err := Files(d, r)
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"report.txt", "report.md", "report-80.txt", "report.csv", "report.json", "report.html"} {
				if len(files[name]) == 0 {
					t.Errorf("%s is empty", name)
				}
			}
			if md := string(files["report.md"]); !strings.Contains(md, r.Matrix.Arch[0]) {
				t.Errorf("report.md does not name the matrix's arch %s", r.Matrix.Arch[0])
			}
			if len(d.Claims) != len(r.Claims) {
				t.Errorf("%d claims judged of %d recorded", len(d.Claims), len(r.Claims))
			}
		})
	}
}
