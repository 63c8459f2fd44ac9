package historyreport

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"lab/internal/history"
	"lab/internal/lines"
	"lab/internal/report"
)

// maxTicks is the most commits a chart's axis names; others are drawn
// unnamed.
const maxTicks = 24

var (
	pointColor  = color.RGBA{R: 0x44, G: 0x77, B: 0xaa, A: 0xff}
	levelColor  = color.Gray{Y: 0x90}
	slowerColor = color.RGBA{R: 0xcc, G: 0x22, B: 0x22, A: 0xff}
	fasterColor = color.RGBA{R: 0x22, G: 0x88, B: 0x33, A: 0xff}
)

type errPoints struct {
	plotter.XYs
	plotter.YErrors
}

// Chart draws a line against its levels (commits, in order): each
// level's mean (± the sd of its boots when it has several), the mean of each stretch between
// change points, and each change point as a vertical line, red where the
// figure went down and green where it went up. A series of one level has
// no chart ("" and no error).
func Chart(s *lines.Line) (template.HTML, error) {
	if len(s.Levels) < 2 {
		return "", nil
	}
	scale := 1.0
	if s.Key.Metric != history.MetricScaling {
		scale = 1e-6
	}
	p := plot.New()
	p.Y.Label.Text = unit(s.Key.Metric)
	p.X.Label.Text = "commit (or run), in the history's order"
	p.Add(plotter.NewGrid())
	var pts plotter.XYs
	var spread errPoints // the levels of several boots: ± their sd
	var ticks []plot.Tick
	every := (len(s.Levels) + maxTicks - 1) / maxTicks
	lo, hi := s.Levels[0].Mean*scale, s.Levels[0].Mean*scale
	for i, l := range s.Levels {
		y := l.Mean * scale
		pts = append(pts, plotter.XY{X: float64(i), Y: y})
		if len(l.Values) > 1 {
			spread.XYs = append(spread.XYs, plotter.XY{X: float64(i), Y: y})
			spread.YErrors = append(spread.YErrors, struct{ Low, High float64 }{l.SD * scale, l.SD * scale})
		}
		lo, hi = min(lo, y-l.SD*scale), max(hi, y+l.SD*scale)
		label := ""
		if i%every == 0 {
			label = LevelLabel(l)
		}
		ticks = append(ticks, plot.Tick{Value: float64(i), Label: label})
	}
	if err := addLevels(s, p, scale, lo, hi); err != nil {
		return "", err
	}
	sc, err := plotter.NewScatter(pts)
	if err != nil {
		return "", err
	}
	sc.Color = pointColor
	p.Add(sc)
	if len(spread.XYs) > 0 {
		bars, err := plotter.NewYErrorBars(spread)
		if err != nil {
			return "", err
		}
		bars.Color = pointColor
		p.Add(bars)
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.Y.Tick.Marker = preciseTicks{}
	p.X.Tick.Label.Rotation = 0.6
	p.X.Tick.Label.XAlign = draw.XRight
	p.X.Tick.Label.YAlign = draw.YTop
	return report.SVG(p, 7*vg.Inch, 3.5*vg.Inch)
}

// addLevels draws each stretch between change points at its mean (dashed)
// and each change point as a line across the chart (lo to hi, padded),
// coloured by its direction.
func addLevels(s *lines.Line, p *plot.Plot, scale, lo, hi float64) error {
	// Each stretch between change points, at its mean.
	start := 0
	ends := []int{}
	for _, c := range s.Changes {
		ends = append(ends, c.Index)
	}
	ends = append(ends, len(s.Levels))
	for _, end := range ends {
		m, _ := lines.MeanSD(levelMeans(s.Levels[start:end]))
		line, err := plotter.NewLine(plotter.XYs{{X: float64(start) - 0.4, Y: m * scale}, {X: float64(end-1) + 0.4, Y: m * scale}})
		if err != nil {
			return err
		}
		line.Color = levelColor
		line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(line)
		start = end
	}
	pad := (hi - lo) * 0.1
	if pad == 0 {
		pad = hi * 1e-4
	}
	for _, c := range s.Changes {
		x := float64(c.Index) - 0.5
		line, err := plotter.NewLine(plotter.XYs{{X: x, Y: lo - pad}, {X: x, Y: hi + pad}})
		if err != nil {
			return err
		}
		line.Color = fasterColor
		if c.Slower {
			line.Color = slowerColor
		}
		line.Width = vg.Points(1.5)
		p.Add(line)
	}
	return nil
}

// preciseTicks are gonum's default ticks labelled with as many decimals as
// their spacing needs: an icount series spans a few hundredths of a
// percent, where the default labels repeat ("1.08, 1.08").
type preciseTicks struct{}

func (preciseTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	var major []float64
	for _, t := range ticks {
		if t.Label != "" {
			major = append(major, t.Value)
		}
	}
	if len(major) < 2 {
		return ticks
	}
	decimals := max(0, int(math.Ceil(-math.Log10(major[1]-major[0]))))
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = strconv.FormatFloat(ticks[i].Value, 'f', decimals, 64)
		}
	}
	return ticks
}

func levelMeans(ls []lines.Level) []float64 {
	out := make([]float64, len(ls))
	for i, l := range ls {
		out[i] = l.Mean
	}
	return out
}

type htmlChart struct {
	Title string
	SVG   template.HTML
}

type htmlGroup struct {
	Table  Table
	Charts []htmlChart
}

var page = report.NewPage("history", `{{define "title"}}{{.Title}}{{end}}
{{define "style"}}
tr.slower td { color: #b00; font-weight: bold; }
tr.faster td { color: #070; font-weight: bold; }
{{end}}
{{define "body"}}<h1>{{.Title}}</h1>
<p>{{.Summary}}</p>
{{if .Changes}}<h2>Change points</h2>
{{range .Changes}}{{template "table" .}}{{end}}{{end}}
<h2>Levels</h2>
<p>A level is the boots of one commit in one run (mean ± sd). Each chart marks a change point with a line between
two levels, red where the figure went down, green where it went up; dashed, the mean of each stretch between.</p>
{{range .Groups}}<h3>{{.Table.Title}}</h3>
{{range .Charts}}<figure class="chart"><figcaption>{{.Title}}</figcaption>{{.SVG}}</figure>
{{end}}{{template "rows" .Table}}{{end}}
<p>{{.Note}}</p>
<p>Generated by lab from the history alone.</p>
{{end}}
{{define "table"}}<h3>{{.Title}}</h3>
{{template "rows" .}}{{end}}
{{define "rows"}}<table><tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr>
{{range $i, $r := .Rows}}<tr class="{{index $.Marked $i}}">{{range $j, $c := $r}}<td{{if index $.Right $j}} class="n"{{end}}>{{$c}}</td>{{end}}</tr>
{{end}}</table>
{{end}}`, nil)

// HTML is the history as one self-contained page: the change points, then
// each group's levels and a chart of every series with more than one
// level. No network, no external asset: the charts are inline SVG.
func (h *History) HTML() (string, error) {
	var groups []htmlGroup
	tables := h.LevelTables()
	for i, g := range h.Groups() {
		hg := htmlGroup{Table: tables[i]}
		for _, s := range h.InGroup(g) {
			svg, err := Chart(s)
			if err != nil {
				return "", fmt.Errorf("chart of %s: %w", s.Key, err)
			}
			if svg != "" {
				hg.Charts = append(hg.Charts, htmlChart{Title: fmt.Sprintf("%s%s: %s against commit", RowName(s.Key), controlNote(s), unit(s.Key.Metric)), SVG: svg})
			}
		}
		groups = append(groups, hg)
	}
	var buf bytes.Buffer
	err := page.ExecuteTemplate(&buf, "shell", struct {
		Title, Summary, Note string
		Changes              []Table
		Groups               []htmlGroup
	}{h.title(), h.Summary(), h.detectNote(), h.ChangeTables(), groups})
	return buf.String(), err
}
