package history

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	"lab/internal/results"
)

// culpritsTable is schema step 2: what bisecting a change point found,
// written back by lab track --bisect. A change point is known by its
// series and the commits either side of it; bisecting it again replaces
// the answer.
const culpritsTable = `CREATE TABLE culprits (
	id {{id}},
	lab TEXT NOT NULL,
	series TEXT NOT NULL,
	good_commit TEXT NOT NULL,
	bad_commit TEXT NOT NULL,
	culprit TEXT NOT NULL,
	outcome TEXT NOT NULL,
	bisect_run TEXT NOT NULL,
	added TEXT NOT NULL,
	UNIQUE (lab, series, good_commit, bad_commit))`

// Culprit is the commit a change point was bisected to.
type Culprit struct {
	Lab string
	// Line names the line the change point is in (LineKey.String).
	Line      string
	Good, Bad string // the last commit before the change point, the first after
	Culprit   string // "" when the bisect found no single commit
	Outcome   string // the bisect's outcome, or "adjacent" when Bad follows Good
	BisectRun string // the bisect's run id; "" when none was needed
	// Where is where the culprit moved the figure in the kernel, as a
	// bisect's report prints it (insnprof.CulpritText); "" without an
	// instruction profile of the culprit and its parent.
	Where string
	Added time.Time
}

// AddCulprit writes what bisecting a change point found, replacing an
// earlier answer for the same change point.
func (s *Store) AddCulprit(ctx context.Context, c Culprit) error {
	return s.addCulprit(ctx, s.db, c)
}

// execer is a database or a transaction.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

func (s *Store) addCulprit(ctx context.Context, db execer, c Culprit) error {
	if err := c.check(); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	if c.Added.IsZero() {
		c.Added = time.Now()
	}
	// The same bisect's answer written again without its where-block (lab
	// track --bisect writes each line's after the bisect's run came in
	// with it) keeps the block.
	_, err := db.ExecContext(ctx, s.d.q(`INSERT INTO culprits (lab, series, good_commit, bad_commit, culprit, outcome, bisect_run, where_block, added)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (lab, series, good_commit, bad_commit) DO UPDATE SET
		culprit = excluded.culprit, outcome = excluded.outcome, bisect_run = excluded.bisect_run, added = excluded.added,
		where_block = CASE WHEN excluded.where_block = '' AND culprits.bisect_run = excluded.bisect_run
			THEN culprits.where_block ELSE excluded.where_block END`),
		c.Lab, c.Line, c.Good, c.Bad, c.Culprit, c.Outcome, c.BisectRun, c.Where, c.Added.UTC().Format(timeLayout))
	if err != nil {
		return fmt.Errorf("culprit of %s %s..%s: %w", c.Line, c.Good, c.Bad, s.explain(err))
	}
	return nil
}

func (c Culprit) check() error {
	if c.Lab == "" || c.Line == "" || c.Good == "" || c.Bad == "" || c.Outcome == "" {
		return fmt.Errorf("a culprit needs its lab, series, both commits and the outcome: %+v", c)
	}
	return nil
}

// Culprits lists the culprits written for a lab ("" for every lab).
func (s *Store) Culprits(ctx context.Context, lab string) ([]Culprit, error) {
	stmt := `SELECT lab, series, good_commit, bad_commit, culprit, outcome, bisect_run, where_block, added FROM culprits`
	var args []any
	if lab != "" {
		stmt += ` WHERE lab = ?`
		args = append(args, lab)
	}
	rows, err := s.db.QueryContext(ctx, s.d.q(stmt), args...)
	if err != nil {
		return nil, s.explain(err)
	}
	defer rows.Close()
	var out []Culprit
	for rows.Next() {
		var c Culprit
		var added string
		if err := rows.Scan(&c.Lab, &c.Line, &c.Good, &c.Bad, &c.Culprit, &c.Outcome, &c.BisectRun, &c.Where, &added); err != nil {
			return nil, s.explain(err)
		}
		if c.Added, err = time.Parse(time.RFC3339Nano, added); err != nil {
			return nil, s.explain(fmt.Errorf("culprit of %s: time %q: %w", c.Line, added, err))
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, s.explain(err)
	}
	slices.SortFunc(out, func(a, b Culprit) int {
		return cmp.Or(cmp.Compare(a.Lab, b.Lab), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Good, b.Good), cmp.Compare(a.Bad, b.Bad))
	})
	return out, nil
}

// Where is one guest shape on one host: what a branch measurement asks
// of the history to know which commits it has measured already. The host
// is its CPU model and count; its QEMU version, part of the host class,
// is only known once a guest has booted.
type Where struct {
	Lab          string
	Arch         string
	CPUs         int
	Topology     string
	Clock        string
	Accel        string
	HostCPUModel string
	HostCPUs     int
}

// Topology is a boot's guest topology as the history writes it: a
// LineKey's and a Where's.
func Topology(b results.Boot) string { return topologyOf(b) }

// Measured maps each commit the history has a delivered boot of, in the
// shape and on the host of w, to its kernel image's sha256. Only commits
// whose place along the branch is known count: a commit a bisect alone
// measured is measured again by a track, which records its place (and
// so sorts the bisect's boots of it too).
func (s *Store) Measured(ctx context.Context, w Where) (map[string]string, error) {
	rows, err := s.db.QueryContext(ctx, s.d.q(`SELECT DISTINCT b.commit_id, b.image_sha256
		FROM boots b JOIN runs r ON r.id = b.run JOIN commits c ON c.commit_id = b.commit_id
		WHERE b.failure = '' AND r.lab = ? AND b.arch = ? AND b.cpus = ? AND b.topology = ?
		AND b.clock = ? AND b.accel = ? AND b.host_cpu_model = ? AND b.host_cpus = ?`),
		w.Lab, w.Arch, w.CPUs, w.Topology, w.Clock, w.Accel, w.HostCPUModel, w.HostCPUs)
	if err != nil {
		return nil, s.explain(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var commit, image string
		if err := rows.Scan(&commit, &image); err != nil {
			return nil, s.explain(err)
		}
		out[commit] = image
	}
	return out, s.explain(rows.Err())
}
