package cluster_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"lab/internal/cluster"
	"lab/internal/merge"
	"lab/internal/results"
	"lab/internal/testenv"
)

// smallLab is a real lab made small: labs/uprobe-srcu.yaml on x86_64 at one
// vCPU, one benchmark at one producer without controls, 2 boots per
// variant of a second each on the wall clock (the test reads which boots
// ran, not their figures: a guest second under icount is about 3 of the
// host's CPU), one boot at a time per shard. Its kernels are
// in the default cache after the other end-to-end tests.
func smallLab() []string {
	return []string{"labs/uprobe-srcu.yaml", "--shards", "2", "--arch", "x86_64", "--cpus", "1", "--benchmarks", "uprobe-nop", "--no-controls", "--measure", "wall",
		"--producers", "1", "--boots", "2", "--duration", "250ms", "--warmup", "0", "--parallel", "1", "--exclusive=false"}
}

// The whole path on a real Slurm: lab submit slurm submits a build job, a
// 2-task boot array and a merge job to a one-node cluster this test
// starts; the merged run must be the union of the shards' boots. Then the
// engine's fault: a task cancelled in the middle of its shard leaves a
// partial shard, which the merge accepts with a caveat (lab merge
// --complete refuses it), and resubmitting that shard makes the merge
// whole.
func TestSlurmEndToEnd(t *testing.T) {
	testenv.E2E(t, "a one-node Slurm cluster running lab submit slurm")
	c := startSlurm(t)
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	lab := filepath.Join(c.dir, "lab")
	if out, err := exec.Command("go", "build", "-o", lab, filepath.Join(root, "cmd", "lab")).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	e := e2e{t: t, c: c, exe: lab, root: root}

	t.Run("whole", func(t *testing.T) {
		e.t = t
		ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
		defer cancel()
		sub := e.submit(ctx, filepath.Join(c.dir, "whole"))
		e.wait(ctx, sub.Merge)
		for _, job := range []string{sub.Build, sub.Boots, sub.Merge} {
			for _, s := range c.states(job) {
				if !strings.Contains(s, " COMPLETED 0:0") {
					t.Errorf("job %s", s)
				}
			}
		}
		m := e.checkMerged(sub, []int{1, 2, 3, 4})
		if !m.Complete || len(m.Notes) == 0 || strings.Contains(strings.Join(m.Notes, "\n"), "partial") {
			t.Errorf("merged run: complete %v, notes %q", m.Complete, m.Notes)
		}
		if out, err := e.lab(ctx, "report", sub.Merged, "-out", filepath.Join(t.TempDir(), "report")); err != nil || !strings.Contains(out, "uprobe-nop") {
			t.Errorf("lab report on the merged run: %v\n%s", err, out)
		}
	})

	t.Run("a series from a list", func(t *testing.T) {
		e.t = t
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
		defer cancel()
		e.watchedOnSlurm(ctx)
	})

	t.Run("cancelled shard resubmitted", func(t *testing.T) {
		e.t = t
		ctx, cancel := context.WithTimeout(context.Background(), 7*time.Minute)
		defer cancel()
		sub := e.submit(ctx, filepath.Join(c.dir, "fault"))
		e.waitFirstBoot(ctx, sub, 1)
		if out, err := c.run("scancel", sub.Boots+"_1"); err != nil {
			t.Fatalf("scancel: %v %s", err, out)
		}
		e.wait(ctx, sub.Merge)
		if st := c.states(sub.Boots + "_1"); len(st) != 1 || !strings.Contains(st[0], "CANCELLED") {
			t.Errorf("task 1: %v", st)
		}
		m := e.checkMerged(sub, []int{1, 2, 3})
		caveat := "shard 1/2 is partial: 1 of 2 boots"
		if m.Complete || !strings.Contains(strings.Join(m.Notes, "\n"), caveat) {
			t.Errorf("merged run after the cancel: complete %v, notes %q", m.Complete, m.Notes)
		}
		report, _ := os.ReadFile(filepath.Join(sub.Merged, "report", "report.md"))
		if !strings.Contains(string(report), caveat) {
			t.Errorf("the report does not say the shard is partial")
		}
		out, err := e.lab(ctx, "merge", filepath.Join(sub.Dir, "shards", "uprobe-srcu", "*"), "-o", filepath.Join(t.TempDir(), "m"), "--complete")
		if err == nil || !strings.Contains(out, caveat) {
			t.Errorf("lab merge --complete accepted the partial shard: %v\n%s", err, out)
		}

		resub := exec.CommandContext(ctx, "sh", filepath.Join(sub.Dir, "scripts", "resubmit.sh"), "1")
		resub.Env = c.Env()
		got, err := resub.CombinedOutput()
		ids := regexp.MustCompile(`boot (\d+) \(shard 1\), merge (\d+)`).FindStringSubmatch(string(got))
		if err != nil || ids == nil {
			t.Fatalf("resubmit.sh 1: %v\n%s", err, got)
		}
		e.wait(ctx, ids[2])
		for _, s := range append(c.states(ids[1]), c.states(ids[2])...) {
			if !strings.Contains(s, " COMPLETED 0:0") {
				t.Errorf("job %s", s)
			}
		}
		m = e.checkMerged(sub, []int{1, 2, 3, 4})
		if !m.Complete || strings.Contains(strings.Join(m.Notes, "\n"), "partial") || !strings.Contains(strings.Join(m.Notes, "\n"), "superseded") {
			t.Errorf("merged run after the resubmission: complete %v, notes %q", m.Complete, m.Notes)
		}
	})
}

// watchedOnSlurm is lab watch handing a series from a list to Slurm: a
// real public-inbox receives the lazy-buffer series, the first pass submits
// it and returns, later passes find it running, and the first pass after
// the merge ended answers it with a verdict threaded under its cover letter,
// once. The lab is small (one wall-clock boot a kernel at one vCPU, one
// benchmark), as the other subtests' is; its kernels are the lazy-buffer
// lab's, in the cache after the other end-to-end tests.
func (e e2e) watchedOnSlurm(ctx context.Context) {
	t := e.t
	pi := testenv.NewPublicInbox(t)
	for _, m := range testenv.LazySeries(t, e.root, 1, "") {
		pi.Deliver(t, m)
	}
	dir := t.TempDir()
	labFile := filepath.Join(dir, "watched.yaml")
	os.WriteFile(labFile, []byte(`name: watched
description: the lazy-buffer series' files, run small on a cluster
mode: auto
config: [common.config]
watch:
  paths: [kernel/trace/trace_uprobe.c]
matrix:
  arch: [x86_64]
  cpus: [1]
  benchmarks: [uretprobe-nop]
  producers: [1]
  controls: false
  boots: 1
  duration: 250ms
  warmup: 0s
  measure: wall
`), 0o644)
	maildir := filepath.Join(dir, "replies")
	pass := func() string {
		t.Helper()
		out, err := e.lab(ctx, "watch", "--once", "--inbox", pi.Dir, "--history", filepath.Join(dir, "history.db"), "--results", filepath.Join(dir, "results"),
			"--maildir", maildir, "--submit", "slurm", "--shards", "1", "--exclusive=false", labFile)
		if err != nil {
			t.Fatalf("lab watch: %v\n%s", err, out)
		}
		return out
	}
	out := pass()
	t.Logf("the first pass:\n%s", out)
	if !strings.Contains(out, "1 series handed to the cluster") || !strings.Contains(out, "merge job ") {
		t.Fatalf("the first pass did not hand the series to Slurm:\n%s", out)
	}
	passes := 1
	for !strings.Contains(out, "answered (verdict)") {
		if strings.Contains(out, "answered (") {
			logs, _ := filepath.Glob(filepath.Join(dir, "results", "watched", "slurm-*", "logs", "*"))
			for _, l := range logs {
				data, _ := os.ReadFile(l)
				t.Logf("--- %s\n%s", l, tail(string(data), 20))
			}
			t.Fatalf("answered with no verdict:\n%s", out)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no answer after %d passes: %v; queue: %s", passes, ctx.Err(), must(e.c.run("squeue")))
		case <-time.After(2 * time.Second):
		}
		out = pass()
		passes++
	}
	t.Logf("answered at pass %d:\n%s", passes, out)
	replies, _ := filepath.Glob(filepath.Join(maildir, "new", "*"))
	if len(replies) != 1 {
		t.Fatalf("%d replies in the Maildir, want 1", len(replies))
	}
	reply, _ := os.ReadFile(replies[0])
	for _, want := range []string{"In-Reply-To: <lazy-v1@kernel.org>", "X-Lab-Verdict: verdict", "uretprobe-nop"} {
		if !strings.Contains(string(reply), want) {
			t.Errorf("the reply lacks %q:\n%s", want, reply)
		}
	}
	if out := pass(); !strings.Contains(out, "0 series answered") || strings.Contains(out, "handed") {
		t.Errorf("a pass after the answer:\n%s", out)
	}
}

func must(s string, _ error) string { return s }

// e2e runs lab against the cluster.
type e2e struct {
	t         *testing.T
	c         *slurmCluster
	exe, root string
}

// lab runs lab in its checkout with the cluster's environment.
func (e e2e) lab(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, e.exe, args...)
	cmd.Dir, cmd.Env = e.root, e.c.Env()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// submit runs lab submit slurm with the small lab and reads back what it
// submitted.
func (e e2e) submit(ctx context.Context, results string) cluster.Submission {
	e.t.Helper()
	out, err := e.lab(ctx, append([]string{"submit", "slurm", "--results", results}, smallLab()...)...)
	if err != nil {
		e.t.Fatalf("lab submit slurm: %v\n%s", err, out)
	}
	e.t.Logf("lab submit slurm:\n%s", out)
	files, _ := filepath.Glob(filepath.Join(results, "uprobe-srcu", "slurm-*", "submission.json"))
	if len(files) != 1 {
		e.t.Fatalf("submissions %v", files)
	}
	var sub cluster.Submission
	data, err := os.ReadFile(files[0])
	if err != nil || json.Unmarshal(data, &sub) != nil || sub.Merge == "" {
		e.t.Fatalf("submission.json: %v %s", err, data)
	}
	if !strings.Contains(out, "merge job "+sub.Merge) || !strings.Contains(out, sub.Report) {
		e.t.Errorf("lab submit slurm does not say which jobs and where the report goes:\n%s", out)
	}
	return sub
}

// wait waits for a job to leave the queue, and shows the jobs' logs when
// the test fails.
func (e e2e) wait(ctx context.Context, job string) {
	e.t.Helper()
	err := e.c.waitGone(ctx, job)
	if err != nil || e.t.Failed() {
		logs, _ := filepath.Glob(filepath.Join(e.c.dir, "*", "uprobe-srcu", "slurm-*", "logs", "*"))
		for _, l := range logs {
			data, _ := os.ReadFile(l)
			e.t.Logf("--- %s\n%s", l, tail(string(data), 20))
		}
	}
	if err != nil {
		e.t.Fatal(err)
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// waitFirstBoot waits until shard k has saved its first boot.
func (e e2e) waitFirstBoot(ctx context.Context, sub cluster.Submission, k int) {
	e.t.Helper()
	pattern := filepath.Join(sub.Dir, "shards", "uprobe-srcu", "*-shard1-of-2*", "results.json")
	for {
		files, _ := filepath.Glob(pattern)
		for _, f := range files {
			if r, err := results.Load(f); err == nil && len(r.Boots) > 0 && r.Shard != nil && r.Shard.K == k {
				e.t.Logf("shard %d saved boot %d; cancelling its task", k, r.Boots[0].Index)
				return
			}
		}
		select {
		case <-ctx.Done():
			e.t.Fatalf("shard %d saved no boot: %v; queue: %v", k, ctx.Err(), e.c.states(sub.Boots))
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// checkMerged checks the merged run against the shard folders: the boot
// numbers wanted, and each boot exactly as a shard folder recorded it
// (figures, variant, console), with that folder's host; a boot in two
// folders (a resubmitted shard) comes from the complete one.
func (e e2e) checkMerged(sub cluster.Submission, want []int) *results.Run {
	e.t.Helper()
	m, err := results.Load(filepath.Join(sub.Merged, "results.json"))
	if err != nil {
		e.t.Fatal(err)
	}
	shards, err := merge.Load([]string{filepath.Join(sub.Dir, "shards", "uprobe-srcu", "*")})
	if err != nil {
		e.t.Fatal(err)
	}
	var got []int
	for _, b := range m.Boots {
		got = append(got, b.Index)
		if !b.OK() || len(b.Results) == 0 {
			e.t.Errorf("merged boot %d did not deliver: %+v", b.Index, b.Failure)
		}
		if !fromShards(b, shards) {
			e.t.Errorf("merged boot %d is not as its shard folder recorded it", b.Index)
		}
		if _, err := os.Stat(filepath.Join(sub.Merged, b.Console)); err != nil {
			e.t.Errorf("boot %d console: %v", b.Index, err)
		}
	}
	if !reflect.DeepEqual(got, want) || m.Shard != nil {
		e.t.Errorf("merged boots %v, want %v; shard %v", got, want, m.Shard)
	}
	return m
}

// fromShards: b is as the shard folders recorded it, with its folder's
// host, from a complete folder when one has it (a resubmitted shard).
func fromShards(b results.Boot, shards []merge.Shard) bool {
	var from []merge.Shard
	for _, s := range shards {
		if slices.ContainsFunc(s.Run.Boots, func(sb results.Boot) bool { return sb.Index == b.Index }) {
			from = append(from, s)
		}
	}
	if complete := slices.DeleteFunc(slices.Clone(from), func(s merge.Shard) bool { return !s.Run.Complete }); len(complete) > 0 {
		from = complete
	}
	return slices.ContainsFunc(from, func(s merge.Shard) bool {
		for _, sb := range s.Run.Boots {
			if sb.Index == b.Index {
				sb.Host = &s.Run.Host
				return reflect.DeepEqual(sb, b)
			}
		}
		return false
	})
}
