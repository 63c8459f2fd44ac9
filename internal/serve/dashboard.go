package serve

import (
	"fmt"
	"html/template"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"lab/internal/history"
	"lab/internal/historyreport"
	"lab/internal/lines"
	"lab/internal/report"
)

// MaxListed is how many lines the dashboard lists at most, those with a
// change point first: a history of thousands of lines is narrowed by the
// filters, not scrolled (the page stays under 300 kB at 5,000 lines).
const MaxListed = 300

// Filters are what the dashboard can be narrowed by, each a field of a
// line's key. Their order is the form's.
var Filters = []string{"lab", "benchmark", "arch", "host", "method"}

// filterValue is a line's value for one of Filters.
func filterValue(k history.LineKey, name string) string {
	switch name {
	case "lab":
		return k.Lab
	case "benchmark":
		return k.Benchmark
	case "arch":
		return k.Arch
	case "host":
		return k.HostClass
	case "method":
		if k.Method == "" {
			return k.Clock
		}
		return k.Clock + " · " + k.Method
	}
	return ""
}

// filter is a request's choice of each of Filters ("" for any).
type filter map[string]string

func filterOf(q url.Values) filter {
	f := filter{}
	for _, name := range Filters {
		if v := q.Get(name); v != "" {
			f[name] = v
		}
	}
	return f
}

func (f filter) match(k history.LineKey) bool {
	for name, v := range f {
		if filterValue(k, name) != v {
			return false
		}
	}
	return true
}

// dashboard is the index made once per analysis of the history: the lines
// with a change point (most recent change first), the others by group,
// and every value each filter can take.
type dashboard struct {
	changed []*lines.Line
	groups  []dashGroup
	options map[string][]string
}

type dashGroup struct {
	title string
	lines []*lines.Line
}

func newDashboard(h *lines.History) *dashboard {
	d := &dashboard{options: map[string][]string{}}
	index := map[lines.Group]int{}
	seen := map[string]map[string]bool{}
	for _, name := range Filters {
		seen[name] = map[string]bool{}
	}
	for i := range h.Lines {
		l := &h.Lines[i]
		for _, name := range Filters {
			if v := filterValue(l.Key, name); !seen[name][v] {
				seen[name][v] = true
				d.options[name] = append(d.options[name], v)
			}
		}
		if len(l.Changes) > 0 {
			d.changed = append(d.changed, l)
			continue
		}
		g := lines.GroupOf(l.Key)
		n, ok := index[g]
		if !ok {
			n = len(d.groups)
			index[g] = n
			d.groups = append(d.groups, dashGroup{title: historyreport.GroupTitle(g)})
		}
		d.groups[n].lines = append(d.groups[n].lines, l)
	}
	for _, name := range Filters {
		slices.Sort(d.options[name])
	}
	// The most recent change first: where a team looks after a track.
	slices.SortStableFunc(d.changed, func(a, b *lines.Line) int {
		return lastChange(b).Compare(lastChange(a))
	})
	return d
}

// lastChange is when a line's last change point's level was measured.
func lastChange(l *lines.Line) time.Time {
	return l.Levels[l.Changes[len(l.Changes)-1].Index].Started
}

var dashboardPage = report.NewPage("index", style+`{{define "title"}}lab · {{.Where}}{{end}}
{{define "body"}}`+nav+`<h1>lab history</h1>
<p>{{.Summary}}</p>
<form id="filters" method="get" action="/">{{range .Filters}}<label>{{.Name}} <select name="{{.Name}}"><option value="">any</option>{{$v := .Value}}{{range .Options}}<option{{if eq . $v}} selected{{end}}>{{.}}</option>{{end}}</select></label>
{{end}}<button type="submit">filter</button> <a href="/">all lines</a></form>
<p id="matched">{{.Matched}}</p>
{{if .Changes}}<h2>Change points</h2>
<table id="changes"><tr><th>lab</th><th>line</th><th>chart</th><th>before</th><th>after</th><th>change</th><th></th><th>culprit</th><th>annotation</th></tr>
{{range .Changes}}<tr class="{{.Class}}"><td>{{.Lab}}</td><td><a href="/lines/{{.ID}}">{{.Row}}</a><br><small>{{.Group}}</small></td><td>{{.Chart}}</td>
<td>{{.Before}}</td><td>{{.After}}</td><td class="n">{{.Pct}}</td><td>{{.Verdict}}</td><td>{{.Culprit}}</td><td>{{.Annotation}}</td></tr>
{{end}}</table>{{end}}
<h2>Lines without a change point</h2>
{{range .Groups}}<details class="group"><summary>{{.Title}}: {{.Count}}</summary>
<table><tr><th>row</th><th>chart</th><th>levels</th><th>figures</th><th>last</th><th>change points</th></tr>
{{range .Lines}}<tr><td><a class="line" href="/lines/{{.ID}}">{{.Row}}</a></td><td>{{.Chart}}</td><td class="n">{{.Levels}}</td><td class="n">{{.Boots}}</td><td class="n">{{.Last}}</td><td>{{.Changes}}</td></tr>
{{end}}</table>{{if .More}}<p>{{.More}}</p>{{end}}</details>
{{end}}{{if .More}}<p id="more">{{.More}}</p>{{end}}
<p>history: {{.Where}}</p>
<script>
(function () {
  var shown = {{.Generation}};
  setInterval(function () {
    fetch("/generation").then(function (r) { return r.json(); }).then(function (g) {
      if (!g.stale && g.generation !== shown) { location.reload(); }
    }).catch(function () {});
  }, {{.RefreshMS}});
})();
</script>
{{end}}`, funcs)

type filterField struct {
	Name, Value string
	Options     []string
}

type dashChange struct {
	changeRow
	Chart template.HTML
}

type dashLine struct {
	lineRow
	Chart template.HTML
}

type dashGroupRows struct {
	Title, Count, More string
	Lines              []dashLine
}

// index is the dashboard: the filters, the change points of the lines
// that match them, then the other matching lines by group, folded, at
// most MaxListed lines in all.
func (s *Server) index(w http.ResponseWriter, r *http.Request) {
	a, err := s.history(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	f := filterOf(r.URL.Query())
	var fields []filterField
	for _, name := range Filters {
		fields = append(fields, filterField{Name: name, Value: f[name], Options: a.dash.options[name]})
	}
	listed, matched := 0, 0
	var changes []dashChange
	for _, l := range a.dash.changed {
		if !f.match(l.Key) {
			continue
		}
		matched++
		if listed < MaxListed {
			listed++
			chart := sparkline(l)
			for _, c := range l.Changes {
				changes = append(changes, dashChange{changeOf(l, c), chart})
			}
		}
	}
	var groups []dashGroupRows
	unlisted := 0 // groups past MaxListed: counted, not drawn
	for _, g := range a.dash.groups {
		gr := dashGroupRows{Title: g.title}
		n := 0
		for _, l := range g.lines {
			if !f.match(l.Key) {
				continue
			}
			n++
			if listed < MaxListed {
				listed++
				gr.Lines = append(gr.Lines, dashLine{lineRowOf(l), sparkline(l)})
			}
		}
		matched += n
		switch {
		case n == 0:
		case len(gr.Lines) == 0:
			unlisted++
		default:
			gr.Count = plural(n, "line")
			if left := n - len(gr.Lines); left > 0 {
				gr.More = fmt.Sprintf("%s more: choose a lab or a benchmark above to list them.", plural(left, "line"))
			}
			groups = append(groups, gr)
		}
	}
	text := fmt.Sprintf("%s of %s match", plural(matched, "line"), plural(len(a.hist.Lines), "line"))
	if listed < matched {
		text += fmt.Sprintf("; %d are listed, those with a change point first", listed)
	}
	more := ""
	if unlisted > 0 {
		more = fmt.Sprintf("%s more: choose a lab or a benchmark above to list their lines.", plural(unlisted, "group"))
	}
	s.page(w, r, dashboardPage, struct {
		Where, Summary, Matched, Generation, More string
		RefreshMS                                 int
		Stale                                     bool
		Filters                                   []filterField
		Changes                                   []dashChange
		Groups                                    []dashGroupRows
	}{a.hist.Where, a.hist.Summary(), text + ".", a.gen, more, int(s.opt.Refresh.Milliseconds()), a.stale, fields, changes, groups})
}

func lineRowOf(l *lines.Line) lineRow {
	last := l.Levels[len(l.Levels)-1]
	return lineRow{ID: LineID(l.Key), Row: historyreport.RowName(l.Key), Levels: len(l.Levels), Boots: l.Boots(),
		Last: historyreport.MeanText(l.Key.Metric, last), Changes: historyreport.ChangesText(l)}
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// sparkPoints is the most levels a line's small chart draws: a longer
// line is drawn by its last sparkPoints levels.
const sparkPoints = 60

// sparkline is a line's small chart: its levels' means, the last
// sparkPoints of them, scaled to the chart's height, with each change
// point in view marked.
func sparkline(l *lines.Line) template.HTML {
	const w, h = 120, 24
	from := max(0, len(l.Levels)-sparkPoints)
	levels := l.Levels[from:]
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, lv := range levels {
		lo, hi = math.Min(lo, lv.Mean), math.Max(hi, lv.Mean)
	}
	xy := func(i int, v float64) (float64, float64) {
		x := float64(w) / 2
		if len(levels) > 1 {
			x = float64(i) * float64(w-4) / float64(len(levels)-1)
		}
		y := float64(h) / 2
		if hi > lo {
			y = float64(h-2) - (v-lo)/(hi-lo)*float64(h-4)
		}
		return x + 2, y
	}
	var pts strings.Builder
	for i, lv := range levels {
		x, y := xy(i, lv.Mean)
		fmt.Fprintf(&pts, "%.0f,%.0f ", x, y)
	}
	var marks strings.Builder
	for _, c := range l.Changes {
		if c.Index >= from {
			x, y := xy(c.Index-from, l.Levels[c.Index].Mean)
			fmt.Fprintf(&marks, `<circle cx="%.0f" cy="%.0f" r="2.5" fill="%s"/>`, x, y, sparkColor(c))
		}
	}
	return template.HTML(fmt.Sprintf(`<svg class="spark" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%d levels"><polyline fill="none" stroke="#446" points="%s"/>%s</svg>`,
		w, h, w, h, len(l.Levels), strings.TrimSpace(pts.String()), marks.String()))
}

func sparkColor(c lines.Change) string {
	switch changeClass(c) {
	case "slower":
		return "#b00"
	case "faster":
		return "#070"
	}
	return "#777"
}
