package serve

import (
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"strings"

	"lab/internal/gitcmd"
	"lab/internal/history"
	"lab/internal/historyreport"
	"lab/internal/lines"
	"lab/internal/report"
)

const style = `{{define "style"}}
nav a { margin-right: 1em; }
td.n { white-space: nowrap; }
tr.slower td { color: #b00; }
tr.faster td { color: #070; }
tr.dismissed td { color: #777; }
form.annotate { margin: 0.5em 0 1.5em; }
form.annotate input[type=text] { width: 30em; }
{{end}}`

const nav = `<nav><a href="/">lines</a><a href="/runs/">runs</a><a href="/watch">watch queue</a></nav>
{{if .Stale}}<p class="stale">The history has new boots since this page's analysis: they are being read; reload in a moment.</p>{{end}}`

var funcs = template.FuncMap{"short": gitcmd.Short}

type changeRow struct {
	ID, Lab, Row, Group, Before, After, Pct, Verdict, Culprit, Annotation, Class string
}

type lineRow struct {
	ID, Row, Last, Changes string
	Levels, Boots          int
}

func changeOf(l *lines.Line, c lines.Change) changeRow {
	before, after := l.Levels[c.Index-1], l.Levels[c.Index]
	class := changeClass(c)
	verdict := class
	if c.Dismissed() {
		verdict = "slower, dismissed"
		if !c.Slower {
			verdict = "faster, dismissed"
		}
	}
	return changeRow{ID: LineID(l.Key), Lab: l.Key.Lab, Row: historyreport.RowName(l.Key), Group: historyreport.GroupTitle(lines.GroupOf(l.Key)),
		Before: historyreport.LevelLabel(before), After: historyreport.LevelLabel(after), Pct: fmt.Sprintf("%+.3f %%", c.Pct),
		Verdict: verdict, Culprit: historyreport.CulpritText(c), Annotation: historyreport.AnnotationText(c), Class: class}
}

// changeClass is how a change point's row is marked: slower, faster, or
// dismissed by an annotation.
func changeClass(c lines.Change) string {
	switch {
	case c.Dismissed():
		return "dismissed"
	case c.Slower:
		return "slower"
	}
	return "faster"
}

var linePage = report.NewPage("line", style+`{{define "title"}}{{.Row}} · {{.Group}}{{end}}
{{define "body"}}`+nav+`<h1>{{.Row}}</h1>
<p>{{.Group}}{{if .Control}} · a control: no kernel change should move it{{end}}</p>
{{if .Chart}}<figure class="chart">{{.Chart}}</figure>{{end}}
{{if .Changes}}<h2>Change points</h2>
{{range .Changes}}<div class="change {{.Class}}" id="change-{{.N}}">
<h3>{{.Before}} → {{.After}}: {{.Pct}} {{.Verdict}}</h3>
<p>culprit: {{if .CulpritRun}}<a class="culprit" href="{{.CulpritRun}}">{{.Culprit}}</a>{{else}}{{.Culprit}}{{end}}
· boots: <a href="/lines/{{$.ID}}/levels/{{.BeforeLevel}}">before</a>, <a class="after" href="/lines/{{$.ID}}/levels/{{.N}}">after</a></p>
{{if .Where}}<pre class="where">{{.Where}}</pre>{{end}}
{{if .Annotations}}<ul class="annotations">{{range .Annotations}}<li><b>{{.Label}}</b>{{if .Note}}: {{.Note}}{{end}} ({{.Author}}, {{.Added.UTC.Format "2006-01-02 15:04"}})</li>{{end}}</ul>{{end}}
{{if $.Writable}}<form class="annotate" method="post" action="/lines/{{$.ID}}/changes/{{.N}}/annotations">
<select name="label">{{range $.Labels}}<option>{{.}}</option>{{end}}</select>
<input type="text" name="note" placeholder="note" maxlength="2000">
<input type="text" name="author" placeholder="author" maxlength="200" required>
<input type="password" name="token" placeholder="token" required>
<button type="submit">annotate</button></form>{{end}}
</div>{{end}}{{end}}
<h2>Levels</h2>
<table><tr><th>#</th><th>commit</th><th>run</th><th>boots</th><th>value</th><th>change point</th></tr>
{{range .Levels}}<tr class="{{.Class}}"><td class="n">{{.N}}</td><td><code>{{short .Commit}}</code></td><td>{{if .RunLink}}<a href="{{.RunLink}}">{{.Run}}</a>{{else}}{{.Run}}{{end}}</td>
<td class="n"><a class="boots" href="/lines/{{$.ID}}/levels/{{.N}}">{{.Boots}}</a></td><td class="n">{{.Value}}</td><td>{{.Mark}}</td></tr>
{{end}}</table>
<p>line: <code>{{.Key}}</code></p>
{{end}}`, funcs)

type lineChange struct {
	changeRow
	N, BeforeLevel int
	CulpritRun     string
	Where          string // where the culprit moved the path, its bisect's where-block
	Annotations    []history.Annotation
}

type levelRow struct {
	N                                        int
	Commit, Run, RunLink, Value, Mark, Class string
	Boots                                    int
}

// line is one line: its chart, its change points with their culprits and
// annotations (and the form to add one), its levels.
func (s *Server) line(w http.ResponseWriter, r *http.Request) {
	a, l, err := s.lineOf(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	chart, err := historyreport.Chart(l)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	folders := s.folders()
	var changes []lineChange
	for _, c := range l.Changes {
		lc := lineChange{changeRow: changeOf(l, c), N: c.Index, BeforeLevel: c.Index - 1, Annotations: c.Annotations}
		if cu := c.Culprit; cu != nil && cu.BisectRun != "" {
			if dir, ok := folders[l.Key.Lab+"/"+cu.BisectRun]; ok {
				lc.CulpritRun = "/runs/" + dir + "/"
			}
			lc.Where = cu.Where
		}
		changes = append(changes, lc)
	}
	var levels []levelRow
	for i, lv := range l.Levels {
		row := levelRow{N: i, Commit: lv.Commit, Run: lv.RunID + " (" + lv.Kind + ")", Boots: len(lv.Boots), Value: historyreport.MeanText(l.Key.Metric, lv)}
		if dir, ok := folders[l.Key.Lab+"/"+lv.RunID]; ok {
			row.RunLink = "/runs/" + dir + "/"
		}
		if c, ok := l.ChangeAt(i); ok {
			row.Mark, row.Class = historyreport.ChangeMark(l.Key, c), changeClass(c)
		}
		levels = append(levels, row)
	}
	s.page(w, r, linePage, struct {
		ID, Row, Group, Key      string
		Control, Writable, Stale bool
		Chart                    template.HTML
		Changes                  []lineChange
		Levels                   []levelRow
		Labels                   []string
	}{LineID(l.Key), historyreport.RowName(l.Key), historyreport.GroupTitle(lines.GroupOf(l.Key)), l.Key.String(),
		l.Control, s.opt.Token != "", a.stale, chart, changes, levels, history.Labels})
}

var levelPage = report.NewPage("level", style+`{{define "title"}}{{.Row}} at {{.Label}}{{end}}
{{define "body"}}`+nav+`<h1>{{.Row}} at {{.Label}}</h1>
<p><a href="/lines/{{.ID}}">the line</a> · {{.Group}} · run {{if .RunLink}}<a href="{{.RunLink}}">{{.Run}}</a>{{else}}{{.Run}}{{end}} · commit <code>{{.Commit}}</code>
· kernel {{.Kernel}} (image sha256 <code>{{short .Image}}</code>)</p>
<table id="boots"><tr><th>boot</th><th>host</th><th>value</th><th>console</th></tr>
{{range .Boots}}<tr><td class="n">{{.Index}}</td><td>{{.Host}}</td><td class="n">{{.Value}}</td><td>{{if .Console}}<a class="console" href="{{.Console}}">console log</a>{{else}}—{{end}}</td></tr>
{{end}}</table>
{{if not .RunLink}}<p>The run's folder is not in this server's results folder: its console logs cannot be shown.</p>{{end}}
{{end}}`, funcs)

type bootRow struct {
	Index       int
	Host, Value string
	Console     string
}

// level is the boots of one level, each with its console log when the
// run's folder is in the results folder.
func (s *Server) level(w http.ResponseWriter, r *http.Request) {
	a, l, err := s.lineOf(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	n, err := strconv.Atoi(r.PathValue("n"))
	if err != nil || n < 0 || n >= len(l.Levels) {
		s.fail(w, r, notFound("no level %q: the line has levels 0 to %d", clip(r.PathValue("n")), len(l.Levels)-1))
		return
	}
	lv := l.Levels[n]
	dir, found := s.folders()[l.Key.Lab+"/"+lv.RunID]
	var consoles map[int]string
	if found {
		consoles = s.consoles(dir)
	}
	var boots []bootRow
	for i, idx := range lv.Boots {
		host := ""
		if i < len(lv.Hosts) {
			host = lv.Hosts[i]
		}
		boots = append(boots, bootRow{Index: idx, Host: host, Value: historyreport.ValueText(l.Key.Metric, lv.Values[i]), Console: consoles[idx]})
	}
	runLink := ""
	if found {
		runLink = "/runs/" + dir + "/"
	}
	s.page(w, r, levelPage, struct {
		ID, Row, Group, Label, Run, RunLink, Commit, Kernel, Image string
		Stale                                                      bool
		Boots                                                      []bootRow
	}{LineID(l.Key), historyreport.RowName(l.Key), historyreport.GroupTitle(lines.GroupOf(l.Key)), historyreport.LevelLabel(lv),
		lv.RunID + " (" + lv.Kind + ")", runLink, lv.Commit, lv.KernelVersion, lv.ImageSHA256, a.stale, boots})
}

// annotate keeps what a person said of a change point, then shows its line.
func (s *Server) annotate(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		s.fail(w, r, badRequest("the form: %v", err))
		return
	}
	if err := s.authorized(r); err != nil {
		s.fail(w, r, err)
		return
	}
	_, l, err := s.lineOf(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	n, err := strconv.Atoi(r.PathValue("n"))
	if _, ok := l.ChangeAt(n); err != nil || !ok {
		s.fail(w, r, notFound("no change point at level %q of this line", clip(r.PathValue("n"))))
		return
	}
	a := history.Annotation{Lab: l.Key.Lab, Line: l.Key.String(), Commit: l.Levels[n].Ref(),
		Label: r.PostFormValue("label"), Note: strings.TrimSpace(r.PostFormValue("note")), Author: strings.TrimSpace(r.PostFormValue("author"))}
	if err := a.Check(); err != nil {
		s.fail(w, r, badRequest("%v", err))
		return
	}
	if _, err := s.opt.Store.AddAnnotation(r.Context(), a); err != nil {
		s.fail(w, r, err)
		return
	}
	http.Redirect(w, r, fmt.Sprintf("/lines/%s#change-%d", LineID(l.Key), n), http.StatusSeeOther)
}
