package historyreport

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"lab/internal/gitcmd"
	"lab/internal/history"
	"lab/internal/insnprof"
	"lab/internal/lines"
)

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// commit is the i-th commit of the synthetic branch.
func commit(i int) string {
	sum := sha1.Sum([]byte(fmt.Sprintf("commit %d", i)))
	return hex.EncodeToString(sum[:])
}

// stream describes a synthetic branch measured commit by commit under
// icount, one boot a commit: uprobe-nop's rate steps by stepPct from
// commit at on, the usermode-count control stays put.
type stream struct {
	lab     string
	commits int
	at      int
	stepPct float64
	noise   float64 // relative sd of a boot, icount's: 3e-5
	clock   string
}

func (st stream) runs() []*history.Run {
	rng := rand.New(rand.NewPCG(1, 2))
	clock := st.clock
	if clock == "" {
		clock = history.ClockICount
	}
	var runs []*history.Run
	for i := 1; i <= st.commits; i++ {
		level := 1.0
		if i >= st.at {
			level += st.stepPct / 100
		}
		noisy := func(v float64) float64 { return v * (1 + st.noise*rng.NormFloat64()) }
		runs = append(runs, &history.Run{
			Lab: st.lab, RunID: fmt.Sprintf("track-%03d", i), Kind: history.KindTrack, LabVersion: "v1",
			Command: []string{"lab", "track"}, Started: t0.Add(time.Duration(i) * time.Minute),
			Source: history.Source{Desc: "git tree", ID: "git-0123456789ab", Commit: commit(0), KernelVersion: "6.12.0"},
			Boots: []history.Boot{{
				Index: 1, Commit: commit(i), CommitSeq: 100 + i, KernelKey: fmt.Sprintf("k%d", i), ImageSHA256: fmt.Sprintf("img%d", i),
				Arch: "x86_64", CPUs: 1, Topology: "sockets=1,clusters=1,cores=1,threads=1", Clock: clock, Accel: "tcg",
				Host: history.Host{Name: "vm1", CPUModel: "AMD EPYC 7B13", CPUs: 2, Kernel: "6.1.0", QEMUVersion: "7.2.15"},
				Figures: []history.Figure{
					{Benchmark: "uprobe-nop", Producers: 1, Metric: history.MetricRate, Value: noisy(1.09416e6 * level)},
					{Benchmark: "usermode-count", Producers: 1, Metric: history.MetricRate, Value: noisy(57.47268e6)},
				},
			}},
		})
	}
	return runs
}

// store makes a history of runs in a temporary SQLite file.
func store(t *testing.T, runs ...[]*history.Run) *history.Store {
	t.Helper()
	s, err := history.Open(context.Background(), filepath.Join(t.TempDir(), "history.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for _, rs := range runs {
		for _, r := range rs {
			if _, err := s.Add(context.Background(), r); err != nil {
				t.Fatal(err)
			}
		}
	}
	return s
}

func load(t *testing.T, s *history.Store, opt lines.Options) *History {
	t.Helper()
	h, err := Load(context.Background(), s, opt)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func series(t *testing.T, h *History, bench string) *lines.Line {
	t.Helper()
	for i := range h.Lines {
		if h.Lines[i].Key.Benchmark == bench {
			return &h.Lines[i]
		}
	}
	t.Fatalf("no series of %s", bench)
	return nil
}

// A planted step is found at its commit, as a regression or an
// improvement by its sign; a step below the default minimum effect (a
// layout shift's size) is not, unless the user lowers it; the control
// has no change point.
func TestDetectPlantedStep(t *testing.T) {
	for _, tc := range []struct {
		name    string
		st      stream
		minPct  float64
		changes int
		outcome lines.Movement
	}{
		{"a 1% regression", stream{lab: "l", commits: 40, at: 21, stepPct: -1, noise: 3e-5}, -1, 1, lines.Regression},
		{"a 0.1% regression", stream{lab: "l", commits: 40, at: 21, stepPct: -0.1, noise: 3e-5}, -1, 1, lines.Regression},
		{"a 2% improvement", stream{lab: "l", commits: 30, at: 11, stepPct: 2, noise: 3e-5}, -1, 1, lines.Improvement},
		{"a layout shift", stream{lab: "l", commits: 40, at: 21, stepPct: -0.05, noise: 3e-5}, -1, 0, lines.NoChange},
		{"a layout shift, --min-pct 0.02", stream{lab: "l", commits: 40, at: 21, stepPct: -0.05, noise: 3e-5}, 0.02, 1, lines.Regression},
		{"no step", stream{lab: "l", commits: 40, at: 100, noise: 3e-5}, -1, 0, lines.NoChange},
		{"wall clock, 5% in 2% noise", stream{lab: "l", commits: 40, at: 21, stepPct: -5, noise: 0.02, clock: history.ClockWall}, -1, 1, lines.Regression},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := load(t, store(t, tc.st.runs()), lines.Options{MinPct: tc.minPct})
			if len(h.Lines) != 2 {
				t.Fatalf("%d series, want 2", len(h.Lines))
			}
			s := series(t, h, "uprobe-nop")
			if len(s.Levels) != tc.st.commits {
				t.Fatalf("%d levels, want %d", len(s.Levels), tc.st.commits)
			}
			if len(s.Changes) != tc.changes {
				t.Fatalf("changes %+v, want %d", s.Changes, tc.changes)
			}
			if got := h.Movement(); got != tc.outcome {
				t.Errorf("outcome %d, want %d", got, tc.outcome)
			}
			if c := series(t, h, "usermode-count"); len(c.Changes) != 0 || !c.Control {
				t.Errorf("control: %+v, control %v", c.Changes, c.Control)
			}
			if tc.changes == 0 {
				return
			}
			c := s.Changes[0]
			f := lines.Found{Line: s, Change: c}
			if f.After().Commit != commit(tc.st.at) || f.Before().Commit != commit(tc.st.at-1) {
				t.Errorf("change at %s after %s, want %s after %s", gitcmd.Short(f.After().Commit), gitcmd.Short(f.Before().Commit), gitcmd.Short(commit(tc.st.at)), gitcmd.Short(commit(tc.st.at-1)))
			}
			if c.Slower != (tc.st.stepPct < 0) || math.Abs(c.Pct-tc.st.stepPct) > math.Abs(tc.st.stepPct)/5 {
				t.Errorf("change %+.3f %% (slower %v), planted %+.3f %%", c.Pct, c.Slower, tc.st.stepPct)
			}
		})
	}
}

// The cells: a listing line a series, a change table line a change
// point, a level line a commit with the change marked where it starts.
func TestTables(t *testing.T) {
	st := stream{lab: "l", commits: 12, at: 7, stepPct: -1, noise: 3e-5}
	h := load(t, store(t, st.runs()), lines.Options{MinPct: -1})
	list := h.ListTables()
	if len(list) != 1 || len(list[0].Rows) != 2 || list[0].Rows[0][2] != "12" {
		t.Fatalf("list: %+v", list)
	}
	if !strings.Contains(list[0].Title, "l · commits · x86_64 1 vCPU · tcg icount · AMD EPYC 7B13 ×2, QEMU 7.2") {
		t.Errorf("title %q", list[0].Title)
	}
	ch := h.ChangeTables()
	if len(ch) != 1 || len(ch[0].Rows) != 1 {
		t.Fatalf("changes: %+v", ch)
	}
	row := ch[0].Rows[0]
	if !strings.HasPrefix(row[1], gitcmd.Short(commit(6))) || !strings.HasPrefix(row[2], gitcmd.Short(commit(7))) || row[6] != "slower" {
		t.Errorf("change row %q", row)
	}
	lv := h.LevelTables()
	marked := 0
	for i, r := range lv[0].Rows {
		if r[5] != "" {
			marked++
			if r[1] != gitcmd.Short(commit(7)) || !strings.HasPrefix(r[5], "▼ slower -1.0") || lv[0].Marked[i] != "slower" {
				t.Errorf("marked row %q", r)
			}
		}
	}
	if marked != 1 || len(lv[0].Rows) != 24 {
		t.Errorf("%d marked of %d rows", marked, len(lv[0].Rows))
	}
	txt, md := Text(lv), Markdown(lv, 3)
	for _, want := range []string{gitcmd.Short(commit(7)), "▼ slower", "usermode-count p1 (control) (M/s)"} {
		if !strings.Contains(txt, want) || !strings.Contains(md, want) {
			t.Errorf("text or Markdown lacks %q", want)
		}
	}
	if !strings.Contains(md, "|---|---|---|--:|--:|---|") {
		t.Errorf("Markdown alignment row:\n%s", md)
	}
}

// The regression mail: LKP's subject, commit and parent, parameters,
// machine, the %stddev %change table over every row (the control
// included) and the lab commands, within 80 columns.
func TestMail(t *testing.T) {
	st := stream{lab: "uprobe-srcu", commits: 16, at: 9, stepPct: -1.2, noise: 3e-5}
	h := load(t, store(t, st.runs()), lines.Options{MinPct: -1})
	mails := h.Mails()
	if len(mails) != 1 {
		t.Fatalf("%d mails, want 1", len(mails))
	}
	m := mails[0]
	sha := gitcmd.Short(commit(9))
	if m.Name != "regression-"+sha+".txt" {
		t.Errorf("name %s", m.Name)
	}
	if want := "[lab:uprobe-srcu] " + sha + ": uprobe-nop.p1.rate -1.2% regression"; m.Subject != want {
		t.Errorf("subject %q, want %q", m.Subject, want)
	}
	lines := strings.Split(m.Text, "\n")
	if lines[0] != "Subject: "+m.Subject || lines[1] != "" {
		t.Errorf("head %q", lines[:2])
	}
	for i, l := range lines {
		if n := utf8.RuneCountInString(l); n > MailWidth {
			t.Errorf("line %d: %d columns: %q", i+1, n, l)
		}
	}
	for _, want := range []string{
		"lab noticed a -1.2% regression of uprobe-nop.p1.rate on:",
		"commit: " + commit(9),
		"parent: " + commit(8),
		"        benchmark: uprobe-nop",
		"        producers: 1",
		"        host class: AMD EPYC 7B13 ×2, QEMU 7.2",
		"        accelerator: tcg",
		"        clock: icount",
		"           %stddev  %change            %stddev",
		"uprobe-nop.p1.rate\n",
		"usermode-count.p1.rate (control)\n",
		"To reproduce:",
		"./lab bisect labs/uprobe-srcu.yaml --good " + gitcmd.Short(commit(8)) + " \\\n                --bad " + sha + " --benchmark uprobe-nop --producers 1 \\\n",
		"./lab history detect --lab uprobe-srcu",
	} {
		if !strings.Contains(m.Text, want) {
			t.Errorf("mail lacks %q:\n%s", want, m.Text)
		}
	}
	// The table's rows: the followed one moved by the subject's change,
	// the control did not move.
	row := regexp.MustCompile(`(?m)^\s+([0-9.]+)\s+±\s*([0-9.]+)%\s+([-+][0-9.]+)%\s+([0-9.]+)\s+±\s*([0-9.]+)%\s+(\S+)`)
	got := map[string]float64{}
	for _, m := range row.FindAllStringSubmatch(m.Text, -1) {
		got[m[6]], _ = strconv.ParseFloat(m[3], 64)
	}
	if math.Abs(got["uprobe-nop.p1.rate"]+1.2) > 0.01 || math.Abs(got["usermode-count.p1.rate"]) > 0.01 {
		t.Errorf("table changes %v:\n%s", got, m.Text)
	}
}

// An improvement has no mail; a regression at the same commit of a
// run (nothing in the source changed) says so and measures again.
// A change point that lab track --bisect took to a culprit shows it in
// the change table and the mail, with where the culprit moved the path
// (kept when lab track writes the same bisect's answer again without
// it); another series' culprit is not its own.
func TestCulpritOfAChangePoint(t *testing.T) {
	st := stream{lab: "uprobe-srcu", commits: 16, at: 9, stepPct: -1.2, noise: 3e-5}
	s := store(t, st.runs())
	h := load(t, s, lines.Options{MinPct: -1})
	key := series(t, h, "uprobe-nop").Key
	ctx := context.Background()
	where := insnprof.Where{Benchmark: "uprobe-nop", Producers: 1, Unit: "hit", Before: 950, After: 961.4, MeasuredPct: 1.2,
		Rows: []insnprof.Moved{{Function: "lab_delay", After: 11.4, Delta: 11.4, Share: 1}}}
	whereBlock := "where the culprit moved it (step 3 against step 2; exact: every instruction counted in one profiled boot a step):\n" + where.Text("  ")
	for _, c := range []history.Culprit{
		{Lab: st.lab, Line: key.String(), Good: commit(6), Bad: commit(10), Culprit: commit(9), Outcome: "culprit", BisectRun: "bisect-1", Where: whereBlock},
		{Lab: st.lab, Line: key.String(), Good: commit(6), Bad: commit(10), Culprit: commit(9), Outcome: "culprit", BisectRun: "bisect-1"},
		{Lab: st.lab, Line: "another series", Good: commit(6), Bad: commit(10), Culprit: commit(9), Outcome: "culprit", BisectRun: "bisect-2"},
	} {
		if err := s.AddCulprit(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	h = load(t, s, lines.Options{MinPct: -1})
	c := series(t, h, "uprobe-nop").Changes
	if len(c) != 1 || c[0].Culprit == nil || c[0].Culprit.BisectRun != "bisect-1" {
		t.Fatalf("changes %+v: want the culprit of bisect-1", c)
	}
	if text := Text(h.ChangeTables()); !strings.Contains(text, gitcmd.Short(commit(9))+" (bisect-1)") {
		t.Errorf("change table lacks the culprit:\n%s", text)
	}
	m := h.Mails()
	if len(m) != 1 || !strings.Contains(m[0].Text, "bisected: culprit "+gitcmd.Short(commit(9))+" (lab bisect run bisect-1)") {
		t.Fatalf("mail lacks the bisect:\n%v", m)
	}
	for _, want := range []string{"where the culprit moved it (step 3 against step 2;", "(lab bisect run bisect-1):", "lab_delay"} {
		if !strings.Contains(m[0].Text, want) {
			t.Errorf("mail lacks %q:\n%s", want, m[0].Text)
		}
	}
	for i, l := range strings.Split(m[0].Text, "\n") {
		if n := utf8.RuneCountInString(l); n > MailWidth {
			t.Errorf("line %d: %d columns: %q", i+1, n, l)
		}
	}
}

func TestMailOfTheSameCommit(t *testing.T) {
	if n := len(load(t, store(t, stream{lab: "l", commits: 12, at: 7, stepPct: 3, noise: 3e-5}.runs()), lines.Options{MinPct: -1}).Mails()); n != 0 {
		t.Errorf("%d mails of an improvement", n)
	}
	runs := stream{lab: "l", commits: 12, at: 7, stepPct: -3, noise: 3e-5}.runs()
	for _, r := range runs {
		r.Boots[0].Commit, r.Boots[0].CommitSeq = commit(0), 0
	}
	mails := load(t, store(t, runs), lines.Options{MinPct: -1}).Mails()
	if len(mails) != 1 {
		t.Fatalf("%d mails", len(mails))
	}
	for _, want := range []string{"the commit is the same on both sides", "./lab run labs/l.yaml --arch x86_64 --cpus 1", "another kernel image"} {
		if !strings.Contains(mails[0].Text, want) {
			t.Errorf("mail lacks %q:\n%s", want, mails[0].Text)
		}
	}
}

// Otava's CSV parses back: a line a boot, the figures as stored, the
// group in the branch column; Bencher's BMF parses back with the last
// level's figures.
func TestExports(t *testing.T) {
	st := stream{lab: "l", commits: 10, at: 5, stepPct: -1, noise: 3e-5}
	runs := st.runs()
	h := load(t, store(t, runs), lines.Options{MinPct: -1})
	recs, err := csv.NewReader(bytes.NewReader(h.OtavaCSV())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(recs[0], ","); got != "time,commit,branch,run,boot,uprobe-nop.p1.rate,usermode-count.p1.rate" {
		t.Errorf("header %s", got)
	}
	if len(recs) != 1+st.commits {
		t.Fatalf("%d lines, want %d", len(recs), 1+st.commits)
	}
	for i, rec := range recs[1:] {
		r := runs[i]
		when, err := time.Parse(OtavaTimeLayout, rec[0])
		if err != nil || !when.Equal(r.Started) {
			t.Errorf("line %d: time %q: %v", i+1, rec[0], err)
		}
		v, err := strconv.ParseFloat(rec[5], 64)
		if err != nil || v != r.Boots[0].Figures[0].Value || rec[1] != r.Boots[0].Commit || rec[3] != r.RunID {
			t.Errorf("line %d: %q", i+1, rec)
		}
		if rec[2] != "l/commits/x86_64-1cpu-tcg-icount/AMD_EPYC_7B13_x2_QEMU_7.2" {
			t.Errorf("branch %q", rec[2])
		}
	}
	data, err := h.BMF()
	if err != nil {
		t.Fatal(err)
	}
	var bmf map[string]map[string]BMFMetric
	if err := json.Unmarshal(data, &bmf); err != nil {
		t.Fatal(err)
	}
	name := "l/commits/x86_64-1cpu-tcg-icount/AMD_EPYC_7B13_x2_QEMU_7.2/uprobe-nop.p1"
	m, ok := bmf[name]["throughput"]
	if len(bmf) != 2 || !ok || m.Value != runs[len(runs)-1].Boots[0].Figures[0].Value || m.LowerValue != nil {
		t.Errorf("bmf %s", data)
	}
}

// The page stands alone: inline SVG charts, no address to fetch.
func TestHTMLIsSelfContained(t *testing.T) {
	st := stream{lab: "l", commits: 30, at: 16, stepPct: -1, noise: 3e-5}
	h := load(t, store(t, st.runs()), lines.Options{MinPct: -1})
	page, err := h.HTML()
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(page, `<figure class="chart">`); n != 2 {
		t.Errorf("%d charts, want 2", n)
	}
	if !strings.Contains(page, "<svg") || !strings.Contains(page, `<tr class="slower">`) {
		t.Error("no inline SVG, or the change point's row is not marked")
	}
	if m := regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?\s*(https?:)?//`).FindString(page); m != "" {
		t.Errorf("the page fetches %q", m)
	}
	if strings.Contains(page, "<link") || strings.Contains(page, "@import") || strings.Contains(page, "url(") {
		t.Error("the page loads a stylesheet or an asset")
	}
}

// A bisect's ends (its baseline and patched boots) join its steps on the
// commit line; an unknown lab is an error that names the labs there are.
func TestBisectEndsJoinTheCommitLine(t *testing.T) {
	base := stream{lab: "b", commits: 3, at: 3, stepPct: -5, noise: 0}.runs()
	r := &history.Run{Lab: "b", RunID: "bisect-1", Kind: history.KindBisect, LabVersion: "v1", Started: t0, Source: base[0].Source}
	// Measured as lab bisect --each does: the ends, then the step.
	for i, step := range []int{0, 2, 1} {
		b := base[step].Boots[0]
		b.Index, b.Variant, b.CommitSeq = i+1, []string{"baseline", "", "patched"}[step], 0
		r.Boots = append(r.Boots, b)
	}
	h := load(t, store(t, []*history.Run{r}), lines.Options{MinPct: -1})
	s := series(t, h, "uprobe-nop")
	if len(h.Lines) != 2 || s.Key.Variant != "" || len(s.Levels) != 3 {
		t.Fatalf("%d series; uprobe-nop's variant %q, %d levels", len(h.Lines), s.Key.Variant, len(s.Levels))
	}
	for i, l := range s.Levels {
		if l.Commit != base[i].Boots[0].Commit {
			t.Errorf("level %d: commit %s, want step %d's %s", i, gitcmd.Short(l.Commit), i, gitcmd.Short(base[i].Boots[0].Commit))
		}
	}
	_, err := lines.Load(context.Background(), store(t, []*history.Run{r}), lines.Options{Lab: "nope", MinPct: -1})
	if err == nil || !strings.Contains(err.Error(), `no lab "nope"`) || !strings.Contains(err.Error(), "it holds b") {
		t.Errorf("unknown lab: %v", err)
	}
}
