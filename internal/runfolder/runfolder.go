// Package runfolder owns the layout of a run's folder — a lab run, a lab
// bisect or a merged run: where results.json, the reports, the terminal
// table, each boot's files and the logs go. Every command that makes,
// reads or publishes a run asks it for a path instead of joining names.
package runfolder

import (
	"fmt"
	"os"
	"path/filepath"

	"lab/internal/results"
)

// The names inside a run folder.
const (
	ResultsFile = "results.json" // the record: every sample, every failure, the provenance
	ReportDir   = "report"       // every report format, remade by lab report from ResultsFile alone
	TableFile   = "table.txt"    // the table the terminal showed, without colour
	BootsDir    = "boots"        // one folder a boot: console log, agent records
	// LabFile and SeriesDir are the lab a run was given without a file of
	// its own (lab run --series) and its series' patch files, beside it:
	// lab run RUN/lab.yaml repeats the run.
	LabFile   = "lab.yaml"
	SeriesDir = "series"
	// SeriesRef is lab.yaml's series: (a path from lab.yaml's folder).
	SeriesRef = "./" + SeriesDir
)

// Folder is one run's folder.
type Folder struct{ Dir string }

// Results is the path of results.json.
func (f Folder) Results() string { return filepath.Join(f.Dir, ResultsFile) }

// Report is the folder of the reports.
func (f Folder) Report() string { return filepath.Join(f.Dir, ReportDir) }

// Table is the path of the terminal table.
func (f Folder) Table() string { return filepath.Join(f.Dir, TableFile) }

// Lab is the path of the run's lab.yaml.
func (f Folder) Lab() string { return filepath.Join(f.Dir, LabFile) }

// Series is the folder of the series' patch files.
func (f Folder) Series() string { return filepath.Join(f.Dir, SeriesDir) }

// SeriesOf is the folder of the patch files of series v of a run of
// several (series-v2); SeriesRefOf is lab.yaml's path to it.
func (f Folder) SeriesOf(v string) string { return filepath.Join(f.Dir, SeriesRefOf(v)) }

// SeriesRefOf is lab.yaml's series: for version v of a run of several.
func SeriesRefOf(v string) string { return SeriesRef + "-" + v }

// Log is the path of a log the run writes beside its results
// ("build-x86_64-patched.log").
func (f Folder) Log(name string) string { return filepath.Join(f.Dir, name) }

// Boot is the folder of one boot, relative to the run folder (results.json
// records it so, and the folder can move): boots/NN-arch-shape-name.
func Boot(index int, archName, shape, name string) string {
	return filepath.Join(BootsDir, fmt.Sprintf("%02d-%s-%s-%s", index, archName, shape, name))
}

// Path turns a path results.json records relative to the run folder (a
// boot's console log) into one to open.
func (f Folder) Path(rel string) string { return filepath.Join(f.Dir, rel) }

// New makes a new run's folder under parent, named id, or id-2, id-3, ...
// when another run (of the same lab, started the same second) has it, so
// that two runs never share a folder.
func New(parent, id string) (Folder, string, error) {
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return Folder{}, "", fmt.Errorf("results folder: %w", err)
	}
	name := id
	for i := 2; ; i++ {
		dir := filepath.Join(parent, name)
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return Folder{dir}, name, nil
		}
		if !os.IsExist(err) || i > 100 {
			return Folder{}, "", fmt.Errorf("run folder: %w", err)
		}
		name = fmt.Sprintf("%s-%d", id, i)
	}
}

// Save writes results.json atomically: a reader never sees half a file, and
// a run killed mid-write leaves the last whole one.
func (f Folder) Save(r *results.Run) error {
	if err := r.Save(f.Results()); err != nil {
		return fmt.Errorf("save results: %w", err)
	}
	return nil
}

// Load reads the run in the folder, refusing a folder that is not a lab
// run (no results.json) with words that say so.
func Load(dir string) (Folder, *results.Run, error) {
	f := Folder{dir}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		if err == nil {
			return f, nil, fmt.Errorf("%s is a file, not a run folder", dir)
		}
		return f, nil, fmt.Errorf("run folder %s: %w", dir, err)
	}
	r, err := results.Load(f.Results()) // it says when the folder is not a run
	return f, r, err
}

// Clear removes what a merge into an existing folder replaces (the last
// merge's results, boots and reports), keeping anything else the user put
// there.
func (f Folder) Clear() error {
	for _, sub := range []string{BootsDir, ReportDir, ResultsFile, TableFile} {
		if err := os.RemoveAll(filepath.Join(f.Dir, sub)); err != nil {
			return err
		}
	}
	return nil
}
