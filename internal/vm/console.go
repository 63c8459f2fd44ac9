package vm

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"strings"
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
var problems = []struct {
	kind string
	re   *regexp.Regexp
}{
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
// first match per line.
func ScanConsole(path string) ([]Finding, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Finding
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), "\r")
		for _, p := range problems {
			if p.re.MatchString(line) {
				out = append(out, Finding{Line: n, Kind: p.kind, Text: strings.TrimSpace(line)})
				break
			}
		}
	}
	return out, sc.Err()
}
