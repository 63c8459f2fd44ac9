package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"lab/internal/flagval"
	"lab/internal/serve"
	"lab/internal/version"
)

const serveHelp = `lab serve [--history H] [--results DIR] [--listen 127.0.0.1:8080] [--token-file F]: the history as web pages

Serves the history's lines with their change points, culprits and bisect
runs (one click from a point to its boots and console logs), every run,
bisect and track folder under --results with its report (drawn by the
writer of the report files) and a page comparing runs picked in the list,
and the list watcher's queue with its replies. It reads the history as a
running lab track or lab watch writes it.

Read-only unless --token-file names a file whose first line is a token:
then a change point can be annotated (expected, false positive, or a note,
with its author), which the history keeps and every later report, mail,
export and lab history detect shows (detect's exit code leaves out a
change point marked expected or a false positive). It listens on loopback
unless --listen says otherwise.

Flags:
`

type serveFlags struct {
	history   historyCmdFlags
	results   flagval.String
	listen    flagval.String
	tokenFile flagval.String
}

func (f *serveFlags) RegisterFlags(fs *flag.FlagSet) {
	fs.Var(&f.history.where, "history", "the history: an SQLite file (default: results/"+HistoryFile+" in lab's checkout) or a postgres:// URL")
	fs.Var(&f.history.minPct, "min-pct", "the least change of a level shown as a change point, in percent (default: as lab history detect)")
	fs.Var(&f.results, "results", "the folder of run folders to serve (default: the history file's folder)")
	fs.Var(&f.listen, "listen", "the address to listen on (default 127.0.0.1:8080)")
	fs.Var(&f.tokenFile, "token-file", "a file whose first line is the token that annotating needs (default: read-only)")
}

// token reads the token file: its first line, at least 16 characters.
func (f *serveFlags) token() (string, error) {
	if !f.tokenFile.IsSet() {
		return "", nil
	}
	data, err := os.ReadFile(f.tokenFile.V)
	if err != nil {
		return "", fmt.Errorf("--token-file: %w", err)
	}
	tok, _, _ := strings.Cut(string(data), "\n")
	tok = strings.TrimSpace(tok)
	if len(tok) < 16 {
		return "", usagef("--token-file %s: its first line is %d characters; a token needs at least 16", f.tokenFile.V, len(tok))
	}
	return tok, nil
}

func (f *serveFlags) resultsDir() string {
	switch {
	case f.results.IsSet():
		return f.results.V
	case isURL(f.history.location()):
		return ""
	}
	return filepath.Dir(f.history.location())
}

func serveCommand(fs *flag.FlagSet) func(context.Context, invocation) error {
	var f serveFlags
	f.RegisterFlags(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), serveHelp)
		fs.PrintDefaults()
	}
	return func(ctx context.Context, inv invocation) error {
		if len(inv.args) > 0 {
			return usagef("lab serve takes no arguments, got %s", strings.Join(inv.args, " "))
		}
		token, err := f.token()
		if err != nil {
			return err
		}
		store, err := f.history.open(ctx)
		if err != nil {
			return err
		}
		defer store.Close()
		minPct := -1.0
		if f.history.minPct.IsSet() {
			minPct = f.history.minPct.V
		}
		srv, err := serve.New(serve.Options{Store: store, Results: f.resultsDir(), Token: token, MinPct: minPct,
			Generator: version.Lab(""), Log: log.New(inv.errOut, "lab serve: ", log.LstdFlags)})
		if err != nil {
			return err
		}
		defer srv.Close()
		fmt.Fprintf(inv.out, "lab serve: reading %s\n", store)
		if err := srv.Warm(ctx); err != nil {
			return err
		}
		addr := "127.0.0.1:8080"
		if f.listen.IsSet() {
			addr = f.listen.V
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("lab serve: %w", err)
		}
		mode := "read-only"
		if token != "" {
			mode = "annotations with the token of " + f.tokenFile.V
		}
		fmt.Fprintf(inv.out, "lab serve: http://%s/ (history %s, %s)\n", ln.Addr(), store, mode)
		return serveUntilDone(ctx, ln, srv)
	}
}

// serveUntilDone serves until ctx ends (Ctrl-C), then lets the requests
// under way finish.
func serveUntilDone(ctx context.Context, ln net.Listener, h http.Handler) error {
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, MaxHeaderBytes: 64 << 10}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := hs.Shutdown(shut); err != nil {
		return err
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
