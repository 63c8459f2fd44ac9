package serve

import (
	"io"
	"io/fs"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"

	"lab/internal/bisectreport"
	"lab/internal/report"
	"lab/internal/results"
	"lab/internal/runfolder"
	"lab/internal/variant"
)

// maxDepth is how deep below the results folder a run folder is looked
// for: results/<lab>/<run-id>, or results/examples/<lab>/<run-id>.
const maxDepth = 4

// maxCompare is the most runs one compare page lays side by side.
const maxCompare = 8

// runFolder is a run folder below the results folder.
type runFolder struct {
	Dir      string // slash-separated, relative to the results folder
	Lab, Run string // as the folder names them: <lab>/<run-id>
}

// foldersFor is how long a walk of the results folder is kept: the runs
// list, the line and level pages and the watch page read it once, not on
// every view (a folder of thousands of runs takes a while to walk). New
// boots in the history walk it again at once.
const foldersFor = 30 * time.Second

// walked is the results folder's run folders as last walked.
type walked struct {
	at      time.Time
	folders []runFolder
	byRun   map[string]string
}

// runFolders lists every folder below the results folder that holds a
// results.json, in path order, as walked at most foldersFor ago.
func (s *Server) runFolders() []runFolder { return s.walked().folders }

func (s *Server) walked() *walked {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.walk == nil || time.Since(s.walk.at) > foldersFor {
		w := &walked{at: time.Now(), folders: s.walkRunFolders(), byRun: map[string]string{}}
		for _, f := range w.folders {
			if _, ok := w.byRun[f.Lab+"/"+f.Run]; !ok {
				w.byRun[f.Lab+"/"+f.Run] = f.Dir
			}
		}
		s.walk = w
	}
	return s.walk
}

// forgetWalk has the next page walk the results folder again.
func (s *Server) forgetWalk() {
	s.wmu.Lock()
	s.walk = nil
	s.wmu.Unlock()
}

func (s *Server) walkRunFolders() []runFolder {
	if s.root == nil {
		return nil
	}
	var out []runFolder
	fs.WalkDir(s.root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return nil // an unreadable folder is left out, not the listing
		case d.IsDir() && strings.Count(p, "/") >= maxDepth:
			return fs.SkipDir
		case d.IsDir() && (d.Name() == runfolder.BootsDir || d.Name() == runfolder.ReportDir):
			return fs.SkipDir
		case d.Name() == runfolder.ResultsFile && !d.IsDir():
			dir := path.Dir(p)
			out = append(out, runFolder{Dir: dir, Lab: path.Base(path.Dir(dir)), Run: path.Base(dir)})
		}
		return nil
	})
	return out
}

// folders maps "<lab>/<run-id>" to its folder, for the history's runs.
func (s *Server) folders() map[string]string { return s.walked().byRun }

// consoles are the console logs of a run folder's boots by boot index,
// as paths below /runs/, read from its results.json once as long as the
// file stays the same size and age (the level page names them).
func (s *Server) consoles(dir string) map[int]string {
	fi, err := s.root.Stat(path.Join(dir, runfolder.ResultsFile))
	if err != nil {
		return nil
	}
	s.wmu.Lock()
	c, ok := s.consoleCache[dir]
	s.wmu.Unlock()
	if ok && c.size == fi.Size() && c.mod.Equal(fi.ModTime()) {
		return c.logs
	}
	run, err := s.loadRun(dir)
	if err != nil {
		return nil
	}
	logs := map[int]string{}
	for _, b := range run.Boots {
		if b.Console != "" {
			logs[b.Index] = "/runs/" + path.Join(dir, b.Console)
		}
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if len(s.consoleCache) >= maxConsoleRuns {
		clear(s.consoleCache)
	}
	s.consoleCache[dir] = consoleLogs{size: fi.Size(), mod: fi.ModTime(), logs: logs}
	return logs
}

// maxConsoleRuns is how many runs' console logs the level page keeps.
const maxConsoleRuns = 64

type consoleLogs struct {
	size int64
	mod  time.Time
	logs map[int]string
}

// cleanRel checks a path a request names inside the results folder: no
// absolute path, no "..", nothing hidden. os.Root refuses an escape
// through a symbolic link on top of this.
func cleanRel(p string) (string, error) {
	p = strings.Trim(p, "/")
	if p == "" {
		return ".", nil
	}
	if !fs.ValidPath(p) {
		return "", badRequest("%q is not a path inside the results folder", clip(p))
	}
	for _, part := range strings.Split(p, "/") {
		if strings.HasPrefix(part, ".") {
			return "", badRequest("%q: hidden files are not served", clip(p))
		}
	}
	return p, nil
}

// loadRun reads a run folder's results.json through the root.
func (s *Server) loadRun(dir string) (*results.Run, error) {
	if s.root == nil {
		return nil, notFound("this server has no results folder (--results)")
	}
	f, err := s.root.Open(path.Join(dir, runfolder.ResultsFile))
	if err != nil {
		return nil, notFound("no run folder %q in the results folder", clip(dir))
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, 1<<30))
	if err != nil {
		return nil, err
	}
	r, err := results.Parse(path.Join(dir, runfolder.ResultsFile), data)
	if err != nil {
		return nil, httpError{http.StatusUnprocessableEntity, "not a lab run folder: " + err.Error()}
	}
	return r, nil
}

var runsPage = report.NewPage("runs", style+`{{define "title"}}lab · runs{{end}}
{{define "body"}}`+nav+`<h1>Runs</h1>
<form method="get" action="/compare">
<table id="runs"><tr><th>compare</th><th>lab</th><th>run</th><th>folder</th></tr>
{{range .Runs}}<tr><td><input type="checkbox" name="run" value="{{.Dir}}"></td><td>{{.Lab}}</td><td><a href="/runs/{{.Dir}}/">{{.Run}}</a></td><td><code>{{.Dir}}</code></td></tr>
{{end}}</table>
<button type="submit">compare the runs ticked</button></form>
{{end}}`, nil)

// runs lists the run folders, with boxes to pick runs to compare.
func (s *Server) runs(w http.ResponseWriter, r *http.Request) {
	if s.root == nil {
		s.fail(w, r, notFound("this server has no results folder (--results)"))
		return
	}
	s.page(w, r, runsPage, struct {
		Stale bool
		Runs  []runFolder
	}{false, s.runFolders()})
}

// runPath is a run folder's report page, drawn by the writer of its
// report.html, or a file in it (a console or build log) as plain text.
func (s *Server) runPath(w http.ResponseWriter, r *http.Request) {
	if s.root == nil {
		s.fail(w, r, notFound("this server has no results folder (--results)"))
		return
	}
	rel, err := cleanRel(r.PathValue("path"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	info, err := s.root.Stat(rel)
	if err != nil {
		s.fail(w, r, notFound("nothing at %q in the results folder", clip(rel)))
		return
	}
	if !info.IsDir() {
		s.file(w, r, rel)
		return
	}
	if !strings.HasSuffix(r.URL.Path, "/") {
		http.Redirect(w, r, r.URL.Path+"/", http.StatusMovedPermanently)
		return
	}
	run, err := s.loadRun(rel)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var page string
	if run.Bisect != nil {
		page, err = bisectreport.HTML(run)
	} else {
		page, err = report.HTML(report.Build(run, rel, s.opt.Generator))
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeHTML(w, page)
}

// file serves a file of a run folder as text: a log is never a page.
func (s *Server) file(w http.ResponseWriter, r *http.Request, rel string) {
	f, err := s.root.Open(rel)
	if err != nil {
		s.fail(w, r, notFound("cannot open %q", clip(rel)))
		return
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || !info.Mode().IsRegular() {
		s.fail(w, r, notFound("%q is not a file", clip(rel)))
		return
	}
	ct := "text/plain; charset=utf-8"
	switch path.Ext(rel) {
	case ".json":
		ct = "application/json"
	case ".svg", ".png":
		ct = "application/octet-stream" // downloaded, never drawn in the server's origin
		w.Header().Set("Content-Disposition", "attachment")
	}
	w.Header().Set("Content-Type", ct)
	http.ServeContent(w, r, "", info.ModTime(), f)
}

// compare lays two or more runs side by side, as lab compare does.
func (s *Server) compare(w http.ResponseWriter, r *http.Request) {
	dirs := r.URL.Query()["run"]
	if len(dirs) < 2 || len(dirs) > maxCompare {
		s.fail(w, r, badRequest("compare takes 2 to %d runs (run=FOLDER, as /runs/ lists them), not %d", maxCompare, len(dirs)))
		return
	}
	v := variant.Variant(r.URL.Query().Get("variant"))
	if v == "" {
		v = variant.Patched
	}
	var runs []*results.Run
	for i, d := range dirs {
		rel, err := cleanRel(d)
		if err == nil && slices.Contains(dirs[:i], d) {
			err = badRequest("run %q twice", clip(d))
		}
		if err != nil {
			s.fail(w, r, err)
			return
		}
		run, err := s.loadRun(rel)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		runs = append(runs, run)
		dirs[i] = rel
	}
	doc, err := report.BuildCompareRuns(runs, dirs, v, s.opt.Generator)
	if err != nil {
		s.fail(w, r, httpError{http.StatusUnprocessableEntity, err.Error()})
		return
	}
	page, err := report.HTML(doc)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeHTML(w, page)
}
