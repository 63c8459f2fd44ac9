package history

import (
	"context"
	"database/sql"
	"fmt"
	"lab/internal/testenv"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// writerEnv makes the test binary a writer process for the two-process
// test: "where|prefix|runs|boots".
const writerEnv = "LAB_HISTORY_TEST_WRITER"

func TestMain(m *testing.M) {
	if spec := os.Getenv(writerEnv); spec != "" {
		if err := writer(spec); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// writer adds runs prefix-1..prefix-runs, one transaction each, to the
// history at where.
func writer(spec string) error {
	f := strings.Split(spec, "|")
	if len(f) != 4 {
		return fmt.Errorf("bad %s %q", writerEnv, spec)
	}
	runs, _ := strconv.Atoi(f[2])
	boots, _ := strconv.Atoi(f[3])
	s, err := Open(context.Background(), f[0])
	if err != nil {
		return err
	}
	defer s.Close()
	return addRuns(s, f[1], runs, boots)
}

func addRuns(s *Store, prefix string, runs, boots int) error {
	for i := 1; i <= runs; i++ {
		if _, err := s.Add(context.Background(), fakeRun("lab", fmt.Sprintf("%s-%d", prefix, i), boots)); err != nil {
			return err
		}
	}
	return nil
}

// driver makes empty histories of one kind.
type driver struct {
	name string
	new  func(t *testing.T) string // the location of a new, empty history
}

// drivers are SQLite and a PostgreSQL server started for t.
func drivers(t *testing.T) []driver {
	sqlite := driver{"sqlite", func(t *testing.T) string { return filepath.Join(t.TempDir(), "history.db") }}
	if !testenv.PostgresInstalled() {
		return []driver{sqlite, {"postgres", func(t *testing.T) string {
			testenv.StartPostgres(t) // skips, saying why
			return ""
		}}}
	}
	pg := testenv.StartPostgres(t)
	return []driver{sqlite, {"postgres", pg.NewDB}}
}

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func testHost() Host {
	return Host{Name: "vm", CPUModel: "AMD EPYC", CPUs: 2, Kernel: "6.1.0-28-amd64", QEMUVersion: "7.2.22"}
}

// fakeBoot is boot i of a run: baseline for odd i, patched for even, two
// benchmark rows and a scaling ratio.
func fakeBoot(i int) Boot {
	v := []string{"patched", "baseline"}[i%2]
	base := 1e6 + float64(i)
	return Boot{
		Index: i, Variant: v, Commit: "c-" + v, KernelKey: "key-" + v, ImageSHA256: "img-" + v,
		Arch: "x86_64", CPUs: 2, Topology: "sockets=1,cores=2,threads=1", Clock: ClockWall, Accel: "tcg",
		Host: testHost(),
		Figures: []Figure{
			{Benchmark: "uprobe-nop", Producers: 1, Metric: MetricRate, Value: base},
			{Benchmark: "uprobe-nop", Producers: 2, Metric: MetricRate, Value: 1.9 * base},
			{Benchmark: "uprobe-nop", Producers: 2, Metric: MetricScaling, Value: 1.9},
			{Benchmark: "uprobe-nop", Tool: "bpf-bench", Producers: 1, Metric: MetricRate, Value: base / 2},
		},
	}
}

func fakeRun(lab, id string, boots int) *Run {
	r := &Run{
		Lab: lab, RunID: id, Kind: KindRun, LabVersion: "abc1234", Command: []string{"lab", "run", "labs/" + lab + ".yaml"},
		Started: t0,
		Source:  Source{Desc: "Debian linux-source-6.12", ID: "tarball-585a4a074597", TarballSHA256: strings.Repeat("5", 64), Commit: "base", KernelVersion: "6.12.117"},
		Series:  []Series{{Variant: "patched", Name: lab, Mode: "revert", SHA256: strings.Repeat("a", 64)}},
	}
	for i := 1; i <= boots; i++ {
		r.Boots = append(r.Boots, fakeBoot(i))
	}
	return r
}

// key is the series of a fake boot's row.
func key(variant, bench, tool string, producers int, metric string) LineKey {
	return LineKey{Lab: "lab", Variant: variant, Benchmark: bench, Tool: tool, Producers: producers, Metric: metric,
		Arch: "x86_64", CPUs: 2, Topology: "sockets=1,cores=2,threads=1", Clock: ClockWall, Accel: "tcg",
		HostClass: testHost().Class()}
}

func mustOpen(t *testing.T, where string) *Store {
	t.Helper()
	s, err := Open(context.Background(), where)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func mustAdd(t *testing.T, s *Store, r *Run, want int) {
	t.Helper()
	n, err := s.Add(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if n != want {
		t.Fatalf("run %s: added %d boots, want %d", r.RunID, n, want)
	}
}

func stats(t *testing.T, s *Store) Stats {
	t.Helper()
	st, err := s.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func values(t *testing.T, s *Store, k LineKey) []float64 {
	t.Helper()
	pts, err := s.Points(context.Background(), k)
	if err != nil {
		t.Fatal(err)
	}
	var v []float64
	for _, p := range pts {
		v = append(v, p.Value)
	}
	return v
}

// tables lists a database's tables, to see that a refused open wrote none.
func tables(t *testing.T, where string) []string {
	t.Helper()
	s := &Store{where: where, d: sqliteDialect}
	var err error
	if strings.HasPrefix(where, "postgres://") {
		s.d = postgresDialect
		s.db, err = openDB("pgx", where)
	} else {
		s.db, err = openDB("sqlite", where)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer s.db.Close()
	rows, err := s.db.Query(s.d.tables)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		rows.Scan(&n)
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// openDB opens a database as another program would: no schema check, no
// pragmas.
func openDB(driver, where string) (*sql.DB, error) { return sql.Open(driver, where) }

func nan() float64 { return math.NaN() }

// rawExec runs statements on a database as another program would.
func rawExec(t *testing.T, where string, stmts ...string) {
	t.Helper()
	name := "sqlite"
	if strings.HasPrefix(where, "postgres://") {
		name = "pgx"
	}
	db, err := openDB(name, where)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// storeCases run against every driver: both must pass all of them.
var storeCases = []struct {
	name string
	run  func(t *testing.T, d driver)
}{
	{"a run of several keeps each kernel's series", func(t *testing.T, d driver) {
		s := mustOpen(t, d.new(t))
		r := fakeRun("lab", "r1", 6)
		r.Series = []Series{{Variant: "v1", Name: "s", Mode: "apply", SHA256: "sha-v1"}, {Variant: "v2", Name: "s", Mode: "apply", SHA256: "sha-v2"}}
		for i := range r.Boots {
			if r.Boots[i].Variant == "patched" {
				r.Boots[i].Variant = []string{"v1", "v2"}[i/2%2]
			}
		}
		mustAdd(t, s, r, 6)
		for v, want := range map[string]string{"v1": "sha-v1", "v2": "sha-v2", "baseline": "sha-v1"} {
			pts, err := s.Points(context.Background(), key(v, "uprobe-nop", "", 1, MetricRate))
			if err != nil || len(pts) == 0 {
				t.Fatalf("%s: %d points, %v", v, len(pts), err)
			}
			for _, p := range pts {
				if p.SeriesSHA256 != want {
					t.Errorf("boot %d of %s: series sha256 %q, want %q (its kernel's; the first series' for the baseline)", p.Boot, v, p.SeriesSHA256, want)
				}
			}
		}
		mustAdd(t, s, r, 0) // the same run again: nothing new, its series kept once
	}},
	{"a run's boots read back as series", func(t *testing.T, d driver) {
		s := mustOpen(t, d.new(t))
		r := fakeRun("lab", "r1", 4)
		mustAdd(t, s, r, 4)
		if got, want := stats(t, s), (Stats{Runs: 1, Boots: 4, Figures: 16}); got != want {
			t.Errorf("stats %+v, want %+v", got, want)
		}
		keys, err := s.LineKeys(context.Background(), "")
		if err != nil {
			t.Fatal(err)
		}
		var want []LineKey
		for _, v := range []string{"baseline", "patched"} {
			want = append(want, key(v, "uprobe-nop", "", 1, MetricRate), key(v, "uprobe-nop", "bpf-bench", 1, MetricRate),
				key(v, "uprobe-nop", "", 2, MetricRate), key(v, "uprobe-nop", "", 2, MetricScaling))
		}
		slices.SortFunc(want, func(a, b LineKey) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
		slices.SortFunc(keys, func(a, b LineKey) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
		if !reflect.DeepEqual(keys, want) {
			t.Errorf("series:\n%v\nwant\n%v", keys, want)
		}
		if other, _ := s.LineKeys(context.Background(), "another-lab"); len(other) != 0 {
			t.Errorf("another lab's series: %v", other)
		}
		pts, err := s.Points(context.Background(), key("patched", "uprobe-nop", "", 1, MetricRate))
		if err != nil {
			t.Fatal(err)
		}
		wantPts := []Point{
			{Lab: "lab", RunID: "r1", Kind: KindRun, LabVersion: "abc1234", Started: t0, Boot: 2, Variant: "patched", Commit: "c-patched",
				KernelKey: "key-patched", ImageSHA256: "img-patched", SourceID: "tarball-585a4a074597", KernelVersion: "6.12.117",
				SeriesSHA256: strings.Repeat("a", 64), HostName: "vm", Value: 1e6 + 2},
		}
		wantPts = append(wantPts, wantPts[0])
		wantPts[1].Boot, wantPts[1].Value = 4, 1e6+4
		if !reflect.DeepEqual(pts, wantPts) {
			t.Errorf("points:\n%+v\nwant\n%+v", pts, wantPts)
		}
	}},
	{"adding a run twice adds nothing; a resumed run adds its new boots", func(t *testing.T, d driver) {
		s := mustOpen(t, d.new(t))
		mustAdd(t, s, fakeRun("lab", "r1", 4), 4)
		before := stats(t, s)
		mustAdd(t, s, fakeRun("lab", "r1", 4), 0)
		if got := stats(t, s); got != before {
			t.Errorf("after the second add: %+v, want %+v", got, before)
		}
		mustAdd(t, s, fakeRun("lab", "r1", 6), 2)
		if got := stats(t, s); got.Runs != 1 || got.Boots != 6 {
			t.Errorf("after the resumed run: %+v, want 1 run, 6 boots", got)
		}
		// The same run id in another lab is another run.
		mustAdd(t, s, fakeRun("lab2", "r1", 1), 1)
	}},
	{"a boot seen under two runs (shard and merge) is kept once by its digest", func(t *testing.T, d driver) {
		s := mustOpen(t, d.new(t))
		shard := fakeRun("lab", "r-shard1-of-2", 2)
		for i := range shard.Boots {
			shard.Boots[i].Digest = fmt.Sprintf("digest-%d", i)
		}
		mustAdd(t, s, shard, 2)
		merged := fakeRun("lab", "r", 3)
		merged.Kind = KindMerge
		for i := range merged.Boots {
			merged.Boots[i].Digest = fmt.Sprintf("digest-%d", i)
		}
		mustAdd(t, s, merged, 1)
		mustAdd(t, s, fakeRun("lab", "no-digests", 3), 3) // no digest: only the run's key counts
		if got := stats(t, s).Boots; got != 6 {
			t.Errorf("%d boots, want 6", got)
		}
	}},
	{"another run under a stored run's id is refused", func(t *testing.T, d driver) {
		s := mustOpen(t, d.new(t))
		mustAdd(t, s, fakeRun("lab", "r1", 2), 2)
		before := stats(t, s)
		for _, change := range []func(*Run){
			func(r *Run) { r.Kind = KindBisect },
			func(r *Run) { r.Source.ID = "git-0123" },
			func(r *Run) { r.Source.Commit = "other" },
			func(r *Run) { r.Series[0].SHA256 = "b" },
		} {
			r := fakeRun("lab", "r1", 3)
			change(r)
			_, err := s.Add(context.Background(), r)
			if err == nil || !strings.Contains(err.Error(), "another run under this id") {
				t.Errorf("add: %v, want another run under this id", err)
			}
		}
		if got := stats(t, s); got != before {
			t.Errorf("refused adds wrote: %+v, want %+v", got, before)
		}
	}},
	{"a run the history must not keep is refused whole", func(t *testing.T, d driver) {
		s := mustOpen(t, d.new(t))
		for _, c := range []struct {
			change func(*Run)
			want   string
		}{
			{func(r *Run) { r.Lab = "" }, "no lab name"},
			{func(r *Run) { r.RunID = "" }, "no run id"},
			{func(r *Run) { r.Kind = "compare" }, `kind "compare"`},
			{func(r *Run) { r.Started = time.Time{} }, "no start time"},
			{func(r *Run) { r.Boots[2].Index = 2 }, "boot 2 twice"},
			{func(r *Run) { r.Boots[2].Index = 0 }, "boots count from 1"},
			{func(r *Run) { r.Boots[2].KernelKey = "" }, "boot 3: no kernel cache key"},
			{func(r *Run) { r.Boots[2].Arch = "" }, "no arch"},
			{func(r *Run) { r.Boots[2].CPUs = 0 }, "0 vCPUs"},
			{func(r *Run) { r.Boots[2].Topology = "" }, "no guest topology"},
			{func(r *Run) { r.Boots[2].Clock = "" }, `clock ""`},
			{func(r *Run) { r.Boots[2].Clock = "tsc" }, `clock "tsc"`},
			{func(r *Run) { r.Boots[2].Accel = "" }, "no accelerator"},
			{func(r *Run) { r.Boots[2].Host.CPUModel = "" }, "no host fingerprint"},
			{func(r *Run) { r.Boots[2].Host.CPUs = 0 }, "no host fingerprint"},
			{func(r *Run) { r.Boots[2].CommitSeq = -1 }, "commit place -1"},
			{func(r *Run) { r.Boots[2].Commit, r.Boots[2].CommitSeq = "", 4 }, "without a commit"},
			{func(r *Run) { r.Boots[2].Figures[1].Benchmark = "" }, "without a benchmark"},
			{func(r *Run) { r.Boots[2].Figures[1].Producers = 0 }, "0 producers"},
			{func(r *Run) { r.Boots[2].Figures[1].Metric = "" }, `metric ""`},
			{func(r *Run) { r.Boots[2].Figures[1].Value = 0 }, "not a positive number"},
			{func(r *Run) { r.Boots[2].Figures[1].Value = -1 }, "not a positive number"},
			{func(r *Run) { r.Boots[2].Figures[1].Value = nan() }, "not a positive number"},
			{func(r *Run) { r.Boots[2].Figures[1] = r.Boots[2].Figures[0] }, "twice"},
		} {
			r := fakeRun("lab", "r1", 4)
			c.change(r)
			_, err := s.Add(context.Background(), r)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("add: %v, want %q", err, c.want)
			}
		}
		if got := stats(t, s); got != (Stats{}) {
			t.Errorf("refused runs wrote %+v", got)
		}
	}},
	{"a series without any of its key's fields is an error", func(t *testing.T, d driver) {
		s := mustOpen(t, d.new(t))
		mustAdd(t, s, fakeRun("lab", "r1", 2), 2)
		full := key("baseline", "uprobe-nop", "", 1, MetricRate)
		if got := values(t, s, full); len(got) != 1 {
			t.Fatalf("full key: %v, want one point", got)
		}
		for _, c := range []struct {
			drop func(*LineKey)
			want string
		}{
			{func(k *LineKey) { k.Lab = "" }, "no lab"},
			{func(k *LineKey) { k.Benchmark = "" }, "no benchmark"},
			{func(k *LineKey) { k.Producers = 0 }, "no producers"},
			{func(k *LineKey) { k.Metric = "" }, "no metric"},
			{func(k *LineKey) { k.Arch = "" }, "no arch"},
			{func(k *LineKey) { k.CPUs = 0 }, "no vCPUs"},
			{func(k *LineKey) { k.Topology = "" }, "no topology"},
			{func(k *LineKey) { k.Clock = "" }, "no clock"},
			{func(k *LineKey) { k.Accel = "" }, "no accelerator"},
			{func(k *LineKey) { k.HostClass = "" }, "no host class"},
			{func(k *LineKey) { k.Clock, k.HostClass = "", "" }, "no clock, host class"},
		} {
			k := full
			c.drop(&k)
			if _, err := s.Points(context.Background(), k); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("points of %v: %v, want %q", k, err, c.want)
			}
		}
	}},
	{"clocks, host classes, shapes, accelerators and measuring methods never share a series", func(t *testing.T, d driver) {
		s := mustOpen(t, d.new(t))
		r := fakeRun("lab", "r1", 0)
		vary := []func(*Boot){
			func(*Boot) {},
			func(b *Boot) { b.Clock = ClockICount },
			func(b *Boot) { b.Host.QEMUVersion = "8.2.1" },
			func(b *Boot) { b.Host.CPUModel = "Intel(R) Xeon(R) Processor" },
			func(b *Boot) { b.Host.CPUs = 96 },
			func(b *Boot) { b.Accel = "kvm" },
			func(b *Boot) { b.Topology = "sockets=2,cores=1,threads=1" },
			func(b *Boot) { b.Arch = "arm64" },
			func(b *Boot) { b.Method = "producer-program" },
			// The same class: a QEMU point release, another host kernel
			// or name, blanks in the CPU model.
			func(b *Boot) { b.Host.QEMUVersion = "7.2.0" },
			func(b *Boot) { b.Host.Kernel, b.Host.Name = "6.1.0-30-amd64", "other" },
			func(b *Boot) { b.Host.CPUModel = "AMD  EPYC " },
		}
		for i, v := range vary {
			b := fakeBoot(1)
			b.Index = i + 1
			b.Figures = []Figure{{Benchmark: "uprobe-nop", Producers: 1, Metric: MetricRate, Value: float64(i + 1)}}
			v(&b)
			r.Boots = append(r.Boots, b)
		}
		mustAdd(t, s, r, len(vary))
		keys, err := s.LineKeys(context.Background(), "lab")
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) != 9 {
			t.Errorf("%d series, want 9: %v", len(keys), keys)
		}
		seen := map[float64]LineKey{}
		for _, k := range keys {
			vals := values(t, s, k)
			for _, v := range vals {
				if prev, ok := seen[v]; ok {
					t.Errorf("boot %v in two series: %v and %v", v, prev, k)
				}
				seen[v] = k
			}
			if k == key("baseline", "uprobe-nop", "", 1, MetricRate) {
				if !reflect.DeepEqual(vals, []float64{1, 10, 11, 12}) {
					t.Errorf("the first boot's series: %v, want the boots 1, 10, 11 and 12", vals)
				}
			} else if len(vals) != 1 {
				t.Errorf("series %v: %v, want one boot", k, vals)
			}
		}
		if len(seen) != len(vary) {
			t.Errorf("%d boots in series, want %d", len(seen), len(vary))
		}
	}},
	{"points follow commit order along the branch, then time", func(t *testing.T, d driver) {
		s := mustOpen(t, d.new(t))
		track := func(id string, started time.Time, commits ...int) *Run {
			r := fakeRun("lab", id, 0)
			r.Kind, r.Started = KindTrack, started
			for i, c := range commits {
				b := fakeBoot(1)
				b.Index, b.Variant = i+1, ""
				if c > 0 {
					b.Commit, b.CommitSeq = fmt.Sprintf("commit-%d", c), c
				}
				b.Figures = []Figure{{Benchmark: "uprobe-nop", Producers: 1, Metric: MetricRate, Value: float64(100*c + i)}}
				r.Boots = append(r.Boots, b)
			}
			return r
		}
		// Later commits measured first, then earlier ones; a bisect's boot
		// of a tracked commit (no place of its own) sorts with it; boots of
		// no known commit come last, by time.
		mustAdd(t, s, track("late", t0, 5, 6, 0), 3)
		mustAdd(t, s, track("early", t0.Add(time.Hour), 2, 1, 0), 3)
		bisect := track("bisect", t0.Add(-time.Hour), 0)
		bisect.Boots[0].Commit, bisect.Boots[0].Figures[0].Value = "commit-5", 501
		mustAdd(t, s, bisect, 1)
		got := values(t, s, key("", "uprobe-nop", "", 1, MetricRate))
		want := []float64{101, 200, 501, 500, 601, 2, 2}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("points %v, want %v", got, want)
		}
	}},
	{"a failed boot is kept but makes no point", func(t *testing.T, d driver) {
		s := mustOpen(t, d.new(t))
		r := fakeRun("lab", "r1", 4)
		r.Boots[1].Failure = "kernel-problem"
		mustAdd(t, s, r, 4)
		if got := stats(t, s).Boots; got != 4 {
			t.Errorf("%d boots, want 4", got)
		}
		if got := values(t, s, key("patched", "uprobe-nop", "", 1, MetricRate)); !reflect.DeepEqual(got, []float64{1e6 + 4}) {
			t.Errorf("points %v, want boot 4's only", got)
		}
	}},
	{"a history opened again keeps its boots and schema", func(t *testing.T, d driver) {
		where := d.new(t)
		s := mustOpen(t, where)
		mustAdd(t, s, fakeRun("lab", "r1", 3), 3)
		s.Close()
		s = mustOpen(t, where)
		if got := stats(t, s).Boots; got != 3 {
			t.Errorf("reopened: %d boots, want 3", got)
		}
		if v, err := s.d.version(context.Background(), s.db); err != nil || v != len(migrations) {
			t.Errorf("schema version %d %v, want %d", v, err, len(migrations))
		}
	}},
	{"a new migration step runs once; then this lab refuses the newer schema", func(t *testing.T, d driver) {
		where := d.new(t)
		s := mustOpen(t, where)
		mustAdd(t, s, fakeRun("lab", "r1", 2), 2)
		s.Close()
		next := append(slices.Clip(migrations), migration{"a test's step", []string{`CREATE TABLE notes (boot BIGINT NOT NULL REFERENCES boots (id), note TEXT NOT NULL)`}})
		for range 2 {
			s, err := open(context.Background(), where, next)
			if err != nil {
				t.Fatal(err)
			}
			if v, err := s.d.version(context.Background(), s.db); err != nil || v != len(next) {
				t.Errorf("schema version %d %v, want %d", v, err, len(next))
			}
			if got := stats(t, s).Boots; got != 2 {
				t.Errorf("after the step: %d boots, want 2", got)
			}
			s.Close()
		}
		before := tables(t, where)
		_, err := Open(context.Background(), where)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("schema is version %d, newer than this lab's %d", len(next), len(migrations))) {
			t.Errorf("open of a newer schema: %v", err)
		}
		if after := tables(t, where); !reflect.DeepEqual(after, before) {
			t.Errorf("refused open changed the tables: %v, was %v", after, before)
		}
	}},
	{"a schema version far ahead is refused", func(t *testing.T, d driver) {
		where := d.new(t)
		mustOpen(t, where).Close()
		rawExec(t, where, `UPDATE schema_version SET version = 99`)
		_, err := Open(context.Background(), where)
		if err == nil || !strings.Contains(err.Error(), "version 99, newer than this lab's") {
			t.Errorf("open: %v", err)
		}
	}},
	{"another tool's schema_version or lab's table names without one are refused", func(t *testing.T, d driver) {
		for _, foreign := range [][]string{
			{`CREATE TABLE schema_version (version INTEGER NOT NULL)`, `INSERT INTO schema_version VALUES (3)`},
			{`CREATE TABLE schema_version (app TEXT NOT NULL, version INTEGER NOT NULL)`, `INSERT INTO schema_version VALUES ('flyway', 3)`},
			{`CREATE TABLE runs (name TEXT)`},
		} {
			where := d.new(t)
			rawExec(t, where, foreign...)
			before := tables(t, where)
			_, err := Open(context.Background(), where)
			if err == nil || !strings.Contains(err.Error(), "not lab's history") {
				t.Errorf("open after %q: %v, want not lab's history", foreign, err)
			}
			if after := tables(t, where); !reflect.DeepEqual(after, before) {
				t.Errorf("refused open changed the tables: %v, was %v", after, before)
			}
		}
	}},
	{"two stores in one process writing at once lose nothing", func(t *testing.T, d driver) {
		where := d.new(t)
		mustOpen(t, where) // made once: the writers race on adding, not on making
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for w := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s, err := Open(context.Background(), where)
				if err != nil {
					errs[w] = err
					return
				}
				defer s.Close()
				// Both add their own runs and a shared one, which lands once.
				if errs[w] = addRuns(s, fmt.Sprintf("w%d", w), 20, 5); errs[w] == nil {
					errs[w] = addRuns(s, "shared", 5, 5)
				}
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		checkLanded(t, mustOpen(t, where), []string{"w0", "w1", "shared"}, []int{20, 20, 5}, 5)
	}},
	{"two lab processes writing at once lose nothing", func(t *testing.T, d driver) {
		where := d.new(t) // not made: the processes race on making it too
		procs := make([]*exec.Cmd, 2)
		for w := range procs {
			procs[w] = exec.Command(os.Args[0], "-test.run=^$")
			procs[w].Env = append(os.Environ(), fmt.Sprintf("%s=%s|p%d|30|5", writerEnv, where, w))
		}
		outs := make([][]byte, 2)
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for w, p := range procs {
			wg.Add(1)
			go func() { defer wg.Done(); outs[w], errs[w] = p.CombinedOutput() }()
		}
		wg.Wait()
		for w := range procs {
			if errs[w] != nil {
				t.Fatalf("writer %d: %v\n%s", w, errs[w], outs[w])
			}
		}
		checkLanded(t, mustOpen(t, where), []string{"p0", "p1"}, []int{30, 30}, 5)
	}},
}

// checkLanded checks that every boot of the runs prefix-1..prefix-n is in
// the history, once.
func checkLanded(t *testing.T, s *Store, prefixes []string, runs []int, boots int) {
	t.Helper()
	total := 0
	want := map[string]bool{}
	for i, p := range prefixes {
		total += runs[i]
		for r := 1; r <= runs[i]; r++ {
			for b := 1; b <= boots; b++ {
				want[fmt.Sprintf("%s-%d/%d", p, r, b)] = true
			}
		}
	}
	if got, w := stats(t, s), (Stats{Runs: total, Boots: total * boots, Figures: total * boots * 4}); got != w {
		t.Errorf("stats %+v, want %+v", got, w)
	}
	var pts []Point
	for _, v := range []string{"baseline", "patched"} {
		p, err := s.Points(context.Background(), key(v, "uprobe-nop", "", 1, MetricRate))
		if err != nil {
			t.Fatal(err)
		}
		pts = append(pts, p...)
	}
	for _, p := range pts {
		k := fmt.Sprintf("%s/%d", p.RunID, p.Boot)
		if !want[k] {
			t.Errorf("boot %s: not written, or twice", k)
		}
		delete(want, k)
	}
	if len(want) > 0 {
		t.Errorf("%d boots lost", len(want))
	}
}

func TestStore(t *testing.T) {
	for _, d := range drivers(t) {
		t.Run(d.name, func(t *testing.T) {
			for _, c := range storeCases {
				t.Run(c.name, func(t *testing.T) {
					t.Parallel() // each case has its own history
					c.run(t, d)
				})
			}
		})
	}
}
