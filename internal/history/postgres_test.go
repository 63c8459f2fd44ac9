package history

import (
	"context"
	"lab/internal/testenv"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

func TestPostgres(t *testing.T) {
	t.Run("no server", func(t *testing.T) {
		where := "postgres://lab:secret@/h?host=" + url.QueryEscape(t.TempDir())
		_, err := Open(context.Background(), where)
		if err == nil || !strings.Contains(err.Error(), "cannot connect") || strings.Contains(err.Error(), "secret") {
			t.Errorf("open: %v, want cannot connect, without the password", err)
		}
	})
	pg := testenv.StartPostgres(t)
	t.Run("other applications' tables in the database stay", func(t *testing.T) {
		where := pg.NewDB(t)
		rawExec(t, where, `CREATE TABLE bookmarks (url TEXT)`, `INSERT INTO bookmarks VALUES ('https://kernel.org')`)
		mustAdd(t, mustOpen(t, where), fakeRun("lab", "r1", 2), 2)
		if got, want := tables(t, where), []string{"annotations", "bookmarks", "boots", "commits", "culprits", "figures", "run_series", "runs", "schema_version", "watch_cursors", "watch_mails", "watch_outbox", "watch_series", "watch_subjects"}; !reflect.DeepEqual(got, want) {
			t.Errorf("tables %v, want %v", got, want)
		}
	})
}
