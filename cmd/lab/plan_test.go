package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lab/internal/cluster"
)

const srcuLab = "../../labs/uprobe-srcu.yaml"

// lab plan --json: the build, the shards with their boots, the merge, and
// each command with the flags that were given.
func TestPlanJSON(t *testing.T) {
	code, stdout, stderr := labCmd(t, "plan", srcuLab, "--shards", "2", "--json", "--cpus", "1", "--boots", "3", "--no-controls")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var p cluster.Plan
	if err := json.Unmarshal([]byte(stdout), &p); err != nil {
		t.Fatal(err)
	}
	if p.Lab != "uprobe-srcu" || p.LabFile != "labs/uprobe-srcu.yaml" || p.Boots != 6 || p.Pairs != 3 || len(p.Units) != 4 {
		t.Fatalf("plan %+v", p)
	}
	for _, tc := range []struct {
		unit, line string
	}{
		{"build", "lab build labs/uprobe-srcu.yaml --boots=3 --cpus=1 --no-controls --results results"},
		{"shard-0", "lab run labs/uprobe-srcu.yaml --shard 0/2 --no-build --boots=3 --cpus=1 --no-controls --results results/shards"},
		{"shard-1", "lab run labs/uprobe-srcu.yaml --shard 1/2 --no-build --boots=3 --cpus=1 --no-controls --results results/shards"},
		{"merge", "lab merge 'results/shards/uprobe-srcu/*' -o results/merged"},
	} {
		u, ok := p.Unit(tc.unit)
		if !ok || cluster.Line(u.Command) != tc.line {
			t.Errorf("%s: %s, want %s", tc.unit, cluster.Line(u.Command), tc.line)
		}
	}
	if u, _ := p.Unit("shard-0"); len(u.Boots) != 4 || u.Pairs != 2 {
		t.Errorf("shard 0: %+v", u)
	}
}

// lab plan --emit writes each engine's template, where asked.
func TestPlanEmit(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		file string // written, or "" for stdout
		want string
	}{
		{"github to stdout", []string{"--emit", "github"}, "", "pattern: lab-shard-*"},
		{"k8s to a file", []string{"--emit", "k8s", "-o", filepath.Join(dir, "k.yaml"), "--image", "reg/lab:2"}, filepath.Join(dir, "k.yaml"), "image: reg/lab:2"},
		{"slurm scripts", []string{"--emit", "slurm", "-o", filepath.Join(dir, "slurm")}, filepath.Join(dir, "slurm", "scripts", "boot.sh"), `--shard "$SLURM_ARRAY_TASK_ID/3" --no-build`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := labCmd(t, append([]string{"plan", srcuLab, "--shards", "3"}, tc.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			text := stdout
			if tc.file != "" {
				data, err := os.ReadFile(tc.file)
				if err != nil {
					t.Fatal(err)
				}
				text = string(data)
			}
			if !strings.Contains(text, tc.want) {
				t.Errorf("no %q in\n%s", tc.want, text)
			}
		})
	}
}

func TestPlanUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"plan", srcuLab}, "--shards N is required"},
		{[]string{"plan", srcuLab, "--shards", "6"}, "at most 5 shards"},
		{[]string{"plan", srcuLab, "--shards", "2", "--shard", "0/2"}, "the plan's to set"},
		{[]string{"plan", srcuLab, "--shards", "2", "--emit", "nomad"}, `--emit "nomad"`},
		{[]string{"plan", srcuLab, "--shards", "2", "--emit", "slurm"}, "-o DIR is required"},
		{[]string{"plan", srcuLab, "--shards", "2", "--emit", "github", "--json"}, "choose one"},
		{[]string{"plan"}, "one lab file"},
	} {
		code, _, stderr := labCmd(t, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("lab %s: exit %d %q, want %q", strings.Join(tc.args, " "), code, stderr, tc.want)
		}
	}
}
