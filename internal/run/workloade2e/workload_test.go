package workloade2e

import (
	"fmt"
	"strings"
	"testing"

	"lab/internal/insnprof"
	"lab/internal/report"
	"lab/internal/run/runtest"
	"lab/internal/stats"
	"lab/internal/testenv"
)

// delayFn is a planted delay of its own, so that the where-block can name
// it: turns of a loop on every call.
func delayFn(name string, turns int) string {
	return fmt.Sprintf("static noinline void %s(void)\n{\n\tvolatile int lab_d;\n\n\tfor (lab_d = 0; lab_d < %d; lab_d++)\n\t\t;\n}\n\n", name, turns)
}

const (
	faultHead = "vm_fault_t handle_mm_fault(struct vm_area_struct *vma, unsigned long address,\n"
	faultBody = "\t__set_current_state(TASK_RUNNING);\n\n\tret = sanitize_fault_flags(vma, &flags);\n"
	writeHead = "static ssize_t\npipe_write(struct kiocb *iocb, struct iov_iter *from)\n{\n"
	writeBody = "\tbool wake_next_writer = false;\n\n"
)

// The workloads of labs/mm-fault.yaml and labs/sched-pipe.yaml under
// icount, one boot a kernel: a delay planted in the page-fault path
// (handle_mm_fault) is found slower by stress-mmap, one planted in
// pipe_write by stress-pipe, each named in its where-block (the fault
// path's with its caller);
// a comment added to both files (lines move, so the images differ, and no
// path does) is judged unchanged by both. Not futex's: its waiter and waker
// interleave anew with any change, and a 512-turn delay in futex_wake read
// +12.5 %, +15.0 % and -1.4 % with three agent images (docs/workloads.md).
func TestWorkloadsFindAPlantedRegression(t *testing.T) {
	testenv.E2E(t, "builds and boots real kernels that run stress-ng under icount")
	root := testenv.Checkout(t, runtest.Root(t))
	const comment = "/* lab: a comment, and no code */\n"
	runtest.TarballSeries(t, root, map[string][]testenv.Edit{
		"mm-slow": {{Subject: "mm: a delay on every fault", File: "mm/memory.c", Change: func(s string) string {
			s = testenv.Replace(faultHead, delayFn("lab_fault_delay", 128)+faultHead)(s)
			return testenv.Replace(faultBody, "\t__set_current_state(TASK_RUNNING);\n\tlab_fault_delay();\n\n\tret = sanitize_fault_flags(vma, &flags);\n")(s)
		}}},
		"pipe-slow": {{Subject: "pipe: a delay on every write", File: "fs/pipe.c", Change: func(s string) string {
			s = testenv.Replace(writeHead, delayFn("lab_pipe_delay", 256)+writeHead)(s)
			return testenv.Replace(writeBody, "\tbool wake_next_writer = false;\n\n\tlab_pipe_delay();\n")(s)
		}}},
		"comments": {
			{Subject: "mm: a comment", File: "mm/memory.c", Change: testenv.Replace(faultHead, comment+faultHead)},
			{Subject: "pipe: a comment", File: "fs/pipe.c", Change: testenv.Replace(writeHead, comment+writeHead)},
		},
	})
	labFile := testenv.WriteLab(t, root, "workloads", `name: workloads
description: delays planted in the fault and pipe write paths, and a comment in both
mode: apply
versions:
  - {name: mm-slow, series: mm-slow}
  - {name: pipe-slow, series: pipe-slow}
  - {name: comments, series: comments}
config: [common.config]
matrix:
  arch: [x86_64]
  cpus: [1]
  benchmarks: [stress-mmap, stress-pipe]
  producers: [1]
  duration: 250ms
  warmup: 0s
  measure: icount
`)
	_, d, rows := runtest.RunVersions(t, labFile, 4)
	for _, tc := range []struct {
		row  string
		want string
	}{
		{"mm-slow vs baseline stress-mmap", stats.Slower},
		{"pipe-slow vs baseline stress-pipe", stats.Slower},
		{"comments vs baseline stress-mmap", stats.Same},
		{"comments vs baseline stress-pipe", stats.Same},
	} {
		r, ok := rows[tc.row]
		if !ok {
			t.Errorf("%s: no such row (%d rows)", tc.row, len(rows))
			continue
		}
		if c := r.Change; c.Verdict != tc.want || !c.Exact {
			t.Errorf("%s: %s, want %s (exact)", tc.row, c.Words(), tc.want)
		}
	}
	delaysNamed(t, d)
}

// delaysNamed checks the where-blocks of TestWorkloadsFindAPlantedRegression:
// each planted delay named with its caller, the comments moving nothing.
func delaysNamed(t *testing.T, d *report.Document) {
	t.Helper()
	text := report.WhereText(d)
	t.Log(text)
	blocks := map[string]insnprof.Where{}
	for _, c := range d.Comparisons {
		for _, w := range c.Where {
			blocks[c.Name()+" "+w.Row] = w.Where
		}
	}
	for _, tc := range []struct{ block, delay, caller string }{
		{"mm-slow vs baseline stress-mmap p=1", "lab_fault_delay", "handle_mm_fault"},
		// pipe_write gains only the call, below the block's twelve rows.
		{"pipe-slow vs baseline stress-pipe p=1", "lab_pipe_delay", ""},
	} {
		w, ok := blocks[tc.block]
		if !ok {
			t.Errorf("no where-block %q", tc.block)
			continue
		}
		named := map[string]insnprof.Moved{}
		for _, m := range w.Rows {
			named[m.Function] = m
		}
		if m, ok := named[tc.delay]; !ok || m.Before != 0 || m.Delta <= 0 {
			t.Errorf("%s: the delay %s is not named with what it adds an operation: %+v", tc.block, tc.delay, w.Rows)
		}
		if _, ok := named[tc.caller]; !ok && tc.caller != "" {
			t.Errorf("%s: the delay's caller %s is not named: %+v", tc.block, tc.caller, w.Rows)
		}
	}
	if !strings.Contains(text, "where it moved, comments vs baseline, x86_64 · 1 vCPU · TCG · icount: nowhere") {
		t.Errorf("the report does not say the comments moved nothing")
	}
}
