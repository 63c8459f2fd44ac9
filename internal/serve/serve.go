// Package serve is lab serve: the history's lines and change points, the
// run folders' reports and the list watcher's queue as web pages a team
// shares. A page that a file of lab's also shows is drawn by that file's
// writer (a run's by report, a bisect's by bisectreport, a line's chart by
// historyreport); serve routes, checks every request, keeps the history's
// analysis until the history changes, and writes annotations.
package serve

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"log"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"lab/internal/history"
	"lab/internal/historyreport"
	"lab/internal/lines"
)

// MaxURL is the longest request target served; a longer one is refused
// before it is parsed (414).
const MaxURL = 4096

// Options are what a server shows and who may write.
type Options struct {
	Store   *history.Store
	Results string // the results folder, "" for none
	// Token is what annotating needs (a form field or a bearer header);
	// "" makes the server read-only.
	Token     string
	MinPct    float64 // lab history detect's --min-pct
	Generator string  // lab's version, in the pages' footers
	Log       *log.Logger
	// Refresh is how often the dashboard asks whether the history
	// changed (a track or a watch writing), reloading itself when it did;
	// 0 is DefaultRefresh.
	Refresh time.Duration
}

// DefaultRefresh is how often a dashboard asks for news by default.
const DefaultRefresh = 10 * time.Second

// Server serves one history and one results folder.
type Server struct {
	opt  Options
	root *os.Root // the results folder; nil for none
	mux  *http.ServeMux

	mu       sync.Mutex         // guards the analysis below
	gen      history.Generation // the history's generation it was read at
	analysis *analysis
	loading  bool // a new analysis is being read
	bgCtx    context.Context
	stop     context.CancelFunc
	bg       sync.WaitGroup

	wmu          sync.Mutex // guards the results folder's walk and consoles
	walk         *walked
	consoleCache map[string]consoleLogs
}

// analysis is the history read once: its lines by id, and the dashboard
// made of them.
type analysis struct {
	hist *historyreport.History
	byID map[string]*lines.Line
	dash *dashboard
	gen  string // the history's generation it was read at
	// stale: the history has new boots or culprits since; a new analysis
	// is being read.
	stale bool
}

func newAnalysis(h *historyreport.History, gen history.Generation) *analysis {
	a := &analysis{hist: h, byID: map[string]*lines.Line{}, dash: newDashboard(h.History), gen: fmt.Sprintf("%s/%d", gen.Measured, gen.Annotated)}
	for i := range h.Lines {
		a.byID[LineID(h.Lines[i].Key)] = &h.Lines[i]
	}
	return a
}

// New makes a server; Close releases its results folder.
func New(opt Options) (*Server, error) {
	if opt.Store == nil {
		return nil, errors.New("serve: no history")
	}
	if opt.Log == nil {
		opt.Log = log.New(io.Discard, "", 0)
	}
	if opt.Refresh <= 0 {
		opt.Refresh = DefaultRefresh
	}
	s := &Server{opt: opt, mux: http.NewServeMux(), consoleCache: map[string]consoleLogs{}}
	var bg context.Context
	bg, s.stop = context.WithCancel(context.Background())
	s.bgCtx = bg
	if opt.Results != "" {
		root, err := os.OpenRoot(opt.Results)
		if err != nil {
			return nil, fmt.Errorf("serve: the results folder: %w", err)
		}
		s.root = root
	}
	s.routes()
	return s, nil
}

// Close stops a reading of the history under way and releases the
// results folder.
func (s *Server) Close() error {
	if s.stop != nil {
		s.stop()
	}
	s.bg.Wait()
	if s.root == nil {
		return nil
	}
	return s.root.Close()
}

func (s *Server) routes() {
	s.mux.HandleFunc("GET /{$}", s.index)
	s.mux.HandleFunc("GET /lines/{id}", s.line)
	s.mux.HandleFunc("GET /lines/{id}/levels/{n}", s.level)
	s.mux.HandleFunc("POST /lines/{id}/changes/{n}/annotations", s.annotate)
	s.mux.HandleFunc("GET /runs/{$}", s.runs)
	s.mux.HandleFunc("GET /runs/{path...}", s.runPath)
	s.mux.HandleFunc("GET /compare", s.compare)
	s.mux.HandleFunc("GET /watch", s.watch)
	s.mux.HandleFunc("GET /generation", s.generation)
}

// generation says which analysis of the history the pages show, and
// whether a newer one is being read: the dashboard asks it every
// RefreshMS and reloads itself when it changed.
func (s *Server) generation(w http.ResponseWriter, r *http.Request) {
	a, err := s.history(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(struct {
		Generation string `json:"generation"`
		Stale      bool   `json:"stale"`
	}{a.gen, a.stale})
}

// ServeHTTP checks what every request must be before it is routed, and
// sets the headers every answer carries: no script or style from
// elsewhere, no sniffing a console log into a page.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; connect-src 'self'; img-src data:; form-action 'self'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	if len(r.RequestURI) > MaxURL {
		s.fail(w, r, httpError{http.StatusRequestURITooLong, fmt.Sprintf("request target of %d bytes: at most %d", len(r.RequestURI), MaxURL)})
		return
	}
	s.mux.ServeHTTP(w, r)
}

// httpError is an answer other than 200: its status and what to say.
type httpError struct {
	status int
	msg    string
}

func (e httpError) Error() string { return e.msg }

func notFound(format string, args ...any) error {
	return httpError{http.StatusNotFound, fmt.Sprintf(format, args...)}
}

func badRequest(format string, args ...any) error {
	return httpError{http.StatusBadRequest, fmt.Sprintf(format, args...)}
}

// fail answers with err's status (500 for an error of lab's own, logged,
// its text not shown: it may name paths of the machine).
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	var he httpError
	if !errors.As(err, &he) {
		s.opt.Log.Printf("%s %s: %v", r.Method, r.URL.Path, err)
		he = httpError{http.StatusInternalServerError, "lab serve failed on this page; its log says why"}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(he.status)
	fmt.Fprintf(w, "%d %s: %s\n", he.status, http.StatusText(he.status), he.msg)
}

// page writes a page of lab serve's own.
func (s *Server) page(w http.ResponseWriter, r *http.Request, t *template.Template, data any) {
	var b strings.Builder
	if err := t.ExecuteTemplate(&b, "shell", data); err != nil {
		s.fail(w, r, err)
		return
	}
	writeHTML(w, b.String())
}

func writeHTML(w http.ResponseWriter, page string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	io.WriteString(w, page)
}

// Warm reads the history's analysis before the first request needs it:
// on a large history that takes seconds.
func (s *Server) Warm(ctx context.Context) error {
	_, err := s.history(ctx)
	return err
}

// history is the history's analysis. Each request costs one small query
// (the generation): an annotation added is read at once (a small query);
// new boots or culprits (a track or a watch writing as the server runs)
// are read in the background while the pages show the analysis before,
// marked stale, so that no page waits seconds for a large history.
func (s *Server) history(ctx context.Context) (*analysis, error) {
	gen, err := s.opt.Store.Generation(ctx)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.analysis == nil:
		h, err := historyreport.Load(ctx, s.opt.Store, lines.Options{MinPct: s.opt.MinPct})
		if err != nil {
			return nil, err
		}
		s.gen, s.analysis = gen, newAnalysis(h, gen)
	case gen.Measured != s.gen.Measured:
		if !s.loading {
			// A run that added boots may have added its folder too.
			s.forgetWalk()
			s.loading = true
			s.bg.Add(1)
			go s.reload()
		}
		stale := *s.analysis
		stale.stale = true
		return &stale, nil
	case gen.Annotated != s.gen.Annotated:
		notes, err := s.opt.Store.Annotations(ctx, "")
		if err != nil {
			return nil, err
		}
		h := &historyreport.History{History: s.analysis.hist.WithAnnotations(notes)}
		s.gen.Annotated = gen.Annotated
		s.analysis = newAnalysis(h, s.gen)
	}
	return s.analysis, nil
}

// reload reads the history's analysis again, off any request.
func (s *Server) reload() {
	defer s.bg.Done()
	ctx := s.bgCtx
	gen, err := s.opt.Store.Generation(ctx)
	var h *historyreport.History
	if err == nil {
		h, err = historyreport.Load(ctx, s.opt.Store, lines.Options{MinPct: s.opt.MinPct})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loading = false
	if err != nil {
		if ctx.Err() == nil {
			s.opt.Log.Printf("reading the history again: %v", err)
		}
		return
	}
	s.gen, s.analysis = gen, newAnalysis(h, gen)
}

// LineID names a line in a URL: a digest of its key, stable across
// restarts and histories.
func LineID(k history.LineKey) string {
	sum := sha256.Sum256([]byte(k.String()))
	return hex.EncodeToString(sum[:8])
}

// lineOf is the line a request names, or a 404.
func (s *Server) lineOf(r *http.Request) (*analysis, *lines.Line, error) {
	a, err := s.history(r.Context())
	if err != nil {
		return nil, nil, err
	}
	id := r.PathValue("id")
	l, ok := a.byID[id]
	if !ok {
		return nil, nil, notFound("no line %q in the history", clip(id))
	}
	return a, l, nil
}

// authorized says whether the request carries the server's token.
func (s *Server) authorized(r *http.Request) error {
	if s.opt.Token == "" {
		return httpError{http.StatusForbidden, "this server is read-only: start it with --token-file to annotate"}
	}
	given := r.PostFormValue("token")
	if b, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		given = b
	}
	if subtle.ConstantTimeCompare([]byte(given), []byte(s.opt.Token)) != 1 {
		return httpError{http.StatusForbidden, "wrong or missing token"}
	}
	return nil
}

// clip shortens what a request said before an answer repeats it.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
