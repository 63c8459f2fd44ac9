package vm

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"lab/internal/results"
)

// Finding is a line of the console log where the kernel reported a problem.
type Finding struct {
	Line int    `json:"line"`
	Kind string `json:"kind"`
	Text string `json:"text"`
}

func (f Finding) String() string {
	return fmt.Sprintf("console line %d: %s: %s", f.Line, f.Kind, f.Text)
}

// problems are the kernel's own words for something having gone wrong: a
// WARN (lockdep and suspicious-RCU reports are WARNINGs too), a BUG, an oops,
// a panic, an RCU stall, a hung task.
var problems = []pattern{
	{"lockdep", regexp.MustCompile(`WARNING: (possible circular locking|possible recursive locking|inconsistent lock state|suspicious RCU usage|bad unlock balance)`)},
	{"warning", regexp.MustCompile(`WARNING: CPU: \d+ PID: \d+ at |------------\[ cut here \]------------|WARNING: `)},
	{"bug", regexp.MustCompile(`BUG: |kernel BUG at `)},
	{"oops", regexp.MustCompile(`Oops|general protection fault|Unable to handle kernel|Internal error: `)},
	{"panic", regexp.MustCompile(`Kernel panic - not syncing`)},
	{"rcu stall", regexp.MustCompile(`rcu: INFO: rcu_\w+ (self-)?detected stall|rcu_\w+ kthread starved|detected stalls on CPUs`)},
	{"hung task", regexp.MustCompile(`INFO: task .* blocked for more than`)},
	{"kunit failure", regexp.MustCompile(`(^|\] |\s)not ok \d+ `)},
}

// ScanConsole returns the problems the kernel reported in a console log,
// first match per line, reading at most MaxConsole bytes.
func ScanConsole(path string) ([]Finding, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ScanConsoleText(io.LimitReader(f, MaxConsole))
}

// maxFindings bounds what a console full of warnings produces.
const maxFindings = 100

// pattern is a kind of console line and how to know it.
type pattern struct {
	kind string
	re   *regexp.Regexp
}

// ScanConsoleText scans console output. A line over 64 KiB is judged by
// its first 64 KiB: the kernel's own lines are short, and the guest's are
// untrusted.
func ScanConsoleText(r io.Reader) ([]Finding, error) {
	return scan(r, problems, maxFindings)
}

// scan finds the lines of r that match a pattern, first match per line, at
// most limit of them.
func scan(r io.Reader, patterns []pattern, limit int) ([]Finding, error) {
	var out []Finding
	br := bufio.NewReaderSize(r, 64<<10)
	for n := 1; ; n++ {
		raw, isPrefix, err := br.ReadLine()
		line := strings.TrimRight(string(raw), "\r") // a copy: the next read reuses raw
		for isPrefix && err == nil {
			_, isPrefix, err = br.ReadLine() // the rest of a long line
		}
		if len(line) > 0 || err == nil {
			for _, p := range patterns {
				if p.re.MatchString(line) {
					text := strings.TrimSpace(line)
					if len(text) > 500 {
						text = text[:500] + "…"
					}
					out = append(out, Finding{Line: n, Kind: p.kind, Text: strings.ToValidUTF8(text, "?")})
					break
				}
			}
			if len(out) >= limit {
				return out, nil
			}
		}
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}

// starvedScan is how much of the console starvedCalibration reads: the
// calibrations are early in the boot, before the agent starts.
const starvedScan = 4 << 20

// starvedCalibration finds the first console line by which the guest says
// a boot-time calibration against its own clocks was starved by the host
// (arch.Arch.StarvedLines), in the first starvedScan bytes of the log.
func starvedCalibration(path string, lines []string) (Finding, bool, error) {
	if len(lines) == 0 {
		return Finding{}, false, nil
	}
	patterns := make([]pattern, len(lines))
	for i, l := range lines {
		re, err := regexp.Compile(l)
		if err != nil {
			return Finding{}, false, fmt.Errorf("the arch's starved line %q: %w", l, err)
		}
		patterns[i] = pattern{results.FailStarved, re}
	}
	f, err := os.Open(path)
	if err != nil {
		return Finding{}, false, err
	}
	defer f.Close()
	found, err := scan(io.LimitReader(f, starvedScan), patterns, 1)
	if err != nil || len(found) == 0 {
		return Finding{}, false, err
	}
	return found[0], true, nil
}
