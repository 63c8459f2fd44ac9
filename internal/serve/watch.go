package serve

import (
	"net/http"
	"strings"

	"lab/internal/history"
	"lab/internal/report"
)

var watchPage = report.NewPage("watch", style+`{{define "title"}}lab · watch queue{{end}}
{{define "body"}}`+nav+`<h1>The list watcher's queue</h1>
{{if not .Series}}<p>No series yet: lab watch records here each series it reads from a list.</p>{{end}}
{{range .States}}<h2>{{.State}} ({{len .Series}})</h2>
<table class="watch"><tr><th>series</th><th>version</th><th>lab</th><th>why</th><th>base</th><th>run</th><th>reply</th><th>updated</th></tr>
{{range .Series}}<tr><td>{{.Name}}</td><td class="n">{{.Version}}</td><td>{{.Lab}}</td><td>{{.Why}}</td><td>{{.Base}}</td>
<td>{{if .RunLink}}<a href="{{.RunLink}}">{{.RunDir}}</a>{{else}}{{.RunDir}}{{end}}</td><td>{{if .Reply}}<details><summary><code>{{.Reply}}</code> ({{.MailState}})</summary><pre>{{.Mail}}</pre></details>{{end}}</td>
<td>{{.Updated.UTC.Format "2006-01-02 15:04"}}</td></tr>
{{end}}</table>{{end}}
{{end}}`, nil)

// watchStates is the order the queue shows states in: what needs a look
// first.
var watchStates = []string{"running", "queued", "waiting", "failed", "incomplete", "answered", "skipped"}

type watchRow struct {
	history.WatchSeries
	RunLink, MailState, Mail string
}

// watch is the list watcher's queue: every series it read, by state, with
// the reply it sent.
func (s *Server) watch(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	list, err := s.opt.Store.WatchSeriesList(ctx, "")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out, err := s.opt.Store.Outbox(ctx)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	mails := map[string]history.OutMail{}
	for _, m := range out {
		mails[m.MessageID] = m
	}
	folders := map[string]bool{}
	for _, f := range s.runFolders() {
		folders[f.Dir] = true
	}
	byState := map[string][]watchRow{}
	for _, ws := range list {
		row := watchRow{WatchSeries: ws}
		if m, ok := mails[ws.Reply]; ok {
			row.MailState, row.Mail = m.State, string(m.Raw)
		}
		if rel := s.relRun(ws.RunDir); rel != "" && folders[rel] {
			row.RunLink = "/runs/" + rel + "/"
		}
		byState[ws.State] = append(byState[ws.State], row)
	}
	type stateRows struct {
		State  string
		Series []watchRow
	}
	var states []stateRows
	for _, st := range append(watchStates, otherStates(byState)...) {
		if rows := byState[st]; len(rows) > 0 {
			states = append(states, stateRows{st, rows})
		}
	}
	s.page(w, r, watchPage, struct {
		Stale  bool
		Series []history.WatchSeries
		States []stateRows
	}{false, list, states})
}

// otherStates are states the page does not know yet, so none is hidden.
func otherStates(m map[string][]watchRow) []string {
	var out []string
	for st := range m {
		known := false
		for _, k := range watchStates {
			known = known || k == st
		}
		if !known {
			out = append(out, st)
		}
	}
	return out
}

// relRun is a run folder the watcher recorded, relative to the results
// folder, or "" when it is elsewhere.
func (s *Server) relRun(dir string) string {
	if dir == "" || s.opt.Results == "" {
		return ""
	}
	rel, ok := strings.CutPrefix(dir, strings.TrimSuffix(s.opt.Results, "/")+"/")
	if !ok {
		return ""
	}
	return strings.Trim(rel, "/")
}
