// Package bisectreport writes what people and CI read of a bisect, from
// its results.json alone: the headline, Markdown, 80 columns, JSON, JUnit
// and one HTML page with the figure at each step. Package bisect searches;
// this renders what it recorded.
package bisectreport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"lab/internal/bisect"
	"lab/internal/gitcmd"
	"lab/internal/insnprof"
	"lab/internal/publish"
	"lab/internal/report"
	"lab/internal/results"
	"lab/internal/stats"
	"lab/internal/verdict"
)

// Files are a bisect's reports by file name, from its results.json alone.
func Files(r *results.Run) (map[string][]byte, error) {
	out := map[string][]byte{
		"report.md":     []byte(Markdown(r)),
		"report-80.txt": []byte(Plain(r)),
		"report.txt":    []byte(Plain(r)),
	}
	j, err := json.MarshalIndent(r.Bisect, "", "  ")
	if err != nil {
		return nil, err
	}
	out["report.json"] = j
	h, err := HTML(r)
	if err != nil {
		return nil, err
	}
	out["report.html"] = []byte(h)
	x, err := JUnit(r).XML()
	if err != nil {
		return nil, err
	}
	out["junit.xml"] = x
	return out, nil
}

// Outputs renders a bisect's reports once for every place they go: the
// report files, the terminal (the 80-column report), JUnit and the job
// summary (the Markdown report).
func Outputs(r *results.Run) (publish.Outputs, error) {
	files, err := Files(r)
	if err != nil {
		return publish.Outputs{}, err
	}
	return publish.Outputs{Files: files, Text: "\n" + string(files["report-80.txt"]), JUnit: files["junit.xml"], Summary: string(files["report.md"])}, nil
}

// Headline says what the bisect found in one paragraph, in the style of the
// kernel test robot.
func Headline(r *results.Run) string {
	bi := r.Bisect
	if bi == nil || bi.Outcome == "" {
		return fmt.Sprintf("lab bisect of %s did not finish.", r.Lab)
	}
	d := digits(bi)
	where := shapeText(r)
	ends := fmt.Sprintf("%s %s between the ends (%s)", bi.Figure, changeText(bi, bi.Change), where)
	steps, boots := measuredSteps(bi), bi.Boots
	n := len(bi.Steps) - 1
	spent := fmt.Sprintf("%d boots", boots)
	if bi.Earlier > 0 {
		spent += fmt.Sprintf(" (the ends' figures from %d earlier)", bi.Earlier)
	}
	cost := fmt.Sprintf("%d steps between the ends and %s for %d patches (a bisect needs about ⌈log2 n⌉ = %d)", steps, spent, n, int(math.Ceil(math.Log2(float64(max(n, 1))))))
	if bi.Each {
		cost = fmt.Sprintf("every one of the %d steps measured, %d boots", n+1, boots)
	}
	switch bi.Outcome {
	case bisect.NoChange:
		return fmt.Sprintf("lab bisect: the ends do not differ: %s; nothing to bisect.", ends)
	case bisect.Attributed:
		var parts []string
		for _, st := range bi.Steps[1:] {
			if own, ok := ownChange(bi, st.Index); ok {
				parts = append(parts, fmt.Sprintf("step %d %s", st.Index, pctText(own, d)))
			}
		}
		return fmt.Sprintf("lab bisect --each: %s; patch by patch: %s; the largest is step %d, %s. %s.",
			ends, strings.Join(parts, ", "), bi.Culprit, stepName(bi.Steps[bi.Culprit]), cost)
	case bisect.Found:
		c := bi.Steps[bi.Culprit]
		return fmt.Sprintf("lab bisect: %s; culprit: step %d, %s: %s on its own, %.0f %% of the change. %s.",
			ends, c.Index, stepName(c), changeText(bi, bi.Own), 100*bi.Explains, cost)
	case bisect.Probed:
		c := bi.Steps[bi.Culprit]
		own := ""
		if len(c.Values) > 0 {
			own = fmt.Sprintf(" (%s %s)", bi.Figure, bisect.FormatFigure(bi.Figure, bisect.Mean(c.Values)))
		}
		return fmt.Sprintf("lab bisect --run: %s; %s%s is %s: git bisect exit %d.",
			ends, stepName(c), own, c.Verdict, bisect.RunExitCode(bi))
	case bisect.Range:
		return fmt.Sprintf("lab bisect: %s; the culprit is one of steps %d..%d (%s): the steps between could not be measured. %s.",
			ends, bi.First, bi.Culprit, namesOf(bi, bi.First, bi.Culprit), cost)
	}
	return fmt.Sprintf("lab bisect: %s; no confident culprit: %s. Suspects: steps %d..%d. %s.",
		ends, strings.Join(bi.Notes, "; "), bi.First, bi.Culprit, cost)
}

func measuredSteps(bi *results.Bisect) int {
	n := 0
	for _, st := range bi.Steps[1 : len(bi.Steps)-1] {
		if len(st.Values) > 0 || st.Verdict == bisect.Skipped || st.Verdict == bisect.NoCode {
			n++
		}
	}
	return n
}

func namesOf(bi *results.Bisect, from, to int) string {
	var n []string
	for k := from; k <= to && k < len(bi.Steps); k++ {
		n = append(n, bi.Steps[k].Name)
	}
	return strings.Join(n, ", ")
}

func stepName(st results.BisectStep) string {
	if st.Subject == "" {
		return st.Name
	}
	return fmt.Sprintf("%s %q", st.Name, st.Subject)
}

func digits(bi *results.Bisect) int {
	if bi.Clock == results.ClockICount {
		return 3
	}
	return 1
}

// changeText is a change as this bisect judged it: under icount against
// the controls' floor (p cannot reach 0.05 with one or two boots a step),
// under the wall clock with its interval and p.
func changeText(bi *results.Bisect, c stats.Change) string {
	if bi.Clock == results.ClockICount && !c.NoData {
		beyond := "beyond"
		if math.Abs(c.Pct) <= bi.FloorPct {
			beyond = "within"
		}
		return fmt.Sprintf("%+.3f %% (%s the %.3f %% icount floor)", c.Pct, beyond, bi.FloorPct)
	}
	return pctCI(c, digits(bi))
}

func pctCI(c stats.Change, d int) string {
	switch {
	case c.NoData:
		return "–"
	case c.Exact:
		return c.Words()
	}
	return fmt.Sprintf("%+.*f %% [%+.*f, %+.*f], p = %.3f", d, c.Pct, d, c.Lo, d, c.Hi, c.P)
}

func pctText(c stats.Change, d int) string {
	if c.NoData {
		return "–"
	}
	return fmt.Sprintf("%+.*f %%", d, c.Pct)
}

func shapeText(r *results.Run) string {
	for _, b := range r.Boots {
		topo := fmt.Sprintf("%d vCPU", b.CPUs)
		if b.Shape != nil {
			topo = b.Shape.String()
		}
		return fmt.Sprintf("%s · %s · %s · %s", b.Arch, topo, strings.ToUpper(b.Accel.Name), b.Clock)
	}
	return "no boots"
}

// ownChange is step k against the nearest step before it with figures.
func ownChange(bi *results.Bisect, k int) (stats.Change, bool) {
	cur := valuesOf(bi, k)
	if len(cur) == 0 {
		return stats.Change{}, false
	}
	for j := k - 1; j >= 0; j-- {
		if prev := valuesOf(bi, j); len(prev) > 0 {
			return stats.Compare(prev, cur, bi.FloorPct), true
		}
	}
	return stats.Change{}, false
}

// valuesOf are step k's figures, or those of the step with its image.
func valuesOf(bi *results.Bisect, k int) []float64 {
	st := bi.Steps[k]
	if len(st.Values) == 0 && st.SameAs >= 0 && st.SameAs < len(bi.Steps) {
		return bi.Steps[st.SameAs].Values
	}
	return st.Values
}

// figureCell is a step's figure: mean ± sd (n).
func figureCell(bi *results.Bisect, k int) string {
	v := valuesOf(bi, k)
	if len(v) == 0 {
		return "–"
	}
	s := stats.Summarize(v)
	scale, unit, d := 1e6, "", 5
	if bi.Figure.Scaling {
		scale, d = 1, 4
	}
	if bi.Clock != results.ClockICount {
		d = 3
	}
	if s.N == 1 {
		return fmt.Sprintf("%.*f%s (n=1)", d, s.Mean/scale, unit)
	}
	return fmt.Sprintf("%.*f ± %.*f (n=%d)", d, s.Mean/scale, d, s.Stddev/scale, s.N)
}

// rows are the per-step lines every format shows.
type stepRow struct {
	Step, Name, Subject, Figure, Own, Cumulative, Verdict, Kernel, Build, Image, Boots string
	Culprit                                                                            bool
}

func stepRows(r *results.Run) []stepRow {
	bi := r.Bisect
	d := digits(bi)
	var out []stepRow
	for _, st := range bi.Steps {
		row := stepRow{Step: fmt.Sprint(st.Index), Name: st.Name, Subject: st.Subject, Figure: figureCell(bi, st.Index), Verdict: st.Verdict,
			Boots: fmt.Sprint(len(st.Boots)), Own: "", Cumulative: ""}
		if st.Index > 0 {
			if own, ok := ownChange(bi, st.Index); ok {
				row.Own = pctCI(own, d)
				if len(valuesOf(bi, st.Index)) < 2 || bi.Clock == results.ClockICount {
					row.Own = pctText(own, d)
				}
			}
			if v := valuesOf(bi, st.Index); len(v) > 0 && len(valuesOf(bi, 0)) > 0 {
				row.Cumulative = pctText(stats.Compare(valuesOf(bi, 0), v, bi.FloorPct), d)
			}
		}
		if st.Skip != "" {
			row.Verdict += ": " + strings.SplitN(st.Skip, "\n", 2)[0]
		}
		if st.SameAs >= 0 {
			row.Verdict = fmt.Sprintf("%s (the image of step %d)", st.Verdict, st.SameAs)
		}
		if st.Kernel != nil {
			row.Kernel = gitcmd.Short(st.Kernel.Info.Key)
			row.Image = gitcmd.Short(st.Kernel.Info.ImageSHA256)
			switch {
			case st.Kernel.Cached:
				row.Build = "cached"
			case st.Kernel.Info.SameAs != "":
				row.Build = "its parent's image (no file a build reads changed)"
			default:
				row.Build = fmt.Sprintf("%.0f s, %d compiled", st.BuildSeconds, st.Kernel.Info.Compiled)
			}
		}
		row.Culprit = (bi.Outcome == bisect.Found || bi.Outcome == bisect.Attributed) && st.Index == bi.Culprit
		out = append(out, row)
	}
	return out
}

// Markdown is the bisect's report: the answer, the steps, the log.
func Markdown(r *results.Run) string {
	var b strings.Builder
	bi := r.Bisect
	fmt.Fprintf(&b, "# lab bisect: %s\n\n%s\n\n", r.Lab, Headline(r))
	fmt.Fprintf(&b, "Followed %s (%s), %s.\n\n", bi.Figure, bi.Chosen, judgedBy(bi))
	b.WriteString("| step | patch or commit | subject | figure | own change | cumulative | verdict |\n|--:|---|---|--:|--:|--:|---|\n")
	for _, row := range stepRows(r) {
		mark := ""
		if row.Culprit {
			mark = " **← culprit**"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s%s |\n", row.Step, row.Name, row.Subject, row.Figure, row.Own, row.Cumulative, row.Verdict, mark)
	}
	if w := whereText(r); w != "" {
		b.WriteString("\n## Where the culprit moved it\n\n```" + w + "```\n")
	}
	b.WriteString("\n## Bisect log\n\n| step | kernel key | build | image sha256 | boots |\n|--:|---|---|---|--:|\n")
	for _, row := range stepRows(r) {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", row.Step, row.Kernel, row.Build, row.Image, row.Boots)
	}
	if len(bi.Notes) > 0 {
		b.WriteString("\n## Notes\n\n")
		for _, n := range bi.Notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
	}
	b.WriteString("\n## Provenance\n\n")
	for _, l := range provenance(r) {
		fmt.Fprintf(&b, "- %s\n", l)
	}
	return b.String()
}

func judgedBy(bi *results.Bisect) string {
	if bi.Clock == results.ClockICount {
		like := bi.LikePct
		if like == 0 { // recorded before like_pct existed
			like = bi.FloorPct
		}
		least := bi.MinFloorPct
		if least == 0 { // recorded before min_floor_pct existed
			least = verdict.MinICountFloorPct
		}
		return fmt.Sprintf("judged under icount: one boot a step (two when near an end), a step is like an end when within %.3f %% of it (the larger of the %.3f %% floor — 3× the controls' spread and change, at least %.3f %% — and a tenth of the ends' change)", like, bi.FloorPct, least)
	}
	return "judged under the wall clock: boots of each step interleaved with boots of the ends, Mann-Whitney U against each end at 0.05, more boots while unclear"
}

func provenance(r *results.Run) []string {
	bi := r.Bisect
	out := []string{
		"reproduce: `" + report.Reproducer(r) + "`",
		fmt.Sprintf("run %s, lab version %s, complete: %v, %s", r.RunID, r.LabVersion, r.Complete, r.Elapsed.Round(1e9)),
		fmt.Sprintf("bisected: %s", bi.Range),
		fmt.Sprintf("kernel source: Linux %s, %s (base commit %s)", r.Source.Version, r.Source.Desc, gitcmd.Short(r.Source.Commit)),
		fmt.Sprintf("host: %s, %d CPUs", r.Host.CPUModel, r.Host.CPUs),
	}
	if bi.Parallel > 1 {
		out = append(out, fmt.Sprintf("boots: up to %d at a time (icount: the figures are guest instructions, which a guest beside another does not change)", bi.Parallel))
	}
	for _, b := range r.Boots {
		if b.Outcome != nil {
			out = append(out, fmt.Sprintf("QEMU %s, %s (%s): `%s %s`", b.Outcome.QEMUVersion, strings.ToUpper(b.Accel.Name), b.Accel.Reason, b.Outcome.QEMU, strings.Join(b.Outcome.Args, " ")))
			break
		}
	}
	return out
}

// Plain is the report in 80 columns, for a mailing list.
func Plain(r *results.Run) string {
	var b strings.Builder
	b.WriteString(report.Wrap(Headline(r), 80, "  ") + "\n\n")
	fmt.Fprintf(&b, "%4s  %-30s %14s %10s  %s\n", "step", "patch or commit", "figure", "own", "verdict")
	for _, row := range stepRows(r) {
		name := row.Name
		if len(name) > 30 {
			name = name[:27] + "..."
		}
		own := row.Own
		if i := strings.Index(own, " ["); i > 0 {
			own = own[:i]
		}
		fig := row.Figure
		if i := strings.IndexAny(fig, " ±("); i > 0 {
			fig = fig[:i]
		}
		v := row.Verdict
		if row.Culprit {
			v = "CULPRIT"
		}
		if len(v) > 14 {
			v = v[:14]
		}
		fmt.Fprintf(&b, "%4s  %-30s %14s %10s  %s\n", row.Step, name, fig, own, v)
	}
	for _, n := range r.Bisect.Notes {
		b.WriteString(report.Wrap("note: "+n, 80, "  ") + "\n")
	}
	b.WriteString(whereText(r))
	if rep := report.Reproducer(r); rep != "" {
		b.WriteString(report.Wrap("reproduce: "+rep, 80, "  ") + "\n")
	}
	return b.String()
}

// JUnit has one case per step: the culprit fails, skipped and untested
// steps are skipped.
func JUnit(r *results.Run) *report.JUnitSuite {
	s := &report.JUnitSuite{Name: "lab bisect " + r.Lab}
	bi := r.Bisect
	for _, row := range stepRows(r) {
		c := report.JUnitCase{Name: fmt.Sprintf("step %s: %s %s", row.Step, row.Name, row.Subject), Class: "lab.bisect." + r.Lab,
			SystemOut: fmt.Sprintf("figure %s; own change %s; verdict %s", row.Figure, row.Own, row.Verdict)}
		switch {
		case row.Culprit:
			c.Failure = &report.JUnitMessage{Message: "culprit: " + changeText(bi, bi.Own), Text: Headline(r)}
		case strings.HasPrefix(row.Verdict, bisect.Skipped), row.Verdict == bisect.Untested:
			c.Skip = &report.JUnitMessage{Message: row.Verdict}
		}
		s.Add(c)
	}
	return s
}

// HTML is one page: the answer, a chart of the figure against the step, the
// steps, the log and the provenance.
func HTML(r *results.Run) (string, error) {
	svg, err := chart(r)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	err = page.ExecuteTemplate(&buf, "shell", struct {
		Run      *results.Run
		Headline string
		Judged   string
		Rows     []stepRow
		Chart    template.HTML
		Prov     []string
		Where    string
	}{r, Headline(r), judgedBy(r.Bisect), stepRows(r), svg, provenance(r), strings.TrimPrefix(whereText(r), "\n")})
	return buf.String(), err
}

var page = report.NewPage("bisect", `{{define "title"}}lab bisect: {{.Run.Lab}}{{end}}
{{define "style"}}
tr.culprit td { background: #fee; font-weight: bold; }
{{end}}
{{define "body"}}<h1>lab bisect: {{.Run.Lab}}</h1>
<p class="headline">{{.Headline}}</p>
<p>Followed {{.Run.Bisect.Figure}} ({{.Run.Bisect.Chosen}}), {{.Judged}}.</p>
<figure class="chart"><figcaption>{{.Run.Bisect.Figure}} at each step: every boot, and the ends' means</figcaption>{{.Chart}}</figure>
<table><tr><th>step</th><th>patch or commit</th><th>subject</th><th>figure</th><th>own change</th><th>cumulative</th><th>verdict</th><th>kernel key</th><th>build</th><th>image sha256</th><th>boots</th></tr>
{{range .Rows}}<tr{{if .Culprit}} class="culprit"{{end}}><td class="n">{{.Step}}</td><td>{{.Name}}</td><td>{{.Subject}}</td><td class="n">{{.Figure}}</td><td class="n">{{.Own}}</td><td class="n">{{.Cumulative}}</td><td>{{.Verdict}}</td><td><code>{{.Kernel}}</code></td><td>{{.Build}}</td><td><code>{{.Image}}</code></td><td class="n">{{.Boots}}</td></tr>
{{end}}</table>
{{if .Where}}<h2>Where the culprit moved it</h2><pre>{{.Where}}</pre>{{end}}{{if .Run.Bisect.Notes}}<h2>Notes</h2><ul>{{range .Run.Bisect.Notes}}<li>{{.}}</li>{{end}}</ul>{{end}}
<h2>Provenance</h2><ul>{{range .Prov}}<li>{{.}}</li>{{end}}</ul>
{{end}}`, nil)

// chart plots every boot's figure against its step, with the ends' means as
// lines.
func chart(r *results.Run) (template.HTML, error) {
	bi := r.Bisect
	p := plot.New()
	p.X.Label.Text = "step (patches applied)"
	p.Y.Label.Text = bi.Figure.String()
	p.Add(plotter.NewGrid())
	scale := 1e6
	if bi.Figure.Scaling {
		scale = 1
	} else {
		p.Y.Label.Text += " (M/s)"
	}
	var pts plotter.XYs
	var ticks []plot.Tick
	for _, st := range bi.Steps {
		for _, v := range st.Values {
			pts = append(pts, plotter.XY{X: float64(st.Index), Y: v / scale})
		}
		ticks = append(ticks, plot.Tick{Value: float64(st.Index), Label: fmt.Sprint(st.Index)})
	}
	if len(pts) == 0 {
		return "", nil
	}
	sc, err := plotter.NewScatter(pts)
	if err != nil {
		return "", err
	}
	sc.Color = color.RGBA{R: 0xee, G: 0x66, B: 0x77, A: 0xff}
	p.Add(sc)
	n := float64(len(bi.Steps) - 1)
	for _, k := range []int{0, len(bi.Steps) - 1} {
		if m := bisect.Mean(bi.Steps[k].Values); m > 0 {
			l, err := plotter.NewLine(plotter.XYs{{X: -0.3, Y: m / scale}, {X: n + 0.3, Y: m / scale}})
			if err != nil {
				return "", err
			}
			l.Color = color.Gray{Y: 0x90}
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			p.Add(l)
		}
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	return report.SVG(p, 7*vg.Inch, 3.5*vg.Inch)
}

// whereText is the culprit's where-block for a text report, "" without one.
func whereText(r *results.Run) string { return insnprof.CulpritText(r) }
