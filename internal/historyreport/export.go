package historyreport

import (
	"bytes"
	"cmp"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"lab/internal/history"
	"lab/internal/lines"
)

// groupSlug names a group in one word of letters, digits and . _ - + = /, for
// Otava's branch column and Bencher's benchmark names:
// lab/line/shape-accel-clock/host-class[/method].
func groupSlug(g lines.Group) string {
	shape := fmt.Sprintf("%s-%dcpu", g.Arch, g.CPUs)
	if g.Topology != fmt.Sprintf("sockets=1,clusters=1,cores=%d,threads=1", g.CPUs) {
		shape += "-" + g.Topology
	}
	parts := []string{slug(g.Lab), slug(lineName(g.Variant)), slug(shape + "-" + g.Accel + "-" + g.Clock), slug(g.HostClass)}
	if g.Method != "" {
		parts = append(parts, slug(g.Method))
	}
	return strings.Join(parts, "/")
}

// slug keeps letters, digits and . _ - + =, and makes runs of anything
// else one underscore.
func slug(s string) string {
	s = strings.ReplaceAll(s, "×", "x")
	var b strings.Builder
	under := false
	for _, r := range s {
		ok := r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-+=", r))
		if ok {
			b.WriteRune(r)
			under = false
		} else if !under {
			b.WriteByte('_')
			under = true
		}
	}
	return strings.Trim(b.String(), "_")
}

// OtavaTimeLayout is how the CSV writes a run's start: as Otava prints
// times, and its date parser reads them.
const OtavaTimeLayout = "2006-01-02 15:04:05 -0700"

// OtavaCSV is the history as Apache Otava reads a CSV test: a line a boot,
// the run's start in the time column, the commit and, as attributes, the
// run and boot; one column a metric (benchmark[.tool].pN.metric, the raw
// figure: hits per second, or the scaling ratio; higher is better, Otava's
// direction 1). The branch column is the group (groupSlug): Otava refuses
// a file of several branches unless --branch picks one, so that figures
// that cannot be compared (another clock, shape or host class) are never
// analysed together. A metric a group does not measure is empty: list in
// Otava's test only the metrics of its branch.
func (h *History) OtavaCSV() []byte {
	var metrics []string
	for _, s := range h.Lines {
		if m := MetricName(s.Key); !slices.Contains(metrics, m) {
			metrics = append(metrics, m)
		}
	}
	type row struct {
		seq     int
		started time.Time
		run     string
		boot    int
		commit  string
		values  map[string]float64
	}
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Write(append([]string{"time", "commit", "branch", "run", "boot"}, metrics...))
	for _, g := range h.Groups() {
		type bk struct {
			run  string
			boot int
		}
		at := map[bk]*row{}
		var rows []*row
		for _, s := range h.InGroup(g) {
			m := MetricName(s.Key)
			for _, l := range s.Levels {
				for i, boot := range l.Boots {
					k := bk{l.RunID, boot}
					r, ok := at[k]
					if !ok {
						r = &row{seq: l.CommitSeq, started: l.Started, run: l.RunID, boot: boot, commit: l.Commit, values: map[string]float64{}}
						at[k] = r
						rows = append(rows, r)
					}
					r.values[m] = l.Values[i]
				}
			}
		}
		slices.SortStableFunc(rows, func(a, b *row) int {
			return lines.ComparePoints(history.Point{CommitSeq: a.seq, Started: a.started, RunID: a.run, Boot: a.boot},
				history.Point{CommitSeq: b.seq, Started: b.started, RunID: b.run, Boot: b.boot})
		})
		for _, r := range rows {
			rec := []string{r.started.UTC().Format(OtavaTimeLayout), r.commit, groupSlug(g), r.run, fmt.Sprint(r.boot)}
			for _, m := range metrics {
				v, ok := r.values[m]
				if !ok {
					rec = append(rec, "")
					continue
				}
				rec = append(rec, strconv.FormatFloat(v, 'g', -1, 64))
			}
			w.Write(rec)
		}
	}
	w.Flush()
	return buf.Bytes()
}

// BMFMetric is one measure of a benchmark in Bencher Metric Format.
type BMFMetric struct {
	Value      float64  `json:"value"`
	LowerValue *float64 `json:"lower_value,omitempty"`
	UpperValue *float64 `json:"upper_value,omitempty"`
}

// BMF is the history's latest figures in Bencher Metric Format, for
// bencher run --adapter json: a benchmark per series
// (groupSlug(group)/benchmark[.tool].pN), its measure "throughput" (hits per
// second) or "scaling" (rate(P)/rate(1)); the value is the mean of the
// series' last level, lower and upper values its boots' least and
// greatest when it has several.
func (h *History) BMF() ([]byte, error) {
	out := map[string]map[string]BMFMetric{}
	for _, s := range h.Lines {
		name := groupSlug(lines.GroupOf(s.Key)) + "/" + strings.TrimSuffix(MetricName(s.Key), "."+s.Key.Metric)
		measure := "throughput"
		if s.Key.Metric == history.MetricScaling {
			measure = "scaling"
		}
		last := s.Levels[len(s.Levels)-1]
		m := BMFMetric{Value: last.Mean}
		if len(last.Values) > 1 {
			lo, hi := slices.Min(last.Values), slices.Max(last.Values)
			m.LowerValue, m.UpperValue = &lo, &hi
		}
		if out[name] == nil {
			out[name] = map[string]BMFMetric{}
		}
		out[name][measure] = m
	}
	// encoding/json writes a map's keys sorted: the file is the same for
	// the same history.
	data, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

// Files are every file of lab history report, by name: the history as
// text, Markdown and one HTML page, the exports, and a mail a regression.
func (h *History) Files() (map[string][]byte, error) {
	page, err := h.HTML()
	if err != nil {
		return nil, err
	}
	bmf, err := h.BMF()
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{
		"history.txt":  []byte(h.ReportText()),
		"history.md":   []byte(h.ReportMarkdown()),
		"history.html": []byte(page),
		"otava.csv":    h.OtavaCSV(),
		"bmf.json":     bmf,
		"changes.csv":  h.ChangesCSV(),
	}
	for _, m := range h.Mails() {
		files[m.Name] = []byte(m.Text)
	}
	return files, nil
}

// ChangesCSV exports every change point, a row each, with its culprit and
// the latest annotation people gave it: what a tracker or a spreadsheet
// takes in.
func (h *History) ChangesCSV() []byte {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Write([]string{"lab", "line", "before", "after", "change_pct", "p", "direction", "culprit", "annotation", "note", "author", "annotated"})
	for _, f := range h.Changes() {
		c, before, after := f.Change, f.Before(), f.After()
		row := []string{f.Line.Key.Lab, f.Line.Key.String(), before.Ref(), after.Ref(),
			strconv.FormatFloat(c.Pct, 'f', 4, 64), strconv.FormatFloat(c.P, 'g', 4, 64), verdictText(c), "", "", "", "", ""}
		if cu := c.Culprit; cu != nil {
			row[7] = cu.Culprit
		}
		if a := c.Annotation(); a != nil {
			row[8], row[9], row[10], row[11] = a.Label, a.Note, a.Author, a.Added.UTC().Format(time.RFC3339)
		}
		w.Write(row)
	}
	w.Flush()
	return buf.Bytes()
}

// sortedNames lists files' names in order.
func sortedNames(files map[string][]byte) []string {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Compare(a, b) })
	return names
}
