package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"lab/internal/spec"
	"lab/internal/variant"
)

func loadLab(t *testing.T, boots int, cpus ...int) *spec.Lab {
	t.Helper()
	lab, err := spec.Load("../../labs/uprobe-srcu.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lab.Matrix.Boots = boots
	if len(cpus) > 0 {
		lab.Matrix.CPUs = cpus
	}
	return lab
}

// The plan deals pairs as lab run --shard does: every boot in exactly one
// shard, whole pairs, and the commands carry the flags and the shard.
func TestPlan(t *testing.T) {
	for _, tc := range []struct {
		name   string
		boots  int
		cpus   []int
		n      int
		only   variant.Variant
		shards [][]int
	}{
		{"5 pairs over 2", 5, nil, 2, "", [][]int{{1, 2, 5, 6, 9, 10}, {3, 4, 7, 8}}},
		{"2 shapes, 2 rounds, 3 shards", 2, []int{1, 2}, 3, "", [][]int{{1, 2, 7, 8}, {3, 4}, {5, 6}}},
		{"one shard", 2, nil, 1, "", [][]int{{1, 2, 3, 4}}},
		{"--only patched", 3, nil, 2, variant.Patched, [][]int{{1, 3}, {2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := Request{Lab: loadLab(t, tc.boots, tc.cpus...), LabFile: "labs/uprobe-srcu.yaml", Shards: tc.n, Results: "out",
				Args: []string{"--cpus=1", "--duration=1s"}, Only: tc.only}
			p, err := Make(req)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Units) != tc.n+2 || p.Units[0].Kind != KindBuild || p.Units[len(p.Units)-1].Kind != KindMerge {
				t.Fatalf("units %+v", p.Units)
			}
			for k, want := range tc.shards {
				u := p.Units[k+1]
				if !reflect.DeepEqual(u.Boots, want) || u.Shard != fmt.Sprintf("%d/%d", k, tc.n) {
					t.Errorf("shard %d: boots %v (%s), want %v", k, u.Boots, u.Shard, want)
				}
				line := Line(u.Command)
				if !strings.Contains(line, fmt.Sprintf("--shard %d/%d --no-build --cpus=1 --duration=1s --results out/shards", k, tc.n)) {
					t.Errorf("shard %d command %s", k, line)
				}
			}
			if got := Line(p.Units[0].Command); got != "lab build labs/uprobe-srcu.yaml --cpus=1 --duration=1s --results out" {
				t.Errorf("build command %s", got)
			}
			if got := Line(p.Units[len(p.Units)-1].Command); got != "lab merge 'out/shards/uprobe-srcu/*' -o out/merged" {
				t.Errorf("merge command %s", got)
			}
		})
	}
}

func TestPlanRefuses(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want string
	}{
		{0, "want 1 or more"},
		{4, "3 boot pairs, so at most 3 shards"},
	} {
		_, err := Make(Request{Lab: loadLab(t, 3), LabFile: "l.yaml", Shards: tc.n})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--shards %d: %v, want %q", tc.n, err, tc.want)
		}
	}
}

func TestArgsAndQuoting(t *testing.T) {
	got := Args([]Flag{{Name: "cpus", Value: "1,2"}, {Name: "shard", Value: "0/2"}, {Name: "no-controls", Value: "true", Bool: true},
		{Name: "no-build", Value: "true", Bool: true}, {Name: "cache", Value: "/c"}, {Name: "memory", Value: "2G"}, {Name: "pin", Value: "off"}})
	if want := []string{"--cpus=1,2", "--no-controls", "--memory=2G", "--pin=off"}; !reflect.DeepEqual(got, want) {
		t.Errorf("args %v, want %v", got, want)
	}
	for in, want := range map[string]string{
		"plain/path-1.yaml":         "plain/path-1.yaml",
		"with space":                "'with space'",
		"it's":                      `'it'\''s'`,
		"results/shards/x/*":        "'results/shards/x/*'",
		"$SLURM_ARRAY_TASK_ID/4":    `"$SLURM_ARRAY_TASK_ID/4"`,
		"${{ matrix.shard }}/4":     `"${{ matrix.shard }}/4"`,
		"/r/run-$LAB_RUN/\"q\"/`x`": "\"/r/run-$LAB_RUN/\\\"q\\\"/\\`x\\`\"",
		"":                          "''",
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
}

// slurmFixture is a submission laid out in a temp folder, with a fake lab
// that prints its arguments, so that the batch scripts can run here.
func slurmFixture(t *testing.T, n int) Slurm {
	t.Helper()
	dir := t.TempDir()
	fake := filepath.Join(dir, "fake-lab")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\nprintf '%s\\n' \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	req := Request{Lab: loadLab(t, 4), LabFile: "labs/uprobe-srcu.yaml", Shards: n, Cache: "/shared/cache", Exe: fake, Args: []string{"--cpus=1", "--memory=1G"}}
	return NewSlurm(req, dir, filepath.Join(dir, "sub dir"), "debug", true)
}

// The batch scripts parse, and each runs lab with the unit's arguments:
// the array task's shard from SLURM_ARRAY_TASK_ID, the merge's pattern
// unexpanded (lab expands it).
func TestSlurmScripts(t *testing.T) {
	s := slurmFixture(t, 3)
	scripts, err := s.Scripts()
	if err != nil {
		t.Fatal(err)
	}
	paths, err := WriteScripts(filepath.Join(s.Dir, "scripts"), scripts)
	if err != nil || len(paths) != 5 {
		t.Fatalf("%v %v", paths, err)
	}
	for _, p := range paths {
		if out, err := exec.Command("sh", "-n", p).CombinedOutput(); err != nil {
			t.Errorf("sh -n %s: %v %s", p, err, out)
		}
	}
	for _, tc := range []struct {
		script string
		env    []string
		want   []string
	}{
		{"build.sh", nil, []string{"build", "labs/uprobe-srcu.yaml", "--cpus=1", "--memory=1G", "--cache", "/shared/cache", "--results", s.Dir}},
		{"boot.sh", []string{"SLURM_ARRAY_TASK_ID=2"}, []string{"run", "labs/uprobe-srcu.yaml", "--shard", "2/3", "--no-build", "--cpus=1", "--memory=1G", "--cache", "/shared/cache", "--results", s.Dir + "/shards"}},
		{"merge.sh", nil, []string{"merge", s.Dir + "/shards/uprobe-srcu/*", "-o", s.Dir + "/merged"}},
	} {
		t.Run(tc.script, func(t *testing.T) {
			cmd := exec.Command("sh", s.Script(tc.script))
			cmd.Env = append(os.Environ(), tc.env...)
			out, err := cmd.Output()
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Split(strings.TrimSpace(string(out)), "\n"); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("lab got\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
	if out, err := exec.Command("sh", s.Script("boot.sh")).CombinedOutput(); err == nil || !strings.Contains(string(out), "submit as an array") {
		t.Errorf("boot.sh outside an array: %v %s", err, out)
	}
}

// fakeSbatch answers sbatch with ids from 100 and records what it was asked.
type fakeSbatch struct {
	calls [][]string
	fail  int // fail the n-th call (1-based), 0: never
}

func (f *fakeSbatch) run(ctx context.Context, args []string) ([]byte, error) {
	f.calls = append(f.calls, args)
	if len(f.calls) == f.fail {
		return nil, fmt.Errorf("sbatch: error: Batch job submission failed: Invalid partition name specified")
	}
	return []byte(fmt.Sprintf("%d;cluster\n", 99+len(f.calls))), nil
}

// Submit chains the jobs: the array after the build (afterok), the merge
// after the build and every task (afterany), each with the partition, the
// logs' folder, and the scripts it wrote.
func TestSubmit(t *testing.T) {
	s := slurmFixture(t, 2)
	var f fakeSbatch
	sub, err := s.Submit(context.Background(), f.run)
	if err != nil {
		t.Fatal(err)
	}
	if sub.Build != "100" || sub.Boots != "101" || sub.Merge != "102" || len(f.calls) != 3 {
		t.Fatalf("submission %+v after %d calls", sub, len(f.calls))
	}
	for _, tc := range []struct {
		call int
		want []string
		not  []string
	}{
		{0, []string{"--partition=debug", "--chdir=" + s.Root, s.Script("build.sh")}, []string{"--dependency"}},
		{1, []string{"--array=0-1", "--exclusive", "--dependency=afterok:100", "--kill-on-invalid-dep=yes", s.Script("boot.sh")}, nil},
		{2, []string{"--dependency=afterok:100,afterany:101", s.Script("merge.sh")}, []string{"--exclusive"}},
	} {
		args := f.calls[tc.call]
		if args[0] != "sbatch" || args[1] != "--parsable" {
			t.Errorf("call %d: %v", tc.call, args)
		}
		for _, w := range tc.want {
			if !slices.Contains(args, w) {
				t.Errorf("call %d lacks %s: %v", tc.call, w, args)
			}
		}
		for _, w := range tc.not {
			if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, w) }) {
				t.Errorf("call %d has %s: %v", tc.call, w, args)
			}
		}
	}
	data, err := os.ReadFile(filepath.Join(s.Dir, "submission.json"))
	var saved Submission
	if err != nil || json.Unmarshal(data, &saved) != nil || saved != *sub {
		t.Errorf("submission.json: %s %v", data, err)
	}
	text := sub.Text()
	for _, w := range []string{"build job 100", "boot array 101", "merge job 102", s.Merged(), "report.txt", "squeue -j 100,101,102", "resubmit.sh"} {
		if !strings.Contains(text, w) {
			t.Errorf("text lacks %q:\n%s", w, text)
		}
	}
	if _, err := os.Stat(s.Logs()); err != nil {
		t.Errorf("logs folder: %v", err)
	}
}

// A failing sbatch stops the submission and says which jobs are queued.
func TestSubmitFails(t *testing.T) {
	for _, tc := range []struct {
		fail int
		want string
	}{
		{1, "submit the build job"},
		{2, "build job 100 is queued"},
		{3, "jobs 100 and 101 are queued"},
	} {
		f := fakeSbatch{fail: tc.fail}
		_, err := slurmFixture(t, 2).Submit(context.Background(), f.run)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "Invalid partition") {
			t.Errorf("failing call %d: %v, want %q", tc.fail, err, tc.want)
		}
	}
	bad := func(ctx context.Context, args []string) ([]byte, error) {
		return []byte("Submitted batch job 5\n"), nil
	}
	if _, err := slurmFixture(t, 2).Submit(context.Background(), bad); err == nil || !strings.Contains(err.Error(), "not a job id") {
		t.Errorf("sbatch without --parsable output: %v", err)
	}
}

// A submission stopped midway (sbatch failed, or the submitter was
// killed) keeps the ids it got; a Submit into the same folder submits only
// the jobs still missing, each after the ones recorded.
func TestSubmitResumes(t *testing.T) {
	for fail := 1; fail <= 3; fail++ {
		s := slurmFixture(t, 2)
		first := fakeSbatch{fail: fail}
		if _, err := s.Submit(context.Background(), first.run); err == nil {
			t.Fatalf("call %d did not fail", fail)
		}
		again := fakeSbatch{}
		sub, err := s.Submit(context.Background(), again.run)
		if err != nil {
			t.Fatal(err)
		}
		if len(again.calls) != 4-fail {
			t.Errorf("stopped at call %d: %d calls again, want %d", fail, len(again.calls), 4-fail)
		}
		kept := []string{"100", "101", "102"}[:fail-1]
		if got := []string{sub.Build, sub.Boots, sub.Merge}[:fail-1]; !slices.Equal(got, kept) {
			t.Errorf("stopped at call %d: kept %v, want %v", fail, got, kept)
		}
		last := again.calls[len(again.calls)-1]
		if want := "--dependency=afterok:" + sub.Build + ",afterany:" + sub.Boots; !slices.Contains(last, want) {
			t.Errorf("stopped at call %d: the merge %v lacks %s", fail, last, want)
		}
		data, _ := os.ReadFile(filepath.Join(s.Dir, "submission.json"))
		var saved Submission
		if json.Unmarshal(data, &saved) != nil || saved != *sub {
			t.Errorf("submission.json %s, want %+v", data, sub)
		}
	}
}

// submit.sh and resubmit.sh run the same sbatch commands as Submit, with
// the ids in shell variables: run them against a fake sbatch on the PATH.
func TestSubmitScripts(t *testing.T) {
	s := slurmFixture(t, 2)
	scripts, err := s.Scripts()
	if err != nil {
		t.Fatal(err)
	}
	WriteScripts(filepath.Join(s.Dir, "scripts"), scripts)
	bin := t.TempDir()
	log := filepath.Join(bin, "calls")
	fake := fmt.Sprintf("#!/bin/sh\nprintf '%%s|' \"$@\" >> %s\necho >> %s\nn=$(wc -l < %s)\necho \"$((200 + n));c\"\n", log, log, log)
	if err := os.WriteFile(filepath.Join(bin, "sbatch"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
	for _, tc := range []struct {
		script string
		args   []string
		calls  []string
		echo   string
	}{
		{"submit.sh", nil, []string{"--array=0-1|--exclusive|--dependency=afterok:201|", "--dependency=afterok:201,afterany:202|"}, "build 201, boots 202 (array 0-1), merge 203"},
		{"resubmit.sh", []string{"1"}, []string{"--array=1|--exclusive|" + s.Script("boot.sh"), "--dependency=afterany:201|--kill-on-invalid-dep=yes|" + s.Script("merge.sh")}, "boot 201 (shard 1), merge 202"},
	} {
		t.Run(tc.script, func(t *testing.T) {
			os.Remove(log)
			cmd := exec.Command("sh", append([]string{s.Script(tc.script)}, tc.args...)...)
			cmd.Env = env
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), tc.echo) {
				t.Fatalf("%v: %s", err, out)
			}
			calls, _ := os.ReadFile(log)
			for _, c := range tc.calls {
				if !strings.Contains(string(calls), c) {
					t.Errorf("sbatch calls lack %q:\n%s", c, calls)
				}
			}
		})
	}
}
