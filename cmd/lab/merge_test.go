package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"lab/internal/report"
	"lab/internal/results"
	"lab/internal/runfolder"
	"lab/internal/shard"
)

const example = "../../results/examples/uprobe-srcu/x86_64-1cpu-icount"

// splitExample cuts a committed single-host run into the shard folders lab
// run --shard K/n would have written on the given hosts: the boots dealt
// by pairs, each shard's run-level host its own.
func splitExample(t *testing.T, n int, hosts []string, drop map[int]bool) (*results.Run, []string) {
	t.Helper()
	whole, err := results.Load(filepath.Join(example, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	// Older runs did not record rounds: the i-th boot of a variant is
	// round i (boots interleave).
	seen := map[string]int{}
	for i := range whole.Boots {
		b := &whole.Boots[i]
		b.Round = seen[string(b.Variant)]
		seen[string(b.Variant)]++
	}
	var slots []shard.Slot
	for _, b := range whole.Boots {
		slots = append(slots, shard.Slot{Round: b.Round, Index: b.Index})
	}
	root := t.TempDir()
	var dirs []string
	for k := 0; k < n; k++ {
		part := *whole
		part.Host.Name = hosts[k%len(hosts)]
		part.Boots = nil
		picked := shard.Shard{K: k, N: n}.Pick(slots)
		part.Shard = &results.Shard{K: k, N: n, Boots: len(picked)}
		for _, s := range picked {
			if !drop[s.Index] {
				part.Boots = append(part.Boots, whole.Boots[s.Index-1])
			}
		}
		part.Complete = len(part.Boots) == len(picked)
		dir := filepath.Join(root, fmt.Sprintf("shard%d", k))
		os.MkdirAll(dir, 0o755)
		if err := (runfolder.Folder{Dir: dir}).Save(&part); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	return whole, dirs
}

func labCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr strings.Builder
	code := runMain(context.Background(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// A run split into shards and merged again has the run's boots, and its
// report is the single-host run's report: the same tables, figures and
// verdicts.
func TestMergeCommandRebuildsTheRun(t *testing.T) {
	for _, tc := range []struct {
		name  string
		n     int
		hosts []string
	}{
		{"2 shards, one host", 2, []string{"node1"}},
		{"5 shards, one host", 5, []string{"node1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			whole, dirs := splitExample(t, tc.n, tc.hosts, nil)
			out := filepath.Join(t.TempDir(), "merged")
			code, stdout, stderr := labCmd(t, append(append([]string{"merge"}, dirs...), "-o", out, "--complete")...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			merged, err := results.Load(filepath.Join(out, "results.json"))
			if err != nil {
				t.Fatal(err)
			}
			if merged.Shard != nil || !merged.Complete || len(merged.Boots) != len(whole.Boots) {
				t.Fatalf("merged: shard %v, complete %v, %d boots", merged.Shard, merged.Complete, len(merged.Boots))
			}
			for i, b := range merged.Boots {
				if b.Host == nil || b.Host.Name != tc.hosts[0] {
					t.Errorf("boot %d: host %v", b.Index, b.Host)
				}
				b.Host = nil
				if !reflect.DeepEqual(b, whole.Boots[i]) {
					t.Errorf("boot %d differs from the run's", b.Index)
				}
			}
			got, want := report.Build(merged, out, "v").Tables, report.Build(whole, example, "v").Tables
			for i := range got {
				got[i].Hosts = nil
			}
			for i := range want {
				want[i].Hosts = nil
			}
			// As the reports show them (pairs are named by host, which
			// only the merged run knows).
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			if string(g) != string(w) {
				t.Errorf("the merged run's tables differ from the run's:\n%s\n%s", g, w)
			}
			for _, f := range []string{"report.txt", "report.md", "report-80.txt", "report.csv", "report.json", "report.html", "baseline.txt", "patched.txt"} {
				if _, err := os.Stat(filepath.Join(out, "report", f)); err != nil {
					t.Errorf("report file: %v", err)
				}
			}
			if !strings.Contains(stdout, "uprobe-nop") || !strings.Contains(stdout, fmt.Sprintf("merged %d boots of %d shard folders", len(whole.Boots), tc.n)) {
				t.Errorf("output:\n%s", stdout)
			}
			code, again, stderr := labCmd(t, "report", out, "-out", t.TempDir())
			if code != 0 || !strings.Contains(again, "uprobe-nop") {
				t.Errorf("lab report on the merged run: exit %d %s", code, stderr)
			}
		})
	}
}

// A lost shard, or part of one: merged with a caveat in the output and the
// report, refused with --complete naming the shard.
func TestMergeCommandIncomplete(t *testing.T) {
	for _, tc := range []struct {
		name   string
		drop   map[int]bool
		only   []int // shard folders given
		caveat string
	}{
		{"missing shard", nil, []int{0}, "shard 1/2 is missing: boots 3, 4, 7, 8"},
		{"partial shard", map[int]bool{7: true, 8: true}, []int{0, 1}, "shard 1/2 is partial: 2 of 4 boots"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, dirs := splitExample(t, 2, []string{"a", "b"}, tc.drop)
			var given []string
			for _, k := range tc.only {
				given = append(given, dirs[k])
			}
			out := filepath.Join(t.TempDir(), "merged")
			code, stdout, stderr := labCmd(t, append(append([]string{"merge"}, given...), "-o", out)...)
			if code != 0 || !strings.Contains(stdout, "caveat: "+tc.caveat) {
				t.Fatalf("exit %d, output:\n%s\n%s", code, stdout, stderr)
			}
			md, _ := os.ReadFile(filepath.Join(out, "report", "report.md"))
			if !strings.Contains(string(md), tc.caveat) {
				t.Errorf("report.md lacks the caveat")
			}
			code, _, stderr = labCmd(t, append(append([]string{"merge"}, given...), "-o", filepath.Join(t.TempDir(), "m2"), "--complete")...)
			if code != exitError || !strings.Contains(stderr, tc.caveat) {
				t.Errorf("--complete: exit %d, %s", code, stderr)
			}
		})
	}
}

func TestMergeCommandUsage(t *testing.T) {
	_, dirs := splitExample(t, 2, []string{"a"}, nil)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"merge", "-o", "x"}, exitUsage, "got none"},
		{[]string{"merge", dirs[0]}, exitUsage, "-o DIR is required"},
		{[]string{"merge", dirs[0], example, "-o", filepath.Join(t.TempDir(), "m")}, exitError, "not a shard"},
		{[]string{"merge", filepath.Join(filepath.Dir(dirs[0]), "nothing*"), "-o", "x"}, exitError, "no shard folder matches"},
	} {
		code, _, stderr := labCmd(t, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("lab %s: exit %d %q, want %d %q", strings.Join(tc.args, " "), code, stderr, tc.code, tc.want)
		}
	}
}
