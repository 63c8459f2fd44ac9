package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"lab/initramfs/protocol"
	"lab/internal/benchmark"
)

// BenchPath is where lab puts the kernel's own bench in the image.
var BenchPath = protocol.ToolPath(benchmark.BPFBench)

// toolArgs is the tool's command line for a benchmark, with the job's
// producers, affinity, warm-up and duration; false when the tool has no
// such benchmark.
func toolArgs(tool, name string, p int, job protocol.Job) ([]string, bool) {
	b, ok := benchmark.Lookup(name)
	if !ok || b.Upstream == "" || tool != benchmark.BPFBench {
		return nil, false
	}
	args := []string{"-w", fmt.Sprint(job.WarmupSamples), "-d", fmt.Sprint(job.Samples), "-p", fmt.Sprint(p)}
	if job.Affinity {
		args = append(args, "-a")
	}
	return append(args, b.Upstream), true
}

// runTool measures a benchmark again with a guest tool.
func runTool(tool, name string, p int, job protocol.Job, args []string) *protocol.Result {
	res := &protocol.Result{Benchmark: name, Producers: p, Tool: tool}
	if job.Sample() != time.Second {
		// bench samples once a second; the lab file's check refuses this.
		res.Error = fmt.Sprintf("bench samples once a second, not every %v", job.Sample())
		return res
	}
	total := job.WarmupSamples + job.Samples
	res.Attach = "bench " + strings.Join(args, " ")
	// bench runs warm-up + duration + 1 one-second iterations; a bench
	// that never ends (a stuck attach) must not stop the boot's others.
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(total+30)*time.Second*2)
	defer cancel()
	cmd := exec.CommandContext(ctx, BenchPath, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res.Output = append([]string{"$ bench " + strings.Join(args, " ")}, lines(stdout.String(), 200)...)
	if err != nil {
		res.Error = fmt.Sprintf("bench %s: %v: %s", strings.Join(args, " "), err, strings.Join(lines(stderr.String(), 8), " | "))
		return res
	}
	if perr := parseBench(res, stdout.String(), job.WarmupSamples); perr != nil {
		res.Error = perr.Error()
	}
	return res
}

// lines are the last n lines of s.
func lines(s string, n int) []string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) == 1 && l[0] == "" {
		return nil
	}
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return l
}

// bench's hits/drops output (tools/testing/selftests/bpf/bench.c,
// hits_drops_report_progress and _final), one line per second:
//
//	Iter   3 (-43.325us): hits    0.336M/s (  0.336M/prod), drops    0.000M/s, total operations    0.336M/s
//	Summary: hits    0.377 ± 0.045M/s (  0.377M/prod), drops    0.000 ± 0.000M/s, total operations    0.377 ± 0.045M/s
//
// Compiled when bench's output is read, not at the agent's start: under TCG
// every boot pays for code that runs before the first record.
var benchPatterns = sync.OnceValues(func() (iter, summary *regexp.Regexp) {
	return regexp.MustCompile(`^Iter\s+(\d+)\s+\(\s*(-?\d+\.\d+)us\): hits\s+(\d+\.\d+)M/s \(\s*\d+\.\d+M/prod\), drops\s+(\d+\.\d+)M/s`),
		regexp.MustCompile(`^Summary: hits\s+(\d+\.\d+) ± +(\d+\.\d+)M/s`)
})

// parseBench reads bench's per-second lines into samples: iterations before
// warmup are the warm-up, the rest (warmup..warmup+duration, as bench's own
// summary) the samples. bench prints rates, not counts: a sample's hits are
// its rate times its measured interval (1 s + the skew bench prints), to
// bench's precision of 1,000 hits/s.
func parseBench(res *protocol.Result, out string, warmup int) error {
	benchIter, benchSummary := benchPatterns()
	sc := bufio.NewScanner(strings.NewReader(out))
	summary := false
	for sc.Scan() {
		line := sc.Text()
		if m := benchIter.FindStringSubmatch(line); m != nil {
			iter, _ := strconv.Atoi(m[1])
			skewUS, _ := strconv.ParseFloat(m[2], 64)
			mps, _ := strconv.ParseFloat(m[3], 64)
			drops, _ := strconv.ParseFloat(m[4], 64)
			if drops > 0 {
				return fmt.Errorf("bench iteration %d dropped %.3f M/s: %q", iter, drops, line)
			}
			ns := int64(1e9 + skewUS*1e3)
			s := protocol.Sample{IntervalNS: ns, Hits: uint64(mps*1e6*float64(ns)/1e9 + 0.5), Rate: mps * 1e6}
			if iter < warmup {
				res.Warmup = append(res.Warmup, s)
			} else {
				res.Samples = append(res.Samples, s)
			}
			continue
		}
		if benchSummary.MatchString(line) {
			summary = true
		}
	}
	switch {
	case len(res.Samples) == 0:
		return fmt.Errorf("bench printed no measured iteration (%d lines of output)", len(lines(out, 1<<20)))
	case !summary:
		return fmt.Errorf("bench printed no Summary line: cut short?")
	}
	return nil
}

// haveTool reports whether the image holds the tool.
func haveTool(tool string) bool {
	if tool != benchmark.BPFBench {
		return false
	}
	_, err := os.Stat(BenchPath)
	return err == nil
}
