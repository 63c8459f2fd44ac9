package history

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// BusyTimeout is how long an SQLite writer waits for another to finish
// before it gives up: two lab processes ingesting at once both land.
const BusyTimeout = 30 * time.Second

// Store is a history: an SQLite file or a PostgreSQL database.
type Store struct {
	db    *sql.DB
	d     dialect
	where string // the file, or the URL without its password
}

// Open opens the history at where: a postgres:// or postgresql:// URL, or
// else an SQLite file's path (made when missing). It makes or migrates the
// schema, and refuses, writing nothing, a file that is not SQLite or is
// another program's database, and a schema newer than this lab's.
func Open(ctx context.Context, where string) (*Store, error) {
	return open(ctx, where, migrations)
}

func open(ctx context.Context, where string, steps []migration) (*Store, error) {
	if strings.HasPrefix(where, "postgres://") || strings.HasPrefix(where, "postgresql://") {
		return openPostgres(ctx, where, steps)
	}
	return openSQLite(ctx, where, steps)
}

func openSQLite(ctx context.Context, path string, steps []migration) (*Store, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", path, err)
	}
	// A file: URI, so that a path with ? or # in it stays a path.
	// _txlock=immediate: a writing transaction takes the write lock at
	// BEGIN, waiting out another writer (busy timeout) instead of failing
	// when it upgrades from reading.
	u := url.URL{Scheme: "file", Path: abs, RawQuery: url.Values{
		"_busy_timeout": {fmt.Sprint(BusyTimeout.Milliseconds())},
		"_txlock":       {"immediate"},
		"_foreign_keys": {"1"},
	}.Encode()}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", path, err)
	}
	s := &Store{db: db, d: sqliteDialect, where: path}
	// Look before writing anything: WAL mode is written into the file.
	if err := s.refuse(ctx, steps); err != nil {
		db.Close()
		return nil, err
	}
	if err := walMode(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("history %s: cannot use write-ahead logging: %w", path, err)
	}
	if err := s.d.migrate(ctx, db, steps); err != nil {
		db.Close()
		return nil, s.explain(err)
	}
	return s, nil
}

// walMode puts the file in write-ahead logging, where readers do not block
// the writer. Switching needs the file to itself, and SQLite answers
// "busy" at once, without waiting, when another process holds it (as when
// two processes make a new history at once): so try again until
// BusyTimeout.
func walMode(ctx context.Context, db *sql.DB) error {
	deadline := time.Now().Add(BusyTimeout)
	for {
		var mode string
		err := db.QueryRowContext(ctx, `PRAGMA journal_mode = WAL`).Scan(&mode)
		var se *sqlite.Error
		switch {
		case err == nil && mode == "wal":
			return nil
		case err == nil:
			return fmt.Errorf("the journal mode stays %q", mode)
		case !errors.As(err, &se) || se.Code()&0xff != sqlite3.SQLITE_BUSY || time.Now().After(deadline):
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func openPostgres(ctx context.Context, rawURL string, steps []migration) (*Store, error) {
	where := rawURL
	if u, err := url.Parse(rawURL); err == nil {
		where = u.Redacted()
	}
	db, err := sql.Open("pgx", rawURL)
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", where, err)
	}
	s := &Store{db: db, d: postgresDialect, where: where}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("history %s: cannot connect: %w", where, err)
	}
	if err := s.refuse(ctx, steps); err != nil {
		db.Close()
		return nil, err
	}
	if err := s.d.migrate(ctx, db, steps); err != nil {
		db.Close()
		return nil, s.explain(err)
	}
	return s, nil
}

// refuse reads the schema version and refuses a database lab must not
// write to, before anything is written.
func (s *Store) refuse(ctx context.Context, steps []migration) error {
	v, err := s.d.version(ctx, s.db)
	if err == nil {
		err = newer(v, steps)
	}
	var se *sqlite.Error
	if err == nil || errors.As(err, &se) {
		return s.explain(err)
	}
	return fmt.Errorf("history %s (%s): %w: refused, nothing written", s.where, s.d.name, err)
}

// explain says in words what a database error means for the history.
func (s *Store) explain(err error) error {
	if err == nil {
		return nil
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_NOTADB:
			return fmt.Errorf("history %s: not an SQLite database (another kind of file, or its header is damaged): refused, nothing written", s.where)
		case sqlite3.SQLITE_CORRUPT:
			return fmt.Errorf("history %s: a damaged SQLite database (%v): refused, nothing written; restore it from a copy or move it away", s.where, err)
		case sqlite3.SQLITE_CANTOPEN:
			return fmt.Errorf("history %s: cannot open it (a missing folder, or no permission): %w", s.where, err)
		}
	}
	return fmt.Errorf("history %s (%s): %w", s.where, s.d.name, err)
}

// Close closes the store.
func (s *Store) Close() error { return s.db.Close() }

// String says where the history is: its file, or its URL without password.
func (s *Store) String() string { return s.d.name + " " + s.where }

const timeLayout = "2006-01-02T15:04:05.000000000Z07:00" // fixed width: sorts as text

// Add stores a run's boots that the history does not have yet, in one
// transaction, and says how many it added. A boot is known by its run (lab
// and run id) and index, or by its digest: adding a run twice adds nothing.
// A run id already stored with another kind, source or series is refused.
func (s *Store) Add(ctx context.Context, r *Run) (int, error) {
	if err := r.check(); err != nil {
		return 0, fmt.Errorf("history: %w", err)
	}
	added, err := s.add(ctx, r)
	if err != nil {
		return 0, fmt.Errorf("history %s: add run %s of lab %s: %w", s.where, r.RunID, r.Lab, err)
	}
	return added, nil
}

func (s *Store) add(ctx context.Context, r *Run) (int, error) {
	q := s.d.q
	cmd, err := json.Marshal(r.Command)
	if err != nil {
		return 0, err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	var run int64
	err = tx.QueryRowContext(ctx, q(`INSERT INTO runs (lab, run_id, kind, lab_version, command, started,
		source_desc, source_id, source_tarball_sha256, source_commit, kernel_version,
		series_name, series_mode, series_sha256)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING id`),
		r.Lab, r.RunID, r.Kind, r.LabVersion, string(cmd), r.Started.UTC().Format(timeLayout),
		r.Source.Desc, r.Source.ID, r.Source.TarballSHA256, r.Source.Commit, r.Source.KernelVersion,
		r.first().Name, r.first().Mode, r.first().SHA256).Scan(&run)
	if errors.Is(err, sql.ErrNoRows) {
		run, err = sameRun(ctx, tx, q, r)
	}
	if err != nil {
		return 0, err
	}
	if err := addSeries(ctx, tx, q, run, r.Series); err != nil {
		return 0, err
	}
	insBoot, err := tx.PrepareContext(ctx, q(`INSERT INTO boots (run, boot_index, digest, variant, commit_id,
		kernel_key, image_sha256, arch, cpus, topology, clock, accel,
		host_name, host_cpu_model, host_cpus, host_kernel, qemu_version, host_class, failure, method)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING id`))
	if err != nil {
		return 0, err
	}
	defer insBoot.Close()
	insFigure, err := tx.PrepareContext(ctx, q(`INSERT INTO figures (boot, benchmark, tool, producers, metric, value)
		VALUES (?, ?, ?, ?, ?, ?)`))
	if err != nil {
		return 0, err
	}
	defer insFigure.Close()
	insCommit, err := tx.PrepareContext(ctx, q(`INSERT INTO commits (commit_id, seq) VALUES (?, ?) ON CONFLICT DO NOTHING`))
	if err != nil {
		return 0, err
	}
	defer insCommit.Close()
	added := 0
	for _, b := range r.Boots {
		var boot int64
		err := insBoot.QueryRowContext(ctx, run, b.Index, sql.NullString{String: b.Digest, Valid: b.Digest != ""},
			b.Variant, b.Commit, b.KernelKey, b.ImageSHA256, b.Arch, b.CPUs, b.Topology, b.Clock, b.Accel,
			b.Host.Name, b.Host.CPUModel, b.Host.CPUs, b.Host.Kernel, b.Host.QEMUVersion, b.Host.Class(), b.Failure, b.Method).Scan(&boot)
		if errors.Is(err, sql.ErrNoRows) {
			continue // stored already, under this run or (its digest) another
		}
		if err != nil {
			return 0, fmt.Errorf("boot %d: %w", b.Index, err)
		}
		for _, f := range b.Figures {
			if _, err := insFigure.ExecContext(ctx, boot, f.Benchmark, f.Tool, f.Producers, f.Metric, f.Value); err != nil {
				return 0, fmt.Errorf("boot %d, %s p%d %s: %w", b.Index, f.Benchmark, f.Producers, f.Metric, err)
			}
		}
		if b.CommitSeq > 0 {
			if _, err := insCommit.ExecContext(ctx, b.Commit, b.CommitSeq); err != nil {
				return 0, fmt.Errorf("boot %d, commit %s: %w", b.Index, b.Commit, err)
			}
		}
		added++
	}
	for _, c := range r.Culprits {
		if err := s.addCulprit(ctx, tx, c); err != nil {
			return 0, err
		}
	}
	return added, tx.Commit()
}

// addSeries stores each series of run by its kernel's variant (once: a
// run added again has them).
func addSeries(ctx context.Context, tx *sql.Tx, q func(string) string, run int64, list []Series) error {
	for _, ser := range list {
		if _, err := tx.ExecContext(ctx, q(`INSERT INTO run_series (run, variant, name, mode, sha256) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT DO NOTHING`), run, ser.Variant, ser.Name, ser.Mode, ser.SHA256); err != nil {
			return fmt.Errorf("series %s: %w", ser.Variant, err)
		}
	}
	return nil
}

// sameRun finds a stored run with r's lab and id, refusing it when it is
// another run under the same id.
func sameRun(ctx context.Context, tx *sql.Tx, q func(string) string, r *Run) (int64, error) {
	var id int64
	var kind, source, commit, series string
	err := tx.QueryRowContext(ctx, q(`SELECT id, kind, source_id, source_commit, series_sha256 FROM runs WHERE lab = ? AND run_id = ?`),
		r.Lab, r.RunID).Scan(&id, &kind, &source, &commit, &series)
	if err != nil {
		return 0, err
	}
	var differ []string
	for _, d := range []struct{ what, old, new string }{
		{"kind", kind, r.Kind}, {"source", source, r.Source.ID}, {"base commit", commit, r.Source.Commit}, {"series sha256", series, r.first().SHA256},
	} {
		if d.old != d.new {
			differ = append(differ, fmt.Sprintf("%s %q, now %q", d.what, d.old, d.new))
		}
	}
	if len(differ) > 0 {
		return 0, fmt.Errorf("the history has another run under this id (%s): refused, nothing written", strings.Join(differ, "; "))
	}
	return id, nil
}

// LineKeys lists the lines the history holds, of one lab or ("") of
// every lab. Failed boots make no line.
func (s *Store) LineKeys(ctx context.Context, lab string) ([]LineKey, error) {
	stmt := `SELECT DISTINCT r.lab, b.variant, f.benchmark, f.tool, f.producers, f.metric,
		b.arch, b.cpus, b.topology, b.clock, b.accel, b.host_class, b.method
		FROM figures f JOIN boots b ON b.id = f.boot JOIN runs r ON r.id = b.run
		WHERE b.failure = ''`
	var args []any
	if lab != "" {
		stmt += ` AND r.lab = ?`
		args = append(args, lab)
	}
	rows, err := s.db.QueryContext(ctx, s.d.q(stmt), args...)
	if err != nil {
		return nil, s.explain(err)
	}
	defer rows.Close()
	var keys []LineKey
	for rows.Next() {
		var k LineKey
		if err := rows.Scan(&k.Lab, &k.Variant, &k.Benchmark, &k.Tool, &k.Producers, &k.Metric,
			&k.Arch, &k.CPUs, &k.Topology, &k.Clock, &k.Accel, &k.HostClass, &k.Method); err != nil {
			return nil, s.explain(err)
		}
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil {
		return nil, s.explain(err)
	}
	// Sorted here, not by the database: PostgreSQL's collation is the
	// server's locale, and both drivers must list alike.
	slices.SortFunc(keys, func(a, b LineKey) int {
		return cmp.Or(cmp.Compare(a.Lab, b.Lab), cmp.Compare(a.Benchmark, b.Benchmark), cmp.Compare(a.Tool, b.Tool),
			cmp.Compare(a.Producers, b.Producers), cmp.Compare(a.Metric, b.Metric), cmp.Compare(a.Variant, b.Variant),
			cmp.Compare(a.Arch, b.Arch), cmp.Compare(a.CPUs, b.CPUs), cmp.Compare(a.Topology, b.Topology),
			cmp.Compare(a.Clock, b.Clock), cmp.Compare(a.Accel, b.Accel), cmp.Compare(a.HostClass, b.HostClass),
			cmp.Compare(a.Method, b.Method))
	})
	return keys, nil
}

// Points reads one series: the figure of every boot that delivered it, in
// commit order along the branch where the commit's place is known, then
// by the run's start time and the boot's index. A key without its clock,
// host class or any other required field is an error.
//
// The query names its tables from the lab's runs down to their boots and
// their figures, CROSS JOIN keeping SQLite to that order (boots_run_shape):
// started from a benchmark's figures or a shape's boots it read every
// boot of the history for each line.
func (s *Store) Points(ctx context.Context, k LineKey) ([]Point, error) {
	if err := k.Check(); err != nil {
		return nil, fmt.Errorf("history: series %s: %w", k, err)
	}
	stmt := `SELECT r.lab, r.run_id, r.kind, r.lab_version, r.started, b.boot_index, b.variant, b.commit_id, c.seq,
		b.kernel_key, b.image_sha256, r.source_id, r.kernel_version, COALESCE(s.sha256, r.series_sha256), b.host_name, f.value
		FROM runs r CROSS JOIN boots b CROSS JOIN figures f
		LEFT JOIN commits c ON c.commit_id = b.commit_id
		LEFT JOIN run_series s ON s.run = r.id AND s.variant = b.variant
		WHERE b.run = r.id AND f.boot = b.id AND b.failure = '' AND r.lab = ? AND b.variant = ? AND f.benchmark = ? AND f.tool = ? AND f.producers = ?
		AND f.metric = ? AND b.arch = ? AND b.cpus = ? AND b.topology = ? AND b.clock = ? AND b.accel = ? AND b.host_class = ? AND b.method = ?`
	rows, err := s.db.QueryContext(ctx, s.d.q(stmt), k.Lab, k.Variant, k.Benchmark, k.Tool, k.Producers,
		k.Metric, k.Arch, k.CPUs, k.Topology, k.Clock, k.Accel, k.HostClass, k.Method)
	if err != nil {
		return nil, s.explain(err)
	}
	defer rows.Close()
	var pts []Point
	for rows.Next() {
		var p Point
		var started string
		var seq sql.NullInt64
		if err := rows.Scan(&p.Lab, &p.RunID, &p.Kind, &p.LabVersion, &started, &p.Boot, &p.Variant, &p.Commit, &seq,
			&p.KernelKey, &p.ImageSHA256, &p.SourceID, &p.KernelVersion, &p.SeriesSHA256, &p.HostName, &p.Value); err != nil {
			return nil, s.explain(err)
		}
		if p.Started, err = time.Parse(time.RFC3339Nano, started); err != nil {
			return nil, s.explain(fmt.Errorf("run %s: start time %q: %w", p.RunID, started, err))
		}
		p.CommitSeq = int(seq.Int64)
		pts = append(pts, p)
	}
	if err := rows.Err(); err != nil {
		return nil, s.explain(err)
	}
	slices.SortStableFunc(pts, func(a, b Point) int {
		return cmp.Or(cmpSeq(a.CommitSeq, b.CommitSeq), a.Started.Compare(b.Started),
			cmp.Compare(a.RunID, b.RunID), cmp.Compare(a.Boot, b.Boot))
	})
	return pts, nil
}

// cmpSeq orders known commit places first, in order.
func cmpSeq(a, b int) int {
	switch {
	case a == b:
		return 0
	case a == 0:
		return 1
	case b == 0:
		return -1
	}
	return cmp.Compare(a, b)
}

// Stats counts what the history holds.
type Stats struct {
	Runs, Boots, Figures int
}

// Stats counts the runs, boots and figures in the history.
func (s *Store) Stats(ctx context.Context) (Stats, error) {
	var st Stats
	err := s.db.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM runs), (SELECT COUNT(*) FROM boots), (SELECT COUNT(*) FROM figures)`).
		Scan(&st.Runs, &st.Boots, &st.Figures)
	return st, s.explain(err)
}

// Generation says what the history's analysis read, so that a reader that
// keeps it (lab serve) compares two small figures instead of reading every
// line again.
type Generation struct {
	// Measured changes with a boot or a culprit added: the lines must be
	// read again.
	Measured string
	// Annotated is the last annotation's id: only the annotations must be
	// read again.
	Annotated int64
}

// Generation is the history's generation now.
func (s *Store) Generation(ctx context.Context) (Generation, error) {
	var boots int64
	var culprits int
	var culpritAdded string
	var g Generation
	err := s.db.QueryRowContext(ctx, `SELECT (SELECT COALESCE(MAX(id), 0) FROM boots), (SELECT COUNT(*) FROM culprits),
		(SELECT COALESCE(MAX(added), '') FROM culprits), (SELECT COALESCE(MAX(id), 0) FROM annotations)`).Scan(&boots, &culprits, &culpritAdded, &g.Annotated)
	if err != nil {
		return g, s.explain(err)
	}
	g.Measured = fmt.Sprintf("%d/%d/%s", boots, culprits, culpritAdded)
	return g, nil
}
