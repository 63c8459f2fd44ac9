package report

import (
	"lab/internal/publish"
	"lab/internal/results"
)

// Files are the report's outputs by file name.
func Files(d *Document, r *results.Run) (map[string][]byte, error) {
	out := map[string][]byte{
		"report.txt":    []byte(Text(d, false)),
		"report.md":     []byte(Markdown(d)),
		"report-80.txt": []byte(Plain(d)),
		"report.csv":    []byte(CSV(d)),
	}
	j, err := JSON(d)
	if err != nil {
		return nil, err
	}
	out["report.json"] = j
	h, err := HTML(d)
	if err != nil {
		return nil, err
	}
	out["report.html"] = []byte(h)
	if r != nil {
		for name, text := range BenchFiles(r) {
			out[name] = []byte(text)
		}
	}
	return out, nil
}

// Outputs renders the document once for every place it goes: the report
// files, the terminal (in colour when it is one), the run folder's table,
// JUnit and the job summary.
func Outputs(d *Document, r *results.Run, color bool) (publish.Outputs, error) {
	files, err := Files(d, r)
	if err != nil {
		return publish.Outputs{}, err
	}
	junit, err := JUnit(d).XML()
	if err != nil {
		return publish.Outputs{}, err
	}
	text := string(files["report.txt"])
	if color {
		text = Text(d, true)
	}
	return publish.Outputs{Files: files, Text: text, Table: string(files["report.txt"]), JUnit: junit, Summary: Lead(d)}, nil
}
