// Package exitcode owns lab's exit codes: one table of every code a lab
// command exits with, what it means for that command, and whether running
// the command again may end otherwise. cmd/lab maps errors to these codes;
// lab help, the CI gates' flag help, bisect's outcomes and the Kubernetes
// and Slurm templates take their numbers and words from here.
//
// 3 and 4 are read per command: the gates of run, merge, report and
// compare (which judges no claims: 3 only), bisect's outcomes, and what
// lab history detect found (a regression; improvements only). lab bisect
// --run speaks git bisect run's language (0 good, 1 bad, 125 skip, 128
// stop).
package exitcode

import (
	"fmt"
	"slices"
	"strings"
	"syscall"
)

// Code is the exit status of a lab process.
type Code int

// The codes. Names that share a number (Regression and NoChange, Failed
// and Bad) are the same number as different commands mean it.
const (
	OK     Code = 0 // done as asked
	Found  Code = 0 // lab bisect: a culprit
	Failed Code = 1 // the kernel, the lab file or the input is at fault
	Usage  Code = 2 // the command line is wrong

	Regression Code = 3 // --fail-on-regression of run, merge, report, compare
	Claims     Code = 4 // --require-claims of run, merge, report
	NoChange   Code = 3 // lab bisect: the ends do not differ
	Unclear    Code = 4 // lab bisect: no single culprit

	Slower   Code = 3 // lab history detect: a figure went down
	Improved Code = 4 // lab history detect: figures went up, none down

	Infra Code = 5 // QEMU or the host failed, not the kernel

	SameImage Code = 6 // lab run: the kernels compared are one image, nothing booted

	Interrupted Code = 130 // 128 + SIGINT
	Terminated  Code = 143 // 128 + SIGTERM

	// lab bisect --run, as git bisect run reads them.
	Good Code = 0
	Bad  Code = 1
	Skip Code = 125
	Stop Code = 128
)

// Signalled is the code of a process a signal stopped, as a shell reports
// it: 128 + the signal (130 SIGINT, 143 SIGTERM).
func Signalled(sig syscall.Signal) Code { return Code(128 + int(sig)) }

// Rerun says whether running the same command again may end otherwise:
// the Kubernetes template retries MayHelp and fails the index on Futile,
// Slurm's resubmit.sh reruns the one and refuses the other.
type Rerun int

const (
	Answer  Rerun = iota // lab answered (done, a gate, an outcome): a rerun answers the same
	Futile               // the kernel, the lab or the command line is at fault: a rerun fails again
	MayHelp              // the host failed or a signal stopped lab: a rerun may succeed
)

// BisectRun is lab bisect --run in the table: its codes are git bisect
// run's, not lab bisect's.
const BisectRun = "bisect --run"

// HistoryDetect is lab history detect in the table: its 3 and 4 say what
// it found. The other lab history commands are "history".
const HistoryDetect = "history detect"

// Commands are lab's commands as the table names them.
func Commands() []string {
	return []string{"run", "build", "new", "bisect", BisectRun, "track", "watch", "plan", "submit", "merge", "report", "compare", "table", "explain", "export", "benchmarks", "host", "history", HistoryDetect, "serve", "help"}
}

// Entry is one row of the table: a code as some commands mean it.
type Entry struct {
	Code     Code
	Name     string   // one word
	Meaning  string   // for lab help
	Commands []string // who exits so, named as in Commands
	Rerun    Rerun
}

// Table is every exit code of every command, by code.
func Table() []Entry {
	gates := []string{"run", "merge", "report", "compare"}
	claims := []string{"run", "merge", "report"}
	stops := []string{"run", "build", "bisect", BisectRun, "track", "watch", "submit"}
	return []Entry{
		{OK, "ok", "done as asked",
			except("bisect", BisectRun, HistoryDetect), Answer},
		{Found, "found", "a culprit found (with --each: the change shared out patch by patch)",
			[]string{"bisect"}, Answer},
		{Good, "good", "HEAD is like the good end: git bisect marks it good",
			[]string{BisectRun}, Answer},
		{OK, "none", "no change point in any series",
			[]string{HistoryDetect}, Answer},
		{Failed, "failed", "lab failed, for the reason it printed: a bad lab file, run folder or history, a series that does not apply, " +
			"a kernel that does not build or that failed to boot (a panic, a hang, a wrong shape: the kernel's fault)",
			except("benchmarks", "help", BisectRun), Futile},
		{Failed, "no-kvm", "lab host --kvm ARCH: KVM cannot run that arch's guests here",
			[]string{"host"}, Answer},
		{Bad, "bad", "HEAD is like the bad end: git bisect marks it bad",
			[]string{BisectRun}, Answer},
		{Usage, "usage", "the command line is wrong: an unknown flag, a flag given twice, a value the flag does not take",
			except(BisectRun), Futile},
		{Regression, "regression", "--fail-on-regression: a non-control row is significantly slower",
			gates, Answer},
		{NoChange, "no-change", "the ends do not differ: nothing to bisect",
			[]string{"bisect"}, Answer},
		{Slower, "regression", "a change point where a figure went down (slower: every figure is a rate, higher is better)",
			[]string{HistoryDetect}, Answer},
		{Claims, "claims", "--require-claims: a claim of the lab is not reproduced",
			claims, Answer},
		{Unclear, "unclear", "a range of suspects, an unclear step, or a figure that is not monotonic",
			[]string{"bisect"}, Answer},
		{Improved, "improvement", "change points, every one where a figure went up: no regression",
			[]string{HistoryDetect}, Answer},
		{Infra, "infrastructure", "not the kernel's fault: QEMU could not start or died, or the disk is full " +
			"(lab run: when no failed boot was the kernel's fault; one that was makes it 1)",
			[]string{"run", "build", "bisect", "track", "merge"}, MayHelp},
		{SameImage, "same-image", "the kernels to compare have the same image (the series changes no code): lab says so and boots nothing " +
			"(--boot-same-image boots them anyway)",
			[]string{"run"}, Answer},
		{Skip, "skip", "HEAD does not build or boot, or it stayed unclear: git bisect skips it",
			[]string{BisectRun}, Answer},
		{Stop, "stop", "git bisect stops: the ends do not differ, the command line is wrong, or lab failed, whatever the reason",
			[]string{BisectRun}, Futile},
		{Interrupted, "interrupted", "stopped by SIGINT (Ctrl-C): the guest and the build stop and what was measured is saved " +
			"(a second signal quits at once)",
			stops, MayHelp},
		{Terminated, "terminated", "stopped by SIGTERM (a scheduler's cancel or preemption), as 130",
			stops, MayHelp},
	}
}

// except is every command but those named.
func except(names ...string) []string {
	var out []string
	for _, c := range Commands() {
		if !slices.Contains(names, c) {
			out = append(out, c)
		}
	}
	return out
}

// For is the table's entries of one command, by code.
func For(command string) []Entry {
	var out []Entry
	for _, e := range Table() {
		if slices.Contains(e.Commands, command) {
			out = append(out, e)
		}
	}
	return out
}

// Lookup is what code means for command: its first entry.
func Lookup(command string, code Code) (Entry, bool) {
	for _, e := range For(command) {
		if e.Code == code {
			return e, true
		}
	}
	return Entry{}, false
}

// Documented is the code command exits with for a failure of class code:
// code itself when the table has it for command, or else the command's
// plain failure (1; 128 for bisect --run, which must not blame HEAD). No
// command exits with a code the table does not give it.
func Documented(command string, code Code) Code {
	if _, ok := Lookup(command, code); ok {
		return code
	}
	if command == BisectRun {
		return Stop
	}
	return Failed
}

// Codes are the distinct codes of command whose rerun is r, ascending.
func Codes(command string, r Rerun) []Code {
	var out []Code
	for _, e := range For(command) {
		if e.Rerun == r && !slices.Contains(out, e.Code) {
			out = append(out, e.Code)
		}
	}
	slices.Sort(out)
	return out
}

// List is codes as "1, 2" (for comments and messages), with the last
// joined by and when and is not "" ("5, 130 and 143").
func List(codes []Code, and string) string {
	s := make([]string, len(codes))
	for i, c := range codes {
		s[i] = fmt.Sprint(int(c))
	}
	if and == "" || len(s) < 2 {
		return strings.Join(s, ", ")
	}
	return strings.Join(s[:len(s)-1], ", ") + " " + and + " " + s[len(s)-1]
}

// Help is the whole table as lab help exit-codes prints it.
func Help() string {
	var b strings.Builder
	b.WriteString("lab's exit codes, one table for every command. 3 and 4 are the gates of run,\n" +
		"merge and report (compare has 3 only), the outcomes of bisect and what\n" +
		"history detect found; bisect --run speaks git bisect run's language. The\n" +
		"rerun note is what a CI engine does: the Kubernetes template retries \"may\n" +
		"succeed\" and fails the shard on \"fails again\".\n\n")
	fmt.Fprintf(&b, " code  %-14s  %s\n", "name", "meaning (commands)")
	b.WriteString(text(Table(), true))
	return b.String()
}

// CommandHelp is the part of the table a command's help ends with.
func CommandHelp(command string) string {
	var b strings.Builder
	for _, c := range Commands() {
		if c != command && !strings.HasPrefix(c, command+" ") {
			continue
		}
		if es := For(c); len(es) > 0 {
			fmt.Fprintf(&b, "\nExit codes of lab %s:\n%s", c, text(es, false))
		}
	}
	return b.String()
}

// width is the text's width; indent is where a meaning starts.
const (
	width  = 80
	indent = 2 + 3 + 2 + 14 + 2
)

// text lays entries out: code, name, the meaning wrapped, the rerun note
// and, when commands is set, who exits so.
func text(entries []Entry, commands bool) string {
	var b strings.Builder
	for _, e := range entries {
		meaning := e.Meaning
		switch e.Rerun {
		case Futile:
			meaning += "; a rerun fails again"
		case MayHelp:
			meaning += "; a rerun may succeed"
		}
		lines := wrap(meaning, width-indent)
		if commands {
			lines = append(lines, wrap("("+strings.Join(e.Commands, ", ")+")", width-indent)...)
		}
		for i, l := range lines {
			if i == 0 {
				fmt.Fprintf(&b, "  %3d  %-14s  %s\n", e.Code, e.Name, l)
				continue
			}
			fmt.Fprintf(&b, "%s%s\n", strings.Repeat(" ", indent), l)
		}
	}
	return b.String()
}

// wrap breaks s into lines of at most n runes at spaces.
func wrap(s string, n int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		switch {
		case line == "":
			line = w
		case len([]rune(line))+1+len([]rune(w)) <= n:
			line += " " + w
		default:
			lines = append(lines, line)
			line = w
		}
	}
	return append(lines, line)
}
