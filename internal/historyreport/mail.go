package historyreport

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"lab/internal/gitcmd"
	"lab/internal/history"
	"lab/internal/lines"
	"lab/internal/report"
)

// MailWidth is the regression mail's width: a mailing list's.
const MailWidth = 80

// Mail is one regression report in the form of the kernel test robot's
// (LKP) mails, ready to send.
type Mail struct {
	Name    string // the file: regression-<sha12>.txt
	Subject string
	Text    string // Subject: line, a blank line, the body
}

// regression is what one mail reports: the change points of one group
// whose new level starts at the same commit of the same run.
type regression struct {
	group lines.Group
	found []lines.Found // the slower ones, the largest change first
}

// Mails are the history's regression mails: one for each commit (and
// run) where figures of one group went down, its subject naming the
// largest change, its table every row of the group, controls included.
func (h *History) Mails() []Mail {
	var regs []*regression
	type key struct {
		g           lines.Group
		run, commit string
	}
	at := map[key]*regression{}
	for _, f := range h.Changes() {
		if !f.Change.Slower {
			continue
		}
		a := f.After()
		k := key{lines.GroupOf(f.Line.Key), a.RunID, a.Commit}
		r, ok := at[k]
		if !ok {
			r = &regression{group: k.g}
			at[k] = r
			regs = append(regs, r)
		}
		r.found = append(r.found, f)
	}
	var mails []Mail
	names := map[string]int{}
	for _, r := range regs {
		// The largest drop leads; a control's only when nothing else
		// moved (a control that moves says the measurement did).
		slices.SortStableFunc(r.found, func(a, b lines.Found) int {
			return cmp.Or(cmpBool(a.Line.Control, b.Line.Control), cmp.Compare(a.Change.Pct, b.Change.Pct))
		})
		m := h.mail(r)
		base := "regression-" + mailTag(r.found[0].After())
		names[base]++
		if n := names[base]; n > 1 {
			base += fmt.Sprintf("-%d", n)
		}
		m.Name = base + ".txt"
		mails = append(mails, m)
	}
	return mails
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

// mailTag names a level in a file name: its commit's 12 digits, or its
// run.
func mailTag(l lines.Level) string {
	if l.Commit != "" {
		return gitcmd.Short(l.Commit)
	}
	return "run-" + l.RunID
}

// subjectPct is a change as LKP's subject writes it: -7.9%, -0.12%.
func subjectPct(pct float64) string {
	switch a := math.Abs(pct); {
	case a >= 0.995: // what rounds to 1.0 or more
		return fmt.Sprintf("%+.1f%%", pct)
	case a >= 0.01:
		return fmt.Sprintf("%+.2f%%", pct)
	}
	return fmt.Sprintf("%+.3f%%", pct)
}

func (h *History) mail(r *regression) Mail {
	lead := r.found[0]
	s, c := lead.Line, lead.Change
	before, after := lead.Before(), lead.After()
	k := s.Key
	subject := fmt.Sprintf("[lab:%s] %s: %s %s regression", k.Lab, gitcmd.Short(mailTag(after)), MetricName(k), subjectPct(c.Pct))
	var b strings.Builder
	line := func(format string, args ...any) {
		b.WriteString(wrap(fmt.Sprintf(format, args...)) + "\n")
	}
	line("Subject: %s", subject)
	b.WriteString("\n")
	line("Hello,")
	b.WriteString("\n")
	line("lab noticed a %s regression of %s on:", subjectPct(c.Pct), MetricName(k))
	b.WriteString("\n")
	line("commit: %s", orUnknown(after.Commit))
	line("parent: %s", orUnknown(before.Commit))
	if cu := c.Culprit; cu != nil && cu.BisectRun != "" {
		line("bisected: %s %s (lab bisect run %s)", cu.Outcome, orUnknown(gitcmd.Short(cu.Culprit)), cu.BisectRun)
	}
	line("runs: %s before; %s after", runText(before), runText(after))
	for _, a := range c.Annotations {
		line("annotated %s by %s: %s%s", a.Added.UTC().Format("2006-01-02"), a.Author, a.Label, notePart(a.Note))
	}
	if after.Commit == before.Commit {
		line("note: the commit is the same on both sides: what moved the figure is not the kernel's source (%s)", sameCommitWhy(before, after))
	}
	b.WriteString("\n")
	line("testcase: %s (lab)", k.Lab)
	line("parameters:")
	line("        benchmark: %s", k.Benchmark)
	line("        producers: %d", k.Producers)
	line("        metric: %s (%s, higher is better)", k.Metric, unit(k.Metric))
	if k.Tool != "" {
		line("        tool: %s", k.Tool)
	}
	line("        line: %s", lineName(k.Variant))
	b.WriteString("\n")
	line("machine:")
	line("        guest: %s, %d vCPU, %s", k.Arch, k.CPUs, k.Topology)
	line("        accelerator: %s", k.Accel)
	line("        clock: %s", k.Clock)
	line("        host class: %s", k.HostClass)
	if k.Method != "" {
		line("        measuring method: %s", k.Method)
	}
	if hosts := distinct(slices.Concat(before.Hosts, after.Hosts)); len(hosts) > 0 {
		line("        hosts: %s", strings.Join(hosts, ", "))
	}
	if after.KernelVersion != "" {
		line("        kernel: Linux %s", after.KernelVersion)
	}
	b.WriteString("\n")
	how := "p = " + pText(c.P) + " (Welch's t-test)"
	if k.Clock == history.ClockICount {
		how = "exact (icount: one figure a kernel image, judged by its size)"
	}
	line("The level of %d commits (%d boots) up to the parent against the %d commits (%d boots) from this commit on: %s, %s, %s where they meet.",
		c.NBefore, bootsOf(s.Levels[c.Index-c.NBefore:c.Index]), c.NAfter, bootsOf(s.Levels[c.Index:c.Index+c.NAfter]),
		pctText(c.Pct), how, pctText(c.StepPct))
	for _, f := range r.found[1:] {
		line("Also slower from this commit: %s %s.", MetricName(f.Line.Key), subjectPct(f.Change.Pct))
	}
	b.WriteString("\n" + strings.Repeat("=", MailWidth) + "\n")
	line("arch/cpus/clock/accel/testcase:")
	line("  %s/%d/%s/%s/%s", k.Arch, k.CPUs, k.Clock, k.Accel, k.Lab)
	b.WriteString("\n")
	b.WriteString(h.mailTable(r.group, s, c))
	b.WriteString("\n")
	b.WriteString(culpritWhere(c.Culprit))
	b.WriteString(reproduce(k, before, after))
	b.WriteString("\n")
	b.WriteString("-- \n")
	line("lab history report, from the history alone. Values: the mean over the commits of each level (over its boots for a level of one commit); %%stddev: their sd in percent of the mean.")
	return Mail{Subject: subject, Text: b.String()}
}

// culpritWhere is where a bisected culprit moved the path, "" without a
// profile: the lines LKP's mails carry as perf-profile rows, here exact;
// each line wrapped to the mail.
func culpritWhere(cu *history.Culprit) string {
	if cu == nil || cu.Where == "" {
		return ""
	}
	title, table, _ := strings.Cut(strings.TrimRight(cu.Where, "\n"), "\n")
	lines := []string{wrap(strings.TrimSuffix(title, ":") + " (lab bisect run " + cu.BisectRun + "):")}
	for _, l := range strings.Split(table, "\n") {
		lines = append(lines, wrap(l))
	}
	return strings.Join(lines, "\n") + "\n\n"
}

// wrap breaks a line of the mail at spaces within its width, keeping its
// indentation; an indented line continues 8 columns further in.
func wrap(s string) string {
	body := strings.TrimLeft(s, " ")
	lead := s[:len(s)-len(body)]
	more := ""
	if lead != "" {
		more = "        "
	}
	lines := strings.Split(report.Wrap(body, MailWidth-len(lead), more), "\n")
	for i := range lines {
		lines[i] = lead + lines[i]
	}
	return strings.Join(lines, "\n")
}

func orUnknown(commit string) string {
	if commit == "" {
		return "(not recorded)"
	}
	return commit
}

// sameCommitWhy says what differs between two levels of one commit.
func sameCommitWhy(a, b lines.Level) string {
	var diffs []string
	if a.LabVersion != b.LabVersion {
		diffs = append(diffs, fmt.Sprintf("lab %s, then %s", a.LabVersion, b.LabVersion))
	}
	if a.ImageSHA256 != b.ImageSHA256 {
		diffs = append(diffs, "another kernel image")
	}
	if !slices.Equal(a.Hosts, b.Hosts) {
		diffs = append(diffs, fmt.Sprintf("hosts %s, then %s", strings.Join(a.Hosts, ", "), strings.Join(b.Hosts, ", ")))
	}
	if len(diffs) == 0 {
		return "the same lab, image and hosts: the machine itself"
	}
	return strings.Join(diffs, "; ")
}

func bootsOf(ls []lines.Level) int {
	n := 0
	for _, l := range ls {
		n += len(l.Boots)
	}
	return n
}

func distinct(s []string) []string {
	var out []string
	for _, v := range s {
		if v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// side is one side of the mail's table: its mean and its sd in percent.
type side struct {
	ok          bool
	mean, sdPct float64
	n           int
}

// sideOf describes levels: over their means, or over the boots of a
// single level.
func sideOf(ls []lines.Level) side {
	var v []float64
	switch len(ls) {
	case 0:
		return side{}
	case 1:
		v = ls[0].Values
	default:
		v = levelMeans(ls)
	}
	m, sd := lines.MeanSD(v)
	s := side{ok: true, mean: m, n: len(v)}
	if len(v) > 1 && m != 0 {
		s.sdPct = sd / math.Abs(m) * 100
	}
	return s
}

// mailTable is LKP's comparison table: every row of the group (controls
// included) over the levels before the change point and from it on, as
// the change point of the leading series cut them.
func (h *History) mailTable(g lines.Group, lead *lines.Line, c lines.Change) string {
	type lk struct{ run, commit string }
	set := func(ls []lines.Level) map[lk]bool {
		m := map[lk]bool{}
		for _, l := range ls {
			m[lk{l.RunID, l.Commit}] = true
		}
		return m
	}
	before := set(lead.Levels[c.Index-c.NBefore : c.Index])
	after := set(lead.Levels[c.Index : c.Index+c.NAfter])
	pick := func(s *lines.Line, in map[lk]bool) []lines.Level {
		var out []lines.Level
		for _, l := range s.Levels {
			if in[lk{l.RunID, l.Commit}] {
				out = append(out, l)
			}
		}
		return out
	}
	var b strings.Builder
	bl, al := lead.Levels[c.Index-1], lead.Levels[c.Index]
	// LKP's head: the two commits over their columns, then what the
	// columns hold.
	fmt.Fprintf(&b, "%18s %27s\n", mailTag(bl), mailTag(al))
	fmt.Fprintf(&b, "%s %s\n", strings.Repeat("-", 18), strings.Repeat("-", 27))
	fmt.Fprintf(&b, "%18s %8s %18s\n", "%stddev", "%change", "%stddev")
	fmt.Fprintf(&b, "%15s%10s%19s\n", `\`, "|", `\`)
	for _, s := range h.InGroup(g) {
		bs, as := sideOf(pick(s, before)), sideOf(pick(s, after))
		if !bs.ok || !as.ok {
			continue
		}
		change := ""
		if bs.mean != 0 {
			change = fmt.Sprintf("%+.2f%%", (as.mean-bs.mean)/math.Abs(bs.mean)*100)
		}
		name := MetricName(s.Key)
		if s.Control {
			name += " (control)"
		}
		row := fmt.Sprintf("%9s %8s %8s %9s %8s", ValueText(s.Key.Metric, bs.mean), sdText(bs), change, ValueText(s.Key.Metric, as.mean), sdText(as))
		if utf8.RuneCountInString(row)+2+utf8.RuneCountInString(name) > MailWidth {
			fmt.Fprintf(&b, "%s\n%s\n", strings.TrimRight(row, " "), strings.Repeat(" ", 4)+name)
			continue
		}
		fmt.Fprintf(&b, "%s  %s\n", row, name)
	}
	b.WriteString("\nrates in M/s; scaling: rate(P)/rate(1); higher is better\n")
	return b.String()
}

func sdText(s side) string {
	if s.n < 2 {
		return ""
	}
	return fmt.Sprintf("±%5.2f%%", s.sdPct)
}

// reproduce is the mail's last section: the lab commands that measure the
// change again.
func reproduce(k history.LineKey, before, after lines.Level) string {
	var b strings.Builder
	labFile := "labs/" + k.Lab + ".yaml"
	b.WriteString("To reproduce:\n\n")
	b.WriteString(wrap("        # in lab's checkout (the lab's file: "+labFile+")") + "\n")
	shape := [][]string{{"--arch", k.Arch}, {"--cpus", fmt.Sprint(k.CPUs)}, {"--measure", k.Clock}, {"--accel", k.Accel}}
	follow := [][]string{{"--benchmark", k.Benchmark}, {"--producers", fmt.Sprint(k.Producers)}}
	if k.Metric == history.MetricScaling {
		follow = append(follow, []string{"--scaling"})
	}
	switch {
	case before.Commit == "" || after.Commit == "" || before.Commit == after.Commit:
		b.WriteString("        # the same commit on both sides: measure it again\n")
		b.WriteString(command(append([][]string{{"./lab", "run", labFile}}, shape...)))
	case strings.HasPrefix(after.SourceID, "git-"):
		b.WriteString("        # which commit from the parent to this one moved it\n")
		b.WriteString(command(slices.Concat([][]string{{"./lab", "bisect", labFile}, {"--good", gitcmd.Short(before.Commit)}, {"--bad", gitcmd.Short(after.Commit)}}, follow, shape)))
	default:
		b.WriteString("        # which patch of the lab's series moved it\n")
		b.WriteString(command(slices.Concat([][]string{{"./lab", "bisect", labFile}}, follow, shape)))
	}
	b.WriteString("        # the change points again, from the history\n")
	b.WriteString(command([][]string{{"./lab", "history", "detect"}, {"--lab", k.Lab}}))
	return b.String()
}

// command lays a command line out within the mail's width, 8 columns in,
// breaking it (with a backslash) between units, such as a flag and its
// value, never inside one; continued lines are 16 columns in.
func command(units [][]string) string {
	var lines []string
	line := ""
	for _, u := range units {
		words := make([]string, len(u))
		for i, a := range u {
			words[i] = a
			if a == "" || strings.ContainsAny(a, " \t'\"$\\*?;&|<>()") {
				words[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
			}
		}
		unit := strings.Join(words, " ")
		switch {
		case line == "":
			line = strings.Repeat(" ", 8) + unit
		case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(unit)+2 > MailWidth:
			lines = append(lines, line+" \\")
			line = strings.Repeat(" ", 16) + unit
		default:
			line += " " + unit
		}
	}
	return strings.Join(append(lines, line), "\n") + "\n"
}

func notePart(note string) string {
	if note == "" {
		return ""
	}
	return ": " + note
}
