package testenv

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx"
)

// Postgres is a PostgreSQL server from Debian's postgresql package, made
// for the tests in a temp folder and reached on a Unix socket there, with
// no TCP port: it meets no other server on the machine.
type Postgres struct {
	dir   string // holds data/ and the socket
	admin *sql.DB
	dbs   atomic.Int64
}

// PostgresInstalled says whether the server's programs are here.
func PostgresInstalled() bool { return pgBinDir() != "" }

// pgBinDir finds the server's programs: Debian keeps them out of PATH, in
// /usr/lib/postgresql/<version>/bin. "" when there are none.
func pgBinDir() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { // the newest version first
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(a)))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(b)))
		return vb - va
	})
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
			return d
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p)
	}
	return ""
}

// StartPostgres starts a server for t and stops it, and removes its
// folder, when t ends. As root it runs as the postgres user (initdb refuses
// root); it skips t only when the server's programs are not installed.
func StartPostgres(t *testing.T) *Postgres {
	t.Helper()
	bin := pgBinDir()
	if bin == "" {
		t.Skip("PostgreSQL tests: no initdb and postgres (Debian's postgresql package: ./scripts/install-deps --test installs it)")
	}
	began := time.Now()
	// Not t.TempDir: its parents are private to this user, and the server
	// may run as another.
	dir, err := os.MkdirTemp("", "lab-history-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	attr := serverUser(t, dir)
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", filepath.Join(dir, "data"), "-U", "lab",
		"--auth=trust", "--no-sync", "--encoding=UTF8", "--locale=C")
	initdb.SysProcAttr = attr
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	log, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	srv := exec.Command(filepath.Join(bin, "postgres"), "-D", filepath.Join(dir, "data"), "-k", dir,
		"-c", "listen_addresses=", "-c", "fsync=off", "-c", "max_connections=200")
	srv.SysProcAttr = attr
	srv.Stdout, srv.Stderr = log, log
	if err := srv.Start(); err != nil {
		t.Fatalf("start postgres: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- srv.Wait() }()
	t.Cleanup(func() {
		srv.Process.Signal(syscall.SIGINT) // fast shutdown: ends the sessions
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			srv.Process.Kill()
			<-exited
		}
	})
	s := &Postgres{dir: dir}
	s.admin, err = sql.Open("pgx", s.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.admin.Close() })
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := s.admin.PingContext(ctx)
		cancel()
		if err == nil {
			break
		}
		select {
		case werr := <-exited:
			data, _ := os.ReadFile(log.Name())
			t.Fatalf("postgres exited (%v) before it took connections:\n%s", werr, data)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Since(began) > time.Minute {
			t.Fatalf("postgres took no connection in a minute: %v", err)
		}
	}
	t.Logf("PostgreSQL (%s) up in %v, in %s", bin, time.Since(began).Round(time.Millisecond), dir)
	return s
}

// serverUser is how the server's processes run: as the postgres user
// (or nobody) when the tests run as root, whose folder dir becomes; and
// stopped when the test process dies.
func serverUser(t *testing.T, dir string) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Pdeathsig: syscall.SIGINT} // lab's test dying takes its server along
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			u, err = user.Lookup("nobody")
		}
		if err != nil {
			t.Fatalf("PostgreSQL tests run as root need a user for the server (postgres or nobody): %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		attr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	return attr
}

// URL is the address of database db on the server.
func (s *Postgres) URL(db string) string {
	return fmt.Sprintf("postgres://lab@/%s?host=%s", db, url.QueryEscape(s.dir))
}

// NewDB makes an empty database and returns its URL.
func (s *Postgres) NewDB(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("h%d", s.dbs.Add(1))
	if _, err := s.admin.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	return s.URL(name)
}
