package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeSbatch puts an sbatch on the PATH that logs its arguments and
// answers job ids from 301.
func fakeSbatch(t *testing.T) string {
	t.Helper()
	bin := t.TempDir()
	log := filepath.Join(bin, "calls")
	script := fmt.Sprintf("#!/bin/sh\necho \"$*\" >> %s\necho $((300 + $(wc -l < %s)))\n", log, log)
	if err := os.WriteFile(filepath.Join(bin, "sbatch"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	return log
}

// lab submit slurm submits the three jobs, chained, with the flags given,
// and says where the merged report will be.
func TestSubmitSlurm(t *testing.T) {
	log := fakeSbatch(t)
	results, cache := t.TempDir(), t.TempDir()
	code, stdout, stderr := labCmd(t, "submit", "slurm", srcuLab, "--shards", "2", "--cpus", "1", "--boots", "2", "--partition", "gpu",
		"--exclusive=false", "--results", results, "--cache", cache)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	subs, _ := filepath.Glob(filepath.Join(results, "uprobe-srcu", "slurm-*"))
	if len(subs) != 1 {
		t.Fatalf("submission folders %v", subs)
	}
	sub := subs[0]
	for _, w := range []string{"build job 301", "boot array 302", "merge job 303", filepath.Join(sub, "merged", "report", "report.txt")} {
		if !strings.Contains(stdout, w) {
			t.Errorf("output lacks %q:\n%s", w, stdout)
		}
	}
	calls, _ := os.ReadFile(log)
	lines := strings.Split(strings.TrimSpace(string(calls)), "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], "--array=0-1 --dependency=afterok:301") || !strings.Contains(lines[2], "--dependency=afterok:301,afterany:302") ||
		strings.Contains(lines[1], "--exclusive") || !strings.Contains(lines[0], "--partition=gpu") {
		t.Errorf("sbatch calls:\n%s", calls)
	}
	boot, err := os.ReadFile(filepath.Join(sub, "scripts", "boot.sh"))
	if err != nil || !strings.Contains(string(boot), "--no-build --boots=2 --cpus=1 --cache "+cache+" --results "+filepath.Join(sub, "shards")) {
		t.Errorf("boot.sh: %s %v", boot, err)
	}
}

func TestSubmitUsage(t *testing.T) {
	fakeSbatch(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"submit", "k8s", srcuLab, "--shards", "2"}, "lab plan --emit"},
		{[]string{"submit", "slurm", srcuLab}, "--shards N is required"},
		{[]string{"submit", "slurm", srcuLab, "--shards", "9"}, "at most 5 shards"},
	} {
		code, _, stderr := labCmd(t, tc.args...)
		if code == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("lab %s: exit %d %q, want %q", strings.Join(tc.args, " "), code, stderr, tc.want)
		}
	}
}
