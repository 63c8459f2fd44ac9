package report

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

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

// Write saves every output in dir and returns the paths, sorted.
func Write(dir string, files map[string][]byte) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
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
