package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"lab/internal/exitcode"
	"lab/internal/flagval"
	"lab/internal/history"
	"lab/internal/historyreport"
	"lab/internal/initramfs"
	"lab/internal/lines"
	"lab/internal/publish"
	"lab/internal/results"
)

// HistoryFile is the history's name in a results folder.
const HistoryFile = "history.db"

// historyFlags choose the history that lab run, lab merge and lab bisect
// add what they measured to.
type historyFlags struct {
	where flagval.String
	off   flagval.Bool
}

func (f *historyFlags) RegisterFlags(fs *flag.FlagSet) {
	fs.Var(&f.where, "history", "add the boots measured to this history: an SQLite file (default: "+HistoryFile+" in the results folder) "+
		"or a postgres:// URL. When it cannot be written, lab warns, naming it, and exits as it would have: "+
		"the run folder is kept, and lab history import RUN-DIR adds it later")
	fs.Var(&f.off, "no-history", "do not add the boots measured to the history")
}

// target is where the boots go, "" for nowhere; resultsDir is the folder
// of the default. It is asked before anything is measured, so that a
// --history in a folder that does not exist stops a run before it starts.
func (f *historyFlags) target(resultsDir string) (string, error) {
	switch {
	case f.off.V && f.where.IsSet():
		return "", usagef("--history and --no-history: give one")
	case f.off.V:
		return "", nil
	case !f.where.IsSet():
		return filepath.Join(resultsDir, HistoryFile), nil
	}
	if err := checkHistoryFolder(f.where.V); err != nil {
		return "", usageError{"--history: " + err.Error()}
	}
	return f.where.V, nil
}

// isURL reports whether a history is a PostgreSQL database.
func isURL(where string) bool {
	return strings.HasPrefix(where, "postgres://") || strings.HasPrefix(where, "postgresql://")
}

// storeName is a history as messages name it: the file, or the URL
// without its password.
func storeName(where string) string {
	if isURL(where) {
		if u, err := url.Parse(where); err == nil {
			return u.Redacted()
		}
		return "a PostgreSQL URL that does not parse"
	}
	return where
}

// checkHistoryFolder refuses an SQLite history whose folder does not
// exist: a mistyped path is not made.
func checkHistoryFolder(where string) error {
	if isURL(where) {
		if _, err := url.Parse(where); err != nil {
			return fmt.Errorf("%s: not a URL: %w", storeName(where), err)
		}
		return nil
	}
	dir := filepath.Dir(where)
	st, err := os.Stat(dir)
	switch {
	case err != nil:
		return fmt.Errorf("%s: no folder %s to make it in", where, dir)
	case !st.IsDir():
		return fmt.Errorf("%s: %s is not a folder", where, dir)
	}
	return nil
}

// recordHistory adds what a run, merge or bisect measured to the history
// at where ("" for none) and says so on out. A history that cannot take
// it loses nothing: the run folder stays, and a warning on errOut names
// the history and how to add the run later; the command exits as it
// would have. A stopped run's boots are added too.
func recordHistory(ctx context.Context, r *results.Run, dir, where string, out, errOut io.Writer) {
	if where == "" || r == nil || len(r.Boots) == 0 {
		return
	}
	// After a first signal what was measured is saved, history included.
	ctx = context.WithoutCancel(ctx)
	n, err := addRun(ctx, r, where)
	if err != nil {
		fmt.Fprintf(errOut, "lab: warning: the history %s did not take run %s: %v\n"+
			"lab: the run is saved in %s; lab history import %s --history %s adds it later\n",
			storeName(where), r.RunID, err, dir, dir, storeName(where))
		return
	}
	fmt.Fprintf(out, "history: %s: %s\n", storeName(where), addedText(n, len(r.Boots)))
}

func addRun(ctx context.Context, r *results.Run, where string) (int, error) {
	h, err := history.FromRun(r)
	if err != nil {
		return 0, err
	}
	if !isURL(where) {
		if err := checkHistoryFolder(where); err != nil {
			return 0, err
		}
	}
	s, err := history.Open(ctx, where)
	if err != nil {
		return 0, err
	}
	defer s.Close()
	return s.Add(ctx, h)
}

func addedText(added, boots int) string {
	switch {
	case added == 0:
		return fmt.Sprintf("already there (%d boots)", boots)
	case added < boots:
		return fmt.Sprintf("%d boots added, %d already there", added, boots-added)
	}
	return fmt.Sprintf("%d boots added", added)
}

// mergeResultsFolder is the results folder of a merged run at dir: that
// of lab run's layout (results/LAB/RUN) when dir is in its lab's folder,
// else the folder dir is in.
func mergeResultsFolder(dir, lab string) string {
	parent := filepath.Dir(filepath.Clean(dir))
	if filepath.Base(parent) == lab {
		return filepath.Dir(parent)
	}
	return parent
}

const historyHelp = `lab history [SUBCOMMAND] [flags]: every boot lab measured, across runs.

lab run, lab merge and lab bisect add what they measured to the history
(results/history.db by default; --history PATH|URL, --no-history).

  lab history [--lab L] [--format md]     the series the history holds: one a
                                          benchmark row, shape, clock and host
  lab history import RUN-DIR...           add saved runs (patterns too, such as
                                          results/examples/*/*); twice adds nothing
  lab history detect [--lab L] [--min-pct X] [--format md]
                                          the change points of every series:
                                          where a figure moved, from which commit
  lab history report [--lab L] [--out DIR]
                                          history.txt, history.md, history.html,
                                          otava.csv (Apache Otava), bmf.json
                                          (Bencher) and a regression-<sha12>.txt
                                          mail (LKP's form) per regression

A series never mixes clocks, guest shapes, accelerators or host classes. A
level is the boots of one commit in one run; detection (E-divisive means with
a t-test, as Apache Otava) looks at the levels' means. By default an icount
series reports a change of at least 0.01 % (kernels without a code change
agree within 0.0003 %), a wall-clock series a
change of at least 1 % and 2.5 sd (Chromeperf's filters); --min-pct lowers
or raises the size. Slower is a figure that went down: every figure is a
rate (or a ratio of rates), higher is better.

Flags:
`

// historyCmdFlags are lab history's flags; each subcommand takes some.
type historyCmdFlags struct {
	where, lab, format, out flagval.String
	minPct                  flagval.Float
}

func (f *historyCmdFlags) RegisterFlags(fs *flag.FlagSet) {
	fs.Var(&f.where, "history", "the history: an SQLite file (default: results/"+HistoryFile+" in lab's checkout) or a postgres:// URL")
	fs.Var(&f.lab, "lab", "one lab's series only")
	fs.Var(&f.format, "format", "list and detect: text (default) or md (Markdown)")
	fs.Var(&f.minPct, "min-pct", "detect and report: the least change of a level reported, in percent (default: 0.01 under icount, 1 under the wall clock)")
	fs.Var(&f.out, "out", "report: the folder of the files (default: history-report beside the history file)")
}

// check refuses a flag the subcommand does not take.
func (f *historyCmdFlags) check(sub string) error {
	takes := map[string][]string{
		"":       {"history", "lab", "format"},
		"import": {"history"},
		"detect": {"history", "lab", "format", "min-pct"},
		"report": {"history", "lab", "min-pct", "out"},
	}[sub]
	name := "lab history"
	if sub != "" {
		name += " " + sub
	}
	for flagName, set := range map[string]bool{"lab": f.lab.IsSet(), "format": f.format.IsSet(), "min-pct": f.minPct.IsSet(), "out": f.out.IsSet()} {
		if set && !slices.Contains(takes, flagName) {
			return usagef("%s does not take --%s (lab help history)", name, flagName)
		}
	}
	switch f.format.V {
	case "", "text", "md":
	default:
		return usagef("--format %q: want text or md", f.format.V)
	}
	if f.minPct.IsSet() && f.minPct.V < 0 {
		return usagef("--min-pct %g: want 0 or more", f.minPct.V)
	}
	return nil
}

// historyTable is lab history's command line as the exit-code table
// names it: lab history detect has codes of its own.
func historyTable(args []string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "-") && a != "-" {
			if !strings.Contains(a, "=") && !wantsHelp([]string{a}) {
				i++ // the flag's value
			}
			continue
		}
		if a == "detect" {
			return exitcode.HistoryDetect
		}
		break
	}
	return "history"
}

func historyCommand(fs *flag.FlagSet) func(context.Context, invocation) error {
	var f historyCmdFlags
	f.RegisterFlags(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), historyHelp)
		fs.PrintDefaults()
	}
	return func(ctx context.Context, inv invocation) error {
		sub, args := "", inv.args
		if len(args) > 0 {
			sub, args = args[0], args[1:]
		}
		switch sub {
		case "", "import", "detect", "report":
		default:
			return usagef("lab history %s: no such subcommand (import, detect, report; lab help history)", sub)
		}
		if err := f.check(sub); err != nil {
			return err
		}
		if sub != "import" && len(args) > 0 {
			return usagef("lab history %s takes no arguments, got %s", sub, strings.Join(args, " "))
		}
		if sub == "import" {
			return f.importRuns(ctx, args, inv.out)
		}
		s, err := f.open(ctx)
		if err != nil {
			return err
		}
		defer s.Close()
		minPct := -1.0
		if f.minPct.IsSet() {
			minPct = f.minPct.V
		}
		h, err := historyreport.Load(ctx, s, lines.Options{Lab: f.lab.V, MinPct: minPct})
		if err != nil {
			return err
		}
		switch sub {
		case "detect":
			return f.detect(h, inv.out)
		case "report":
			return f.report(h, inv.out)
		}
		f.list(h, inv.out)
		return nil
	}
}

// defaultHistory is results/history.db in lab's checkout, or in the
// working folder outside one.
func defaultHistory() string {
	if root, err := initramfs.FindModuleRoot(""); err == nil {
		return filepath.Join(root, "results", HistoryFile)
	}
	return filepath.Join("results", HistoryFile)
}

func (f *historyCmdFlags) location() string {
	if f.where.IsSet() {
		return f.where.V
	}
	return defaultHistory()
}

// open opens the history to read it: a file that is not there is an
// error, not a new empty history.
func (f *historyCmdFlags) open(ctx context.Context) (*history.Store, error) {
	where := f.location()
	if !isURL(where) {
		st, err := os.Stat(where)
		switch {
		case errors.Is(err, os.ErrNotExist):
			return nil, fmt.Errorf("no history at %s: lab run, lab merge and lab bisect make it; lab history import RUN-DIR... makes it of saved runs", where)
		case err != nil:
			return nil, fmt.Errorf("history %s: %w", where, err)
		case st.IsDir():
			return nil, fmt.Errorf("history %s is a folder: give the file (%s in it?)", where, HistoryFile)
		}
	}
	return history.Open(ctx, where)
}

func (f *historyCmdFlags) list(h *historyreport.History, out io.Writer) {
	if len(h.Lines) == 0 {
		fmt.Fprintf(out, "the history %s is empty: lab run, lab merge and lab bisect add to it; lab history import RUN-DIR... adds saved runs\n", h.Where)
		return
	}
	tables := h.ListTables()
	if f.format.V == "md" {
		fmt.Fprint(out, historyreport.Markdown(tables, 2))
	} else {
		fmt.Fprint(out, historyreport.Text(tables))
	}
	fmt.Fprintf(out, "\n%s\nhistory: %s\n", h.Summary(), h.Where)
}

// detect prints the change points, and returns the outcome as an error
// with its exit code: 3 for a regression, 4 for improvements only.
func (f *historyCmdFlags) detect(h *historyreport.History, out io.Writer) error {
	tables := h.ChangeTables()
	if f.format.V == "md" {
		fmt.Fprint(out, historyreport.Markdown(tables, 2))
	} else {
		fmt.Fprint(out, historyreport.Text(tables))
	}
	if len(tables) > 0 {
		fmt.Fprintln(out)
	}
	fmt.Fprintf(out, "%s\nhistory: %s\n", h.Summary(), h.Where)
	switch h.Movement() {
	case lines.Regression:
		return codeError{exitcode.Slower, fmt.Errorf("history detect: a regression: %s", h.Summary())}
	case lines.Improvement:
		return codeError{exitcode.Improved, fmt.Errorf("history detect: improvements only: %s", h.Summary())}
	}
	return nil
}

// report writes every file of the history's report into --out, replacing
// the regression mails of an earlier report there.
func (f *historyCmdFlags) report(h *historyreport.History, out io.Writer) error {
	files, err := h.Files()
	if err != nil {
		return err
	}
	dir := f.out.V
	if dir == "" {
		dir = "history-report"
		if where := f.location(); !isURL(where) {
			dir = filepath.Join(filepath.Dir(where), "history-report")
		}
	}
	old, _ := filepath.Glob(filepath.Join(dir, "regression-*.txt"))
	for _, p := range old {
		if err := os.Remove(p); err != nil {
			return fmt.Errorf("history report: %w", err)
		}
	}
	paths, err := publish.WriteFiles(dir, files)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%s\nreports: %s\n", h.Summary(), strings.Join(paths, " "))
	return nil
}

// importRuns adds saved run folders to the history: every folder is read
// and checked first, so that one that is not a run writes nothing.
func (f *historyCmdFlags) importRuns(ctx context.Context, args []string, out io.Writer) error {
	dirs, err := expandRuns(args, out)
	if err != nil {
		return err
	}
	runs, err := history.ReadSaved(dirs)
	if err != nil {
		return err
	}
	where := f.location()
	if err := checkHistoryFolder(where); err != nil {
		if f.where.IsSet() {
			return usageError{"--history: " + err.Error()}
		}
		if err := os.MkdirAll(filepath.Dir(where), 0o755); err != nil {
			return fmt.Errorf("history %s: %w", where, err)
		}
	}
	s, err := history.Open(ctx, where)
	if err != nil {
		return err
	}
	defer s.Close()
	if err := s.Import(ctx, runs); err != nil {
		return err
	}
	added := 0
	for _, r := range runs {
		added += r.Added
		fmt.Fprintf(out, "%s: run %s of %s (%s): %s\n", r.Dir, r.Run.RunID, r.Run.Lab, r.Run.Kind, addedText(r.Added, len(r.Run.Boots)))
	}
	st, err := s.Stats(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "history %s: %d boots added; it holds %d runs, %d boots, %d figures\n", s, added, st.Runs, st.Boots, st.Figures)
	return nil
}

// expandRuns expands patterns (for engines that run lab without a
// shell) into the folders they match. Files are skipped, named on out: a
// pattern, the shell's or lab's, also matches the files beside the runs
// (results/examples/*/* matches the history report in
// results/examples/history/). A pattern that matches no folder is an
// error, and so is a folder that is not a run (when it is read).
func expandRuns(args []string, out io.Writer) ([]string, error) {
	if len(args) == 0 {
		return nil, usagef("lab history import takes run folders, got none")
	}
	var dirs, files []string
	for _, a := range args {
		if st, err := os.Stat(a); err == nil || !strings.ContainsAny(a, "*?[") {
			if err == nil && !st.IsDir() {
				files = append(files, a)
				continue
			}
			dirs = append(dirs, a)
			continue
		}
		m, err := filepath.Glob(a)
		if err != nil {
			return nil, usagef("pattern %s: %v", a, err)
		}
		n := len(dirs)
		for _, p := range m {
			if st, err := os.Stat(p); err == nil && st.IsDir() {
				dirs = append(dirs, p)
			}
		}
		if len(dirs) == n {
			return nil, fmt.Errorf("history import: %s: no run folder matches", a)
		}
	}
	if len(dirs) == 0 {
		return nil, fmt.Errorf("history import: %s: files, not run folders", strings.Join(files, ", "))
	}
	if len(files) > 0 {
		fmt.Fprintf(out, "skipped, not run folders: %s\n", strings.Join(files, " "))
	}
	return dirs, nil
}
