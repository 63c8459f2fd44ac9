package history

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// dirState is every file of a folder with its bytes.
func dirState(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string][]byte{}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		m[e.Name()] = data
	}
	return m
}

func names(m map[string][]byte) []string {
	var n []string
	for k := range m {
		n = append(n, k)
	}
	slices.Sort(n)
	return n
}

// A file that is not lab's history is refused with its reason, and neither
// it nor its folder changes (no -wal, -shm or -journal either).
func TestSQLiteRefusesForeignFiles(t *testing.T) {
	labHistory := func(t *testing.T, path string) {
		s := mustOpen(t, path)
		mustAdd(t, s, fakeRun("lab", "r1", 30), 30)
		if _, err := s.db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	for _, c := range []struct {
		name string
		make func(t *testing.T, path string)
		want string
	}{
		{"a text file", func(t *testing.T, path string) {
			os.WriteFile(path, []byte("lab history? no, a shopping list\n"), 0o644)
		}, "not an SQLite database"},
		{"lab's results.json", func(t *testing.T, path string) {
			os.WriteFile(path, []byte(`{"schema": 2, "lab": "uprobe-srcu", "boots": []}`+strings.Repeat(" ", 4096)), 0o644)
		}, "not an SQLite database"},
		{"another program's SQLite database", func(t *testing.T, path string) {
			rawExec(t, path, `CREATE TABLE bookmarks (url TEXT, title TEXT)`, `INSERT INTO bookmarks VALUES ('https://kernel.org', 'kernel')`)
		}, "an SQLite database, but not lab's history: it has tables bookmarks and no schema_version"},
		{"lab's history with its header overwritten", func(t *testing.T, path string) {
			labHistory(t, path)
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteAt(bytes.Repeat([]byte{0xa5}, 100), 0)
			f.Close()
		}, "not an SQLite database"},
		{"lab's history cut after its first page", func(t *testing.T, path string) {
			labHistory(t, path)
			if err := os.Truncate(path, 4096); err != nil {
				t.Fatal(err)
			}
		}, "damaged SQLite database"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "history.db")
			c.make(t, path)
			before := dirState(t, dir)
			_, err := Open(context.Background(), path)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("open: %v, want %q and the path", err, c.want)
			}
			after := dirState(t, dir)
			if !reflect.DeepEqual(names(after), names(before)) {
				t.Errorf("the folder now holds %v, was %v", names(after), names(before))
			}
			if !bytes.Equal(after["history.db"], before["history.db"]) {
				t.Errorf("the file changed")
			}
		})
	}
}

func TestSQLiteFiles(t *testing.T) {
	t.Run("an empty file becomes a history", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "history.db")
		os.WriteFile(path, nil, 0o644)
		mustAdd(t, mustOpen(t, path), fakeRun("lab", "r1", 1), 1)
	})
	t.Run("a history in write-ahead logging, a busy timeout and foreign keys", func(t *testing.T) {
		s := mustOpen(t, filepath.Join(t.TempDir(), "history.db"))
		for pragma, want := range map[string]string{"journal_mode": "wal", "busy_timeout": "30000", "foreign_keys": "1"} {
			var got string
			if err := s.db.QueryRow("PRAGMA " + pragma).Scan(&got); err != nil || got != want {
				t.Errorf("%s = %q %v, want %q", pragma, got, err, want)
			}
		}
	})
	t.Run("a path with ? and # in it", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "what?#now.db")
		mustAdd(t, mustOpen(t, path), fakeRun("lab", "r1", 1), 1)
		if _, err := os.Stat(path); err != nil {
			t.Error(err)
		}
	})
	t.Run("a missing folder", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "no", "history.db")
		_, err := Open(context.Background(), path)
		if err == nil || !strings.Contains(err.Error(), "cannot open it") {
			t.Errorf("open: %v", err)
		}
	})
}
