package historyreport

import (
	"fmt"
	"lab/internal/report"
	"strings"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/jedib0t/go-pretty/v6/text"
)

// Text lays tables out for a terminal: each title, then its table.
func Text(tables []Table) string {
	var b strings.Builder
	for i, t := range tables {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(t.Title + "\n")
		tw := table.NewWriter()
		tw.SetStyle(report.PlainStyle())
		head := table.Row{}
		for _, h := range t.Head {
			head = append(head, h)
		}
		tw.AppendHeader(head)
		var cols []table.ColumnConfig
		for i, right := range t.Right {
			if right {
				cols = append(cols, table.ColumnConfig{Number: i + 1, Align: text.AlignRight, AlignHeader: text.AlignRight})
			}
		}
		tw.SetColumnConfigs(cols)
		for _, r := range t.Rows {
			row := table.Row{}
			for _, c := range r {
				row = append(row, c)
			}
			tw.AppendRow(row)
		}
		// go-pretty pads the last column: a text file keeps no
		// trailing blanks.
		for _, l := range strings.Split(tw.Render(), "\n") {
			b.WriteString(strings.TrimRight(l, " ") + "\n")
		}
	}
	return b.String()
}

// Markdown lays tables out for a pull request or a wiki: a heading a
// table.
func Markdown(tables []Table, level int) string {
	var b strings.Builder
	for _, t := range tables {
		fmt.Fprintf(&b, "%s %s\n\n", strings.Repeat("#", level), t.Title)
		b.WriteString("| " + strings.Join(escapeAll(t.Head), " | ") + " |\n|")
		for _, right := range t.Right {
			if right {
				b.WriteString("--:|")
			} else {
				b.WriteString("---|")
			}
		}
		b.WriteString("\n")
		for _, r := range t.Rows {
			b.WriteString("| " + strings.Join(escapeAll(r), " | ") + " |\n")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// escapeAll keeps a cell's | from ending it.
func escapeAll(cells []string) []string {
	out := make([]string, len(cells))
	for i, c := range cells {
		out[i] = strings.ReplaceAll(c, "|", `\|`)
	}
	return out
}

// ReportText is the history as text: the summary, every series' levels
// and the change points.
func (h *History) ReportText() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n%s\n\n", h.title(), h.Summary())
	if ct := h.ChangeTables(); len(ct) > 0 {
		b.WriteString("Change points\n\n" + Text(ct) + "\n")
	}
	b.WriteString("Levels (the boots of one commit in one run: mean ± sd)\n\n")
	b.WriteString(Text(h.LevelTables()))
	b.WriteString("\n" + h.detectNote() + "\n")
	return b.String()
}

// ReportMarkdown is the history in Markdown.
func (h *History) ReportMarkdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n%s\n\n", h.title(), h.Summary())
	if ct := h.ChangeTables(); len(ct) > 0 {
		b.WriteString("## Change points\n\n" + Markdown(ct, 3))
	}
	b.WriteString("## Levels\n\nThe boots of one commit in one run: mean ± sd.\n\n")
	b.WriteString(Markdown(h.LevelTables(), 3))
	b.WriteString(h.detectNote() + "\n")
	return b.String()
}

func (h *History) title() string {
	if h.Lab != "" {
		return "lab history of " + h.Lab
	}
	return "lab history: " + strings.Join(h.Labs(), ", ")
}
