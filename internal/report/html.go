package report

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"lab/internal/variant"
	"lab/internal/verdict"
)

// Chart is one SVG figure of the HTML report.
type Chart struct {
	Title string
	// Legend: two kernels are drawn, Base's and Patch's: the caption names
	// their colours.
	Legend      bool
	Base, Patch string
	SVG         template.HTML
}

// Charts draws, for each table of each comparison, throughput against
// producers for every benchmark run at more than one producer count (both
// kernels, mean ± sd over boots), and the change of every row with its
// 95 % interval.
func Charts(d *Document) ([]Chart, error) {
	var out []Chart
	type judged struct {
		prefix, patched, baseline string
		t                         verdict.Table
	}
	var tables []judged
	for _, c := range d.Comparisons {
		prefix := ""
		if d.named() {
			prefix = c.Name() + " · "
		}
		for _, t := range c.Tables {
			tables = append(tables, judged{prefix, string(c.Patched), string(c.Against), t})
		}
	}
	for _, j := range tables {
		t := j.t
		byBench := map[string][]verdict.Row{}
		var order []string
		for _, r := range t.Rows {
			if _, ok := byBench[r.Bench()]; !ok {
				order = append(order, r.Bench())
			}
			byBench[r.Bench()] = append(byBench[r.Bench()], r)
		}
		// Probes first, then the controls.
		sort.SliceStable(order, func(i, j int) bool {
			return !byBench[order[i]][0].Control && byBench[order[j]][0].Control
		})
		for _, b := range order {
			rows := byBench[b]
			if len(rows) < 2 {
				continue
			}
			svg, err := scalingChart(b, rows)
			if err != nil {
				return nil, fmt.Errorf("chart %s: %w", b, err)
			}
			out = append(out, Chart{Title: fmt.Sprintf("%s%s · %s: throughput against producers", j.prefix, t.Name(), b),
				Legend: true, Base: j.baseline, Patch: j.patched, SVG: svg})
		}
		svg, err := changeChart(t)
		if err != nil {
			return nil, fmt.Errorf("change chart: %w", err)
		}
		if svg == "" {
			continue // one variant only (--only): nothing to compare
		}
		out = append(out, Chart{Title: fmt.Sprintf("%s%s: change, %s against %s, 95 %% CI", j.prefix, t.Name(), j.patched, j.baseline), SVG: svg})
	}
	return out, nil
}

type errPoints struct {
	plotter.XYs
	plotter.YErrors
}

var (
	baseColor  = color.RGBA{R: 0x44, G: 0x77, B: 0xaa, A: 0xff}
	patchColor = color.RGBA{R: 0xee, G: 0x66, B: 0x77, A: 0xff}
)

func scalingChart(bench string, rows []verdict.Row) (template.HTML, error) {
	p := plot.New()
	p.X.Label.Text = "producers"
	p.Y.Label.Text = "M/s (mean ± sd over boots)"
	p.Add(plotter.NewGrid())
	var ticks []plot.Tick
	for i, v := range variant.Both {
		var pts errPoints
		for _, r := range rows {
			s := r.Variants.Get(v)
			if s.N == 0 {
				continue
			}
			pts.XYs = append(pts.XYs, plotter.XY{X: float64(r.Producers), Y: s.Mean / 1e6})
			pts.YErrors = append(pts.YErrors, struct{ Low, High float64 }{s.Stddev / 1e6, s.Stddev / 1e6})
			if i == 0 {
				ticks = append(ticks, plot.Tick{Value: float64(r.Producers), Label: fmt.Sprint(r.Producers)})
			}
		}
		if len(pts.XYs) == 0 {
			continue
		}
		line, scatter, err := plotter.NewLinePoints(pts.XYs)
		if err != nil {
			return "", err
		}
		c := baseColor
		if v == variant.Patched {
			c = patchColor
			scatter.Shape = draw.BoxGlyph{}
		}
		line.Color, scatter.Color = c, c
		bars, err := plotter.NewYErrorBars(pts)
		if err != nil {
			return "", err
		}
		bars.Color = c
		p.Add(line, scatter, bars)
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	// No legend inside the plot, where it would cover data: the figure's
	// caption names the colours (Chart.Legend).
	return SVG(p, 6*vg.Inch, 3.5*vg.Inch)
}

func changeChart(t verdict.Table) (template.HTML, error) {
	// Probes first, then the controls, each in the table's order.
	rows := t.AllRows()
	sort.SliceStable(rows, func(i, j int) bool { return !rows[i].Control && rows[j].Control })
	p := plot.New()
	p.Y.Label.Text = "Δ patched/baseline − 1 (%)"
	p.Add(plotter.NewGrid())
	var pts errPoints
	var ticks []plot.Tick
	for i, r := range rows {
		if r.Change.NoData {
			continue
		}
		pts.XYs = append(pts.XYs, plotter.XY{X: float64(i), Y: r.Change.Pct})
		pts.YErrors = append(pts.YErrors, struct{ Low, High float64 }{r.Change.Pct - r.Change.Lo, r.Change.Hi - r.Change.Pct})
		ticks = append(ticks, plot.Tick{Value: float64(i), Label: r.Label()})
	}
	if len(pts.XYs) == 0 {
		return "", nil
	}
	sc, err := plotter.NewScatter(pts.XYs)
	if err != nil {
		return "", err
	}
	sc.Color = patchColor
	bars, err := plotter.NewYErrorBars(pts)
	if err != nil {
		return "", err
	}
	zero, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: 0}, {X: float64(len(rows)) - 0.5, Y: 0}})
	if err != nil {
		return "", err
	}
	zero.Color = color.Gray{Y: 0x80}
	p.Add(zero, sc, bars)
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.X.Tick.Label.Rotation = 0.6
	p.X.Tick.Label.XAlign = draw.XRight
	p.X.Tick.Label.YAlign = draw.YTop
	return SVG(p, 7*vg.Inch, 4*vg.Inch)
}

// SVG draws p as an inline SVG element (no XML prolog), for the reports'
// self-contained HTML pages.
func SVG(p *plot.Plot, w, h vg.Length) (template.HTML, error) {
	wt, err := p.WriterTo(w, h, "svg")
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return "", err
	}
	s := buf.String()
	// Inline in HTML: drop the XML prolog.
	if i := strings.Index(s, "<svg"); i > 0 {
		s = s[i:]
	}
	return template.HTML(s), nil
}

var page = NewPage("report", `{{define "title"}}{{.Doc.Title}}{{end}}
{{define "style"}}
tr.faster td.d { color: #070; font-weight: bold; }
tr.slower td.d { color: #b00; font-weight: bold; }
tr.control td { color: #666; }
tr.sep td { border: none; height: 0.6em; }
span.key { font-weight: bold; margin-left: 0.8em; }
.verdict { font-weight: bold; }
{{end}}
{{define "body"}}<h1>{{.Doc.Title}}</h1>
{{if .Doc.Header}}<ul>{{range .Doc.Header}}<li>{{.}}</li>{{end}}</ul>
{{end}}{{range .Grids}}{{range .Headlines}}<p class="headline">{{.}}</p>
{{end}}{{end}}
{{if .Doc.Claims}}<h2>{{.ClaimsLine}}</h2>
<table><tr><th>claim</th><th>verdict</th><th>evidence</th></tr>
{{range .Claims}}<tr><td>{{.Text}}</td><td class="verdict">{{.Verdict}}</td><td>{{.Evidence}}</td></tr>{{end}}
</table>{{end}}
{{range .Grids}}{{$g := .}}
<h2>{{.Header}}</h2>
<table>
<tr><th>benchmark</th><th>producers</th>{{range .Kernels}}<th>{{.}} (mean ± sd)</th>{{if $g.Medians}}<th>{{.}} median [95% CI]</th>{{end}}{{end}}{{range .Changes}}<th>{{.Head}}</th><th>p</th><th></th>{{end}}</tr>
{{range .Rates}}{{template "row" (rowOf $g .)}}{{end}}
{{if .Ratios}}<tr class="sep"><td colspan="9"></td></tr>{{end}}
{{range .Ratios}}{{template "row" (rowOf $g .)}}{{end}}
</table>
<ul>{{range .Notes}}<li>{{.}}</li>{{end}}</ul>
{{end}}
{{if .Charts}}<h2>Charts</h2>
{{range .Charts}}<figure class="chart"><figcaption>{{.Title}}{{if .Legend}} <span class="key" style="color:#4477aa">● {{.Base}}</span> <span class="key" style="color:#ee6677">■ {{.Patch}}</span>{{end}}</figcaption>{{.SVG}}</figure>
{{end}}{{end}}
{{if .Where}}<h2>Where it moved</h2><pre>{{.Where}}</pre>{{end}}{{if .Doc.Caveats}}<h2>Caveats</h2><ul>{{range .Doc.Caveats}}<li>{{.}}</li>{{end}}</ul>{{end}}
<h2>Provenance</h2>
{{range .Doc.Runs}}<ul>
<li>run {{.RunID}} ({{.Dir}}), {{.Role}}; lab version {{.LabVersion}}; complete: {{.Complete}}</li>
<li>reproduce: <code>{{.Reproducer}}</code></li>
<li>kernel source: Linux {{.Source.Version}}, {{.Source.Desc}}</li>
<li>series: {{.Series}}<ul>{{if .SeriesMode}}<li>{{.SeriesMode}}</li>{{end}}{{if .SeriesBase}}<li>base: {{.SeriesBase}}</li>{{end}}{{range .Patches}}<li>{{.}}</li>{{end}}</ul></li>
<li>kernels<ul>{{range .Kernels}}<li>{{.}}</li>{{end}}</ul></li>
<li>host: {{.Host}}</li>
{{range .QEMU}}<li>{{.}}</li>{{end}}
{{range .Args}}<li>QEMU command: <code>{{.}}</code></li>{{end}}
{{range .Failed}}<li>FAILED {{.}}</li>{{end}}
</ul>{{end}}
<p>Generated by lab {{.Doc.Generator}} from results.json alone.</p>
{{end}}
{{define "row"}}<tr class="{{.Class}}"><td>{{.Name}}</td><td class="n">{{.Producers}}</td>{{range .Sides}}<td class="n">{{.MeanSD}}</td>{{if $.Medians}}<td class="n">{{.Median}}</td>{{end}}{{end}}{{range .Changes}}{{if .}}<td class="n d">{{.Delta}}</td><td class="n">{{.P}}</td><td>{{.Mark}}</td>{{else}}<td class="n d">–</td><td class="n">–</td><td></td>{{end}}{{end}}</tr>
{{end}}`, template.FuncMap{"rowOf": rowOf})

// htmlRow is one line with what the "row" template needs of its grid.
type htmlRow struct {
	Line
	Medians bool
}

func rowOf(g Grid, l Line) htmlRow { return htmlRow{Line: l, Medians: g.Medians} }

type htmlClaim struct{ Text, Verdict, Evidence string }

// HTML is one self-contained page: the headlines and claims, the tables,
// the SVG charts, then caveats and provenance.
func HTML(d *Document) (string, error) {
	charts, err := Charts(d)
	if err != nil {
		return "", err
	}
	var claims []htmlClaim
	for _, c := range d.Claims {
		claims = append(claims, htmlClaim{Text: c.Text(), Verdict: c.Verdict, Evidence: evidence(c)})
	}
	var buf bytes.Buffer
	err = page.ExecuteTemplate(&buf, "shell", struct {
		Doc        *Document
		Grids      []Grid
		Charts     []Chart
		Claims     []htmlClaim
		ClaimsLine string
		Where      string
	}{d, Grids(d), charts, claims, capitalize(ClaimsLine(d.Claims)), strings.TrimPrefix(WhereText(d), "\n")})
	return buf.String(), err
}
