package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"lab/initramfs/protocol"
	"lab/internal/benchmark"
)

// workloadBench measures a workload of the benchmark table: its program,
// run to a fixed amount of work once per sample (warm-up ones first), each
// run a section of its own after the guest has settled. A sample's rate is
// the operations the program says it did over the run's guest time, which
// under icount is its instructions: an exact path length per operation,
// the program's start and exit included.
func workloadBench(res *protocol.Result, b benchmark.Benchmark, p int, job protocol.Job) error {
	if b.Program == nil {
		return fmt.Errorf("workload %s names no program", b.Name)
	}
	argv := b.Program.Argv(p)
	res.Attach = "none: " + strings.Join(argv, " ")
	if _, err := os.Stat(argv[0]); err != nil {
		return fmt.Errorf("%s is not in the initramfs (package %s): %w", argv[0], b.Program.Package, err)
	}
	if err := os.MkdirAll("/tmp", 0o777|os.ModeSticky); err != nil {
		return err
	}
	once := func() (protocol.Sample, error) {
		if err := settle(job); err != nil {
			return protocol.Sample{}, err
		}
		return runProgram(*b.Program, argv)
	}
	for i := 0; i < job.WarmupSamples; i++ {
		s, err := once()
		if err != nil {
			return err
		}
		res.Warmup = append(res.Warmup, s)
	}
	for i := 0; i < job.Samples; i++ {
		s, err := once()
		if err != nil {
			return err
		}
		res.Samples = append(res.Samples, s)
	}
	if job.StackHz > 0 {
		res.Stacks = profiled(job.StackHz, once)
	}
	return nil
}

// keptOutput is how much of a failed program's output an error keeps.
const keptOutput = 2048

// runProgram runs argv once, timed and marked as a section, and reads its
// operations by prog's metric. A program that fails, or whose metric
// cannot be read, fails the sample with the end of what it printed.
func runProgram(prog benchmark.Program, argv []string) (protocol.Sample, error) {
	if prog.Output != "" {
		if err := os.Remove(prog.Output); err != nil && !os.IsNotExist(err) {
			return protocol.Sample{}, err
		}
	}
	var out bytes.Buffer
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = "/tmp", &out, &out
	start := monotonicNS()
	section := marked.start()
	err := cmd.Run()
	marked.stop()
	end := monotonicNS()
	failed := func(err error) (protocol.Sample, error) {
		return protocol.Sample{}, fmt.Errorf("%s: %w; it printed:\n%s", strings.Join(argv, " "), err, tail(out.Bytes(), keptOutput))
	}
	if err != nil {
		return failed(err)
	}
	written := out.Bytes()
	if prog.Output != "" {
		if written, err = os.ReadFile(prog.Output); err != nil {
			return failed(fmt.Errorf("read its metrics: %w", err))
		}
	}
	ops, err := prog.Ops(written)
	if err != nil {
		return failed(err)
	}
	s := protocol.Sample{IntervalNS: end - start, Hits: ops, Calls: ops, Section: section}
	s.Rate = float64(ops) / (float64(s.IntervalNS) / 1e9)
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		s.ProducerNS = ru.Utime.Nano() + ru.Stime.Nano()
	}
	return s, nil
}

// tail is the last n bytes of b, from a line's start where it can.
func tail(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	b = b[len(b)-n:]
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[i+1:]
	}
	return "…\n" + string(b)
}
