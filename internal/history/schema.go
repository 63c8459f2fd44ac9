package history

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// app names lab's row in schema_version: a table of that name made by
// another tool has no such row.
const app = "lab history"

// migration is one step of the schema: statements run in one transaction,
// after which the schema is at the step's version (its place in the list,
// from 1). {{id}} is the dialect's auto-numbered primary key.
type migration struct {
	what  string
	stmts []string
}

// migrations are the schema's steps, oldest first. Never edit a released
// step: add one.
var migrations = []migration{
	{"runs, boots, figures and commits", []string{
		`CREATE TABLE runs (
			id {{id}},
			lab TEXT NOT NULL,
			run_id TEXT NOT NULL,
			kind TEXT NOT NULL,
			lab_version TEXT NOT NULL,
			command TEXT NOT NULL,
			started TEXT NOT NULL,
			source_desc TEXT NOT NULL,
			source_id TEXT NOT NULL,
			source_tarball_sha256 TEXT NOT NULL,
			source_commit TEXT NOT NULL,
			kernel_version TEXT NOT NULL,
			series_name TEXT NOT NULL,
			series_mode TEXT NOT NULL,
			series_sha256 TEXT NOT NULL,
			UNIQUE (lab, run_id))`,
		`CREATE TABLE boots (
			id {{id}},
			run BIGINT NOT NULL REFERENCES runs (id),
			boot_index INTEGER NOT NULL,
			digest TEXT UNIQUE,
			variant TEXT NOT NULL,
			commit_id TEXT NOT NULL,
			kernel_key TEXT NOT NULL,
			image_sha256 TEXT NOT NULL,
			arch TEXT NOT NULL,
			cpus INTEGER NOT NULL,
			topology TEXT NOT NULL,
			clock TEXT NOT NULL,
			accel TEXT NOT NULL,
			host_name TEXT NOT NULL,
			host_cpu_model TEXT NOT NULL,
			host_cpus INTEGER NOT NULL,
			host_kernel TEXT NOT NULL,
			qemu_version TEXT NOT NULL,
			host_class TEXT NOT NULL,
			failure TEXT NOT NULL,
			UNIQUE (run, boot_index))`,
		`CREATE INDEX boots_shape ON boots (arch, cpus, topology, clock, accel, host_class)`,
		`CREATE TABLE figures (
			boot BIGINT NOT NULL REFERENCES boots (id),
			benchmark TEXT NOT NULL,
			tool TEXT NOT NULL,
			producers INTEGER NOT NULL,
			metric TEXT NOT NULL,
			value DOUBLE PRECISION NOT NULL,
			PRIMARY KEY (boot, benchmark, tool, producers, metric))`,
		`CREATE INDEX figures_row ON figures (benchmark, producers, metric)`,
		// A commit's place along its branch is a fact of the commit, not
		// of a boot: a bisect's boot of a tracked commit sorts with it.
		`CREATE TABLE commits (
			commit_id TEXT NOT NULL PRIMARY KEY,
			seq BIGINT NOT NULL)`,
	}},
	{"culprits", []string{culpritsTable}},
	// The agent's measuring method: figures of two methods are not one
	// line. Boots from before it was recorded keep "".
	{"boots' measuring method", []string{`ALTER TABLE boots ADD COLUMN method TEXT NOT NULL DEFAULT ''`}},
	// Every kernel's series (a run of several has one per kernel beside
	// the baseline); runs keeps its first, as before. Runs stored before
	// have none here: their boots' series is the run's.
	{"each kernel's series", []string{`CREATE TABLE run_series (
		run BIGINT NOT NULL REFERENCES runs (id),
		variant TEXT NOT NULL,
		name TEXT NOT NULL,
		mode TEXT NOT NULL,
		sha256 TEXT NOT NULL,
		PRIMARY KEY (run, variant))`}},
	{"the list watcher's state", watchTables},
	{"the list watcher's settled mails", watchSettled},
	{"change-point annotations", []string{annotationsTable, `CREATE INDEX annotations_lab ON annotations (lab)`}},
	{"the list watcher's series subjects", watchSubjects},
	// Where a bisect's culprit moved the figure in the kernel (its
	// instruction profile's where-block), for the regression mail.
	{"culprits' where-block", []string{`ALTER TABLE culprits ADD COLUMN where_block TEXT NOT NULL DEFAULT ''`}},
	// A line's points are found from its lab's runs down to their boots
	// (Points): SQLite started from every boot of the line's shape, and
	// 5,000 lines of 100,000 boots took 2.5 minutes to read.
	{"boots by run and shape", []string{`CREATE INDEX boots_run_shape ON boots (run, variant, arch, cpus, topology, clock, accel, host_class, method)`}},
}

// labTables are the tables the migrations make, besides schema_version.
var labTables = []string{"runs", "boots", "figures", "commits", "culprits", "run_series",
	"watch_cursors", "watch_mails", "watch_series", "watch_outbox", "annotations", "watch_subjects"}

// dialect is what differs between the two databases.
type dialect struct {
	name string // in messages
	id   string // an auto-numbered primary key column
	// tables lists the tables a database holds that matter to lab:
	// SQLite, every table of the file; PostgreSQL, those of the current
	// schema (a server's database may hold other applications' tables).
	tables string
	// lock serialises migrations between processes within tx.
	lock func(ctx context.Context, tx *sql.Tx) error
	// positional placeholders: $1, $2... instead of ?
	dollar bool
}

var sqliteDialect = dialect{
	name:   "SQLite",
	id:     "INTEGER PRIMARY KEY",
	tables: `SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\_%' ESCAPE '\'`,
	// The transaction began IMMEDIATE (_txlock): it holds the write lock.
	lock: func(context.Context, *sql.Tx) error { return nil },
}

var postgresDialect = dialect{
	name:   "PostgreSQL",
	id:     "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY",
	tables: `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()`,
	lock: func(ctx context.Context, tx *sql.Tx) error {
		// Two hosts opening a new database at once: one migrates, the
		// other waits and finds it done. The key is any fixed number.
		_, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(7260281146)`)
		return err
	},
	dollar: true,
}

// q writes a statement in the dialect: ? becomes $n for PostgreSQL, {{id}}
// the primary key column.
func (d dialect) q(stmt string) string {
	stmt = strings.ReplaceAll(stmt, "{{id}}", d.id)
	if !d.dollar {
		return stmt
	}
	var b strings.Builder
	n := 0
	for _, c := range stmt {
		if c == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// version reads the schema version of a database: 0 when it holds none of
// lab's tables yet (a new file, or a server database for lab), an error
// when it is not lab's history (another program's file or tables).
func (d dialect) version(ctx context.Context, db querier) (int, error) {
	rows, err := db.QueryContext(ctx, d.tables)
	if err != nil {
		return 0, err
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return 0, err
		}
		tables = append(tables, name)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	slices.Sort(tables)
	if !slices.Contains(tables, "schema_version") {
		if d.dollar {
			// A server database may hold other applications' tables; only
			// tables with lab's names and no version are a conflict.
			var clash []string
			for _, t := range labTables {
				if slices.Contains(tables, t) {
					clash = append(clash, t)
				}
			}
			if len(clash) > 0 {
				return 0, fmt.Errorf("not lab's history: it has tables named %s but no schema_version (another program's tables?)", strings.Join(clash, ", "))
			}
			return 0, nil
		}
		if len(tables) > 0 {
			return 0, fmt.Errorf("an SQLite database, but not lab's history: it has tables %s and no schema_version (another program's file?)", strings.Join(tables, ", "))
		}
		return 0, nil
	}
	var v int
	err = db.QueryRowContext(ctx, d.q(`SELECT version FROM schema_version WHERE app = ?`), app).Scan(&v)
	if err != nil {
		return 0, fmt.Errorf("not lab's history: its schema_version table has no row of lab's (another tool's table?): %w", err)
	}
	return v, nil
}

// migrate brings the database to the last of steps, in one transaction
// that holds the dialect's lock, so that two processes opening a new
// history at once make its tables once. It refuses a database whose schema
// is newer than steps, or that is not lab's.
func (d dialect) migrate(ctx context.Context, db *sql.DB, steps []migration) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := d.lock(ctx, tx); err != nil {
		return err
	}
	v, err := d.version(ctx, tx)
	if err != nil {
		return err
	}
	if err := newer(v, steps); err != nil {
		return err
	}
	if v == len(steps) {
		return nil
	}
	if v == 0 {
		if _, err := tx.ExecContext(ctx, `CREATE TABLE schema_version (app TEXT NOT NULL PRIMARY KEY, version INTEGER NOT NULL)`); err != nil {
			return fmt.Errorf("create schema_version: %w", err)
		}
		if _, err := tx.ExecContext(ctx, d.q(`INSERT INTO schema_version (app, version) VALUES (?, 0)`), app); err != nil {
			return fmt.Errorf("create schema_version: %w", err)
		}
	}
	for i := v; i < len(steps); i++ {
		for _, stmt := range steps[i].stmts {
			if _, err := tx.ExecContext(ctx, d.q(stmt)); err != nil {
				return fmt.Errorf("schema step %d (%s): %w", i+1, steps[i].what, err)
			}
		}
	}
	if _, err := tx.ExecContext(ctx, d.q(`UPDATE schema_version SET version = ? WHERE app = ?`), len(steps), app); err != nil {
		return fmt.Errorf("record schema version %d: %w", len(steps), err)
	}
	return tx.Commit()
}

func newer(v int, steps []migration) error {
	if v > len(steps) {
		return fmt.Errorf("its schema is version %d, newer than this lab's %d: use a newer lab (or another history)", v, len(steps))
	}
	return nil
}
