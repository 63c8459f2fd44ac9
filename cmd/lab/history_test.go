package main

import (
	"bytes"
	"context"
	"crypto/sha1"
	"database/sql"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"lab/internal/exitcode"
	"lab/internal/history"
	"lab/internal/testenv"
)

// examplesPattern is every committed example run, as a pattern lab expands.
const examplesPattern = "../../results/examples/*/*"

// importedExamples is a new history of the committed examples.
func importedExamples(t *testing.T) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "history.db")
	if code, _, stderr := labCmd(t, "history", "import", examplesPattern, "--history", db); code != 0 {
		t.Fatalf("lab history import: exit %d: %s", code, stderr)
	}
	return db
}

func commitID(i int) string {
	sum := sha1.Sum([]byte(fmt.Sprintf("commit %d", i)))
	return hex.EncodeToString(sum[:])
}

// planted is a history of a branch of 24 commits measured one boot each
// under icount, uprobe-nop's rate stepping by stepPct at commit 13, the
// control flat.
func planted(t *testing.T, stepPct float64) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "history.db")
	s, err := history.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	noisy := func(v float64) float64 { return v * (1 + 3e-5*rng.NormFloat64()) }
	for i := 1; i <= 24; i++ {
		level := 1.0
		if i >= 13 {
			level += stepPct / 100
		}
		r := &history.Run{Lab: "uprobe-srcu", RunID: fmt.Sprintf("track-%02d", i), Kind: history.KindTrack, LabVersion: "v1",
			Started: time.Date(2026, 12, 1, 10, i, 0, 0, time.UTC),
			Source:  history.Source{Desc: "git tree", ID: "git-0123456789ab", Commit: commitID(0), KernelVersion: "6.12.0"},
			Boots: []history.Boot{{Index: 1, Commit: commitID(i), CommitSeq: i, KernelKey: fmt.Sprint("k", i), ImageSHA256: fmt.Sprint("i", i),
				Arch: "x86_64", CPUs: 1, Topology: "sockets=1,clusters=1,cores=1,threads=1", Clock: history.ClockICount, Accel: "tcg",
				Host: history.Host{Name: "vm", CPUModel: "AMD EPYC", CPUs: 2, QEMUVersion: "7.2.15"},
				Figures: []history.Figure{
					{Benchmark: "uprobe-nop", Producers: 1, Metric: history.MetricRate, Value: noisy(1.09e6 * level)},
					{Benchmark: "syscall-count", Producers: 1, Metric: history.MetricRate, Value: noisy(3.86e6)},
				}}},
		}
		if _, err := s.Add(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// Importing the committed examples adds every run's boots; importing
// them again adds nothing and says so for each run.
func TestHistoryImportIsIdempotent(t *testing.T) {
	var dirs []string
	all, _ := filepath.Glob(examplesPattern)
	for _, d := range all {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			dirs = append(dirs, d)
		}
	}
	if len(dirs) < 10 {
		t.Fatalf("%d example runs", len(dirs))
	}
	db := filepath.Join(t.TempDir(), "history.db")
	for i, want := range []string{"boots added", "already there"} {
		code, stdout, stderr := labCmd(t, "history", "import", examplesPattern, "--history", db)
		if code != 0 {
			t.Fatalf("import %d: exit %d: %s", i+1, code, stderr)
		}
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		if len(lines) != len(dirs)+1 {
			t.Fatalf("import %d: %d lines for %d runs:\n%s", i+1, len(lines), len(dirs), stdout)
		}
		for _, l := range lines[:len(dirs)] {
			if !strings.Contains(l, want) {
				t.Errorf("import %d: %q, want %q", i+1, l, want)
			}
		}
		if i == 1 && !strings.Contains(lines[len(dirs)], fmt.Sprintf(": 0 boots added; it holds %d runs", len(dirs))) {
			t.Errorf("again: %s", lines[len(dirs)])
		}
	}
}

// A file among the run folders (as the shell expands results/examples/*/*,
// which holds the history report too) is skipped, and said so.
func TestHistoryImportSkipsFiles(t *testing.T) {
	code, stdout, stderr := labCmd(t, "history", "import", example, "../../go.mod", "--history", filepath.Join(t.TempDir(), "h.db"))
	if code != 0 || !strings.Contains(stdout, "skipped, not run folders: ../../go.mod\n") || !strings.Contains(stdout, "10 boots added") {
		t.Errorf("exit %d\n%s%s", code, stdout, stderr)
	}
}

// lab history lists the lines, as text or Markdown; detect finds the
// three change points of the tracked stream (track-stream), the lazy
// buffer's step in its bisect of every patch (one point a level under
// icount: the first patch moves six uprobe rows by 4-8 %), and none in the
// other examples (each series is one run).
func TestHistoryListAndDetectExamples(t *testing.T) {
	db := importedExamples(t)
	code, stdout, stderr := labCmd(t, "history", "--history", db)
	if code != 0 || !strings.Contains(stdout, "uprobe-srcu · baseline · x86_64 1 vCPU · tcg icount") ||
		!strings.Contains(stdout, "uprobe-lazy-buffer · commits · x86_64 1 vCPU") || !strings.Contains(stdout, " lines (") {
		t.Errorf("list: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, _ = labCmd(t, "history", "--history", db, "--lab", "kretprobe-objpool", "--format", "md")
	if code != 0 || !strings.Contains(stdout, "## kretprobe-objpool · baseline") || strings.Contains(stdout, "uprobe-srcu") ||
		!strings.Contains(stdout, "| row | unit | commits | boots | latest | change points |") {
		t.Errorf("list --lab --format md: exit %d\n%s", code, stdout)
	}
	code, stdout, _ = labCmd(t, "history", "detect", "--history", db)
	// The culprits come from the imported bisects' records: a culprit cell
	// names its bisect run.
	if code != int(exitcode.Slower) || !strings.Contains(stdout, "10 change points: 2 slower (a regression), 8 faster") ||
		strings.Count(stdout, " (bisect-") != 3 {
		t.Errorf("detect: exit %d\n%s", code, stdout)
	}
	code, stdout, _ = labCmd(t, "history", "detect", "--history", db, "--lab", "uprobe-lazy-buffer")
	if code != int(exitcode.Improved) || !strings.Contains(stdout, "6 change points, each faster") || strings.Count(stdout, "5a52a107696d · bisect-20261201-061841") != 5 {
		t.Errorf("detect --lab uprobe-lazy-buffer: exit %d\n%s", code, stdout)
	}
	for _, lab := range []string{"uprobe-srcu", "kretprobe-objpool"} {
		code, stdout, _ = labCmd(t, "history", "detect", "--history", db, "--lab", lab)
		if code != 0 || !strings.Contains(stdout, "no change point") {
			t.Errorf("detect --lab %s: exit %d\n%s", lab, code, stdout)
		}
	}
}

// The committed history page of the seed labs: every file, the page
// standing alone, every lab of the examples in it. (Made by lab history
// import results/examples/*/* into a new history, then lab history report
// --out results/examples/history.)
func TestCommittedHistoryReport(t *testing.T) {
	dir := "../../results/examples/history"
	for _, name := range []string{"history.txt", "history.md", "history.html", "otava.csv", "bmf.json"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || len(data) == 0 {
			t.Fatalf("%s: %v", name, err)
		}
		if name == "history.html" {
			if m := regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?\s*(https?:)?//`).Find(data); m != nil {
				t.Errorf("history.html fetches %s", m)
			}
		}
	}
	text, _ := os.ReadFile(filepath.Join(dir, "history.txt"))
	labs, _ := filepath.Glob("../../results/examples/*/*/results.json")
	for _, p := range labs {
		lab := filepath.Base(filepath.Dir(filepath.Dir(p)))
		if !strings.Contains(string(text), lab+" · ") {
			t.Errorf("the committed history has no series of %s: make it again (lab history report --out %s)", lab, dir)
		}
	}
}

// detect finds the planted step at its commit and exits 3 for a
// regression, 4 for improvements only, 0 once --min-pct is above it.
func TestHistoryDetectPlanted(t *testing.T) {
	for _, tc := range []struct {
		name  string
		step  float64
		flags []string
		code  exitcode.Code
		want  string
	}{
		{"a 1% regression", -1, nil, exitcode.Slower, "slower"},
		{"a 0.2% regression, Markdown", -0.2, []string{"--format", "md"}, exitcode.Slower, "| uprobe-nop p1 | " + commitID(12)[:12]},
		{"a 1% improvement", 1, nil, exitcode.Improved, "faster"},
		{"a 1% regression under --min-pct 2", -1, []string{"--min-pct", "2"}, exitcode.OK, "no change point"},
		{"a layout shift", -0.04, nil, exitcode.OK, "no change point"},
		{"a layout shift, --min-pct 0.02", -0.04, []string{"--min-pct", "0.02"}, exitcode.Slower, "1 change point, each slower"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := planted(t, tc.step)
			code, stdout, stderr := labCmd(t, append([]string{"history", "detect", "--history", db}, tc.flags...)...)
			if code != int(tc.code) || !strings.Contains(stdout, tc.want) {
				t.Errorf("exit %d, want %d; want %q in\n%s%s", code, tc.code, tc.want, stdout, stderr)
			}
			if tc.code != exitcode.OK && !strings.Contains(stdout, commitID(13)[:12]) {
				t.Errorf("the change's commit %s is not named:\n%s", commitID(13)[:12], stdout)
			}
		})
	}
}

// lab history report writes the history's files and one mail for the
// regression, from the history alone; the page stands alone, the
// exports parse back.
func TestHistoryReport(t *testing.T) {
	db := planted(t, -1)
	out := filepath.Join(t.TempDir(), "report")
	// A mail of an earlier report that no longer holds is removed.
	os.MkdirAll(out, 0o755)
	os.WriteFile(filepath.Join(out, "regression-000000000000.txt"), []byte("old"), 0o644)
	code, stdout, stderr := labCmd(t, "history", "report", "--history", db, "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	sha := commitID(13)[:12]
	var names []string
	entries, _ := os.ReadDir(out)
	for _, e := range entries {
		names = append(names, e.Name())
	}
	want := []string{"bmf.json", "changes.csv", "history.html", "history.md", "history.txt", "otava.csv", "regression-" + sha + ".txt"}
	if strings.Join(names, " ") != strings.Join(want, " ") || !strings.Contains(stdout, "reports: ") {
		t.Fatalf("files %v, want %v\n%s", names, want, stdout)
	}
	read := func(name string) string {
		data, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	mail := read("regression-" + sha + ".txt")
	if !strings.HasPrefix(mail, "Subject: [lab:uprobe-srcu] "+sha+": uprobe-nop.p1.rate -1.0% regression\n") {
		t.Errorf("mail:\n%s", mail)
	}
	for i, l := range strings.Split(mail, "\n") {
		if utf8.RuneCountInString(l) > 80 {
			t.Errorf("mail line %d is wider than 80 columns: %q", i+1, l)
		}
	}
	page := read("history.html")
	if m := regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?\s*(https?:)?//`).FindString(page); m != "" || !strings.Contains(page, "<svg") {
		t.Errorf("the page fetches %q, or has no chart", m)
	}
	recs, err := csv.NewReader(strings.NewReader(read("otava.csv"))).ReadAll()
	if err != nil || len(recs) != 25 || recs[13][1] != commitID(13) {
		t.Errorf("otava.csv: %d lines, %v", len(recs), err)
	}
	var bmf map[string]map[string]map[string]float64
	if err := json.Unmarshal([]byte(read("bmf.json")), &bmf); err != nil || len(bmf) != 2 {
		t.Errorf("bmf.json: %v: %v", err, bmf)
	}
	if n := strings.Count(page, `<figure class="chart">`); n != 2 {
		t.Errorf("%d charts, want 2 (a series of 24 levels, and its control)", n)
	}
	if testenv.Enabled() {
		chromiumLaysOut(t, filepath.Join(out, "history.html"), 2)
	}
	for _, name := range []string{"history.txt", "history.md"} {
		if !regexp.MustCompile(`▼ slower -(1\.0|0\.99)`).MatchString(read(name)) {
			t.Errorf("%s does not mark the change point", name)
		}
	}
}

// chromiumLaysOut opens a page in headless Chromium (the end-to-end
// suite requires it) and checks that it laid out every chart.
func chromiumLaysOut(t *testing.T, page string, charts int) {
	t.Helper()
	browser, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium not found: run ./scripts/install-deps --test (Debian package chromium)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dom, err := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=5000",
		"--dump-dom", "file://"+page).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	if m := regexp.MustCompile(`data-charts-rendered="(\d+)"`).FindSubmatch(dom); m == nil || string(m[1]) != fmt.Sprint(charts) {
		t.Errorf("chromium laid out %s of %d charts", m, charts)
	}
}

// Bad input is a clear error, and writes nothing: a damaged or foreign
// database, a newer schema, a folder that is not a run, a --history in
// a folder that does not exist, an unknown lab.
func TestHistoryBadInput(t *testing.T) {
	tmp := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(tmp, name)
		os.WriteFile(p, []byte(text), 0o644)
		return p
	}
	garbage := write("garbage.db", "not a database, a shopping list\n")
	notARun := filepath.Join(tmp, "not-a-run")
	os.Mkdir(notARun, 0o755)
	foreign := filepath.Join(tmp, "foreign.db")
	newer := filepath.Join(tmp, "newer.db")
	for _, p := range []string{foreign, newer} {
		db, err := sql.Open("sqlite", p)
		if err != nil {
			t.Fatal(err)
		}
		stmt := `CREATE TABLE bookmarks (url TEXT)`
		if p == newer {
			db.Close()
			s, err := history.Open(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			s.Close()
			db, _ = sql.Open("sqlite", p)
			stmt = `UPDATE schema_version SET version = 99`
		}
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
		db.Close()
	}
	good := importedExamples(t)
	missing := filepath.Join(tmp, "no-such-folder", "history.db")
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"a damaged database", []string{"history", "--history", garbage}, exitError, "not an SQLite database"},
		{"another program's database", []string{"history", "detect", "--history", foreign}, exitError, "not lab's history: it has tables bookmarks"},
		{"a newer schema", []string{"history", "import", example, "--history", newer}, exitError, "its schema is version 99, newer than this lab's"},
		{"a folder that is not a run", []string{"history", "import", example, notARun, "--history", filepath.Join(tmp, "new.db")}, exitError, "not a lab run folder"},
		{"a pattern that matches nothing", []string{"history", "import", "../../results/examples/nothing*", "--history", filepath.Join(tmp, "new.db")}, exitError, "no run folder matches"},
		{"--history in no folder, import", []string{"history", "import", example, "--history", missing}, exitUsage, "no folder"},
		{"--history in no folder, list", []string{"history", "--history", missing}, exitError, "no history at " + missing},
		{"--history in no folder, run", []string{"run", srcuLab, "--history", missing}, exitUsage, "--history: " + missing + ": no folder"},
		{"--history in no folder, bisect", []string{"bisect", srcuLab, "--history", missing}, exitUsage, "no folder"},
		{"--history and --no-history", []string{"run", srcuLab, "--history", good, "--no-history"}, exitUsage, "give one"},
		{"an unknown lab", []string{"history", "report", "--lab", "nope", "--history", good, "--out", filepath.Join(tmp, "out")}, exitError, `no lab "nope" in it (it holds bench-parity,`},
		{"files, not runs", []string{"history", "import", "../../go.mod", "--history", filepath.Join(tmp, "new.db")}, exitError, "../../go.mod: files, not run folders"},
		{"no such subcommand", []string{"history", "show", "--history", good}, exitUsage, "no such subcommand"},
		{"a flag of another subcommand", []string{"history", "import", example, "--min-pct", "1", "--history", good}, exitUsage, "does not take --min-pct"},
		{"a negative --min-pct", []string{"history", "detect", "--min-pct", "-1", "--history", good}, exitUsage, "want 0 or more"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := folderState(t, tmp)
			code, stdout, stderr := labCmd(t, tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, want %d; want %q in\n%s%s", code, tc.code, tc.want, stdout, stderr)
			}
			if after := folderState(t, tmp); !equalState(before, after) {
				t.Errorf("it wrote: %v, then %v", keys(before), keys(after))
			}
		})
	}
}

// folderState is every file under dir with its bytes.
func folderState(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	m := map[string][]byte{}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			m[p], _ = os.ReadFile(p)
		}
		return nil
	})
	return m
}

func equalState(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || !bytes.Equal(v, w) {
			return false
		}
	}
	return true
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, filepath.Base(k))
	}
	return out
}

// lab merge adds the merged run to the history; merging the same shards
// again adds nothing (the boots are known by their samples); a history
// that cannot take it is a warning naming it, and the merge exits 0.
func TestMergeRecordsHistory(t *testing.T) {
	_, dirs := splitExample(t, 2, []string{"h1"}, nil)
	db := filepath.Join(t.TempDir(), "history.db")
	for i, want := range []string{"history: " + db + ": 10 boots added", "history: " + db + ": already there (10 boots)"} {
		args := append(append([]string{"merge"}, dirs...), "-o", filepath.Join(t.TempDir(), fmt.Sprint("m", i)), "--history", db)
		code, stdout, stderr := labCmd(t, args...)
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("merge %d: exit %d, want %q:\n%s%s", i+1, code, want, stdout, stderr)
		}
	}
	broken := filepath.Join(t.TempDir(), "history.db")
	os.WriteFile(broken, []byte("not a database"), 0o644)
	out := filepath.Join(t.TempDir(), "m")
	code, _, stderr := labCmd(t, append(append([]string{"merge"}, dirs...), "-o", out, "--history", broken)...)
	if code != 0 || !strings.Contains(stderr, "lab: warning: the history "+broken+" did not take run m") ||
		!strings.Contains(stderr, "lab history import "+out+" --history "+broken+" adds it later") {
		t.Errorf("exit %d:\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(out, "results.json")); err != nil {
		t.Errorf("the merged run is lost: %v", err)
	}
	// Without --history the merge's history is in its results folder.
	res := t.TempDir()
	out = filepath.Join(res, "uprobe-srcu", "merged")
	if code, stdout, _ := labCmd(t, append(append([]string{"merge"}, dirs...), "-o", out)...); code != 0 ||
		!strings.Contains(stdout, "history: "+filepath.Join(res, "history.db")+": 10 boots added") {
		t.Errorf("default history: exit %d\n%s", code, stdout)
	}
}

// The exit-code table's name of a history command line.
func TestHistoryTable(t *testing.T) {
	for args, want := range map[string]string{
		"detect":                     exitcode.HistoryDetect,
		"--lab x detect --min-pct 1": exitcode.HistoryDetect,
		"--history=h.db detect":      exitcode.HistoryDetect,
		"report --out detect":        "history",
		"--lab detect report":        "history",
		"import results/x detect":    "history",
		"":                           "history",
		"-h detect":                  exitcode.HistoryDetect,
	} {
		if got := tableName("history", strings.Fields(args)); got != want {
			t.Errorf("lab history %s: %q, want %q", args, got, want)
		}
	}
}
