package spec

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// checkout makes a lab checkout with one series and the fragments.
func checkout(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, d := range []string{"labs", "patches/s1", "kernel-config"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for f, body := range map[string]string{
		"kernel-config/common.config": "CONFIG_SMP=y\n",
		"kernel-config/x86_64.config": "CONFIG_SMP=y\n",
		"patches/s1/0001-x.patch":     testPatch,
	} {
		if err := os.WriteFile(filepath.Join(root, f), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

const testPatch = `From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: A <a@example.org>
Subject: [PATCH] x: y

diff --git a/x b/x
--- a/x
+++ b/x
@@ -1 +1 @@
-a
+b
`

// testHost has 4G of RAM, whatever machine runs the tests.
var testHost = Host{MemoryMiB: 4096}

// parse reads src as labs/t.yaml of a fresh checkout.
func parse(t *testing.T, src string) (*Lab, string, error) {
	t.Helper()
	path := filepath.Join(checkout(t), "labs", "t.yaml")
	lab, err := ParseOn(path, []byte(src), testHost)
	return lab, path, err
}

const good = `name: t
series: s1
mode: revert
matrix:
  arch: [x86_64]
  cpus: [2]
  benchmarks: [uprobe-nop]
  producers: [1, 2]
  boots: 4
  duration: 3s
  warmup: 2s
`

func TestParseGood(t *testing.T) {
	lab, path, err := parse(t, good)
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Dir(filepath.Dir(path))
	if lab.Mode != ModeRevert || lab.Matrix.Boots != 4 || lab.Matrix.Duration.Duration != 3*time.Second || lab.Matrix.Warmup.Duration != 2*time.Second {
		t.Errorf("parsed %+v", lab.Matrix)
	}
	if lab.Source.Tarball != DefaultTarball || lab.Source.Package != DefaultPackage {
		t.Errorf("default source = %+v", lab.Source)
	}
	if lab.Root != root {
		t.Errorf("root = %s, want %s", lab.Root, root)
	}
	fr := lab.Fragments("x86_64")
	if len(fr) != 2 || !strings.HasSuffix(fr[1], "x86_64.config") {
		t.Errorf("fragments = %v", fr)
	}
	if fr := lab.Fragments("arm64"); len(fr) != 1 {
		t.Errorf("arm64 fragments = %v (no arm64.config in this checkout)", fr)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(string) string
		want string // substring of the error, which must start with file:line
		line int
	}{
		{"misspelt key", func(s string) string { return strings.Replace(s, "  benchmarks:", "  benchmarcks:", 1) }, `unknown key "benchmarcks" in matrix (known: affinity, arch, benchmarks,`, 7},
		{"misspelt top key", func(s string) string { return strings.Replace(s, "mode:", "moed:", 1) }, `unknown key "moed" (known:`, 3},
		{"bad mode", func(s string) string { return strings.Replace(s, "revert", "backwards", 1) }, `mode "backwards": want "apply", "revert" or "auto" (lab tries both)`, 3},
		{"unknown benchmark", func(s string) string { return strings.Replace(s, "[uprobe-nop]", "[uprobe-nop, uprobe-nope]", 1) }, `unknown benchmark "uprobe-nope"`, 7},
		{"producers above cpus", func(s string) string { return strings.Replace(s, "[1, 2]", "[1, 4]", 1) }, "producers 4 is more than the 2 vCPUs", 8},
		{"bad arch", func(s string) string { return strings.Replace(s, "[x86_64]", "[riscv]", 1) }, `unknown architecture "riscv"`, 5},
		{"bad duration", func(s string) string { return strings.Replace(s, "3s", "three", 1) }, `"three" is not a duration`, 10},
		{"bad type", func(s string) string { return strings.Replace(s, "boots: 4", "boots: many", 1) }, `matrix.boots: "many" is not a whole number: write e.g. boots: 5`, 9},
		{"missing series", func(s string) string { return strings.Replace(s, "series: s1", "series: nope", 1) }, `series "nope": no folder `, 2},
		{"kprobe-multi on arm64", func(s string) string {
			return strings.Replace(strings.Replace(s, "[x86_64]", "[x86_64, arm64]", 1), "[uprobe-nop]", "[uprobe-nop, kprobe-multi]", 1)
		}, "benchmark kprobe-multi cannot run on arm64: needs CONFIG_FPROBE", 7},
		{"icount with 2 cpus", func(s string) string { return s + "  measure: icount\n" }, "icount is only reliable with 1 vCPU", 12},
		{"yaml syntax", func(s string) string { return s + "  boots: [\n" }, "", 0},
		{"duplicate key", func(s string) string { return s + "  boots: 5\n" }, `key "boots" is given twice (first at line 9): keep one`, 12},
		{"numa does not divide cpus", func(s string) string { return s + "  numa: [1, 4]\n" }, "2 vCPUs do not split evenly over 4 NUMA nodes: use 1 or 2 nodes, or 4 vCPUs", 12},
		{"misspelt key in numa_layout", func(s string) string {
			return s + "  numa_layout:\n    nodes:\n      - {cpus: 0, memroy: 512M}\n"
		}, `unknown key "memroy"`, 14},
		{"numa_layout leaves a CPU out", func(s string) string {
			return s + "  numa_layout:\n    nodes:\n      - {cpus: 0, memory: 512M}\n"
		}, "CPUs 1 are in no node", 12},
		{"numa_layout cpulist beyond any machine", func(s string) string {
			return s + "  numa_layout:\n    nodes:\n      - {cpus: 0-99999999, memory: 512M}\n"
		}, `numa node 0: cpu list "0-99999999": CPU 99999999 is past the last CPU, 1: write CPUs within 0-1`, 14},
		{"bad pin", func(s string) string { return s + "  pin: always\n" }, `pin "always": want auto, on or off`, 12},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, path, err := parse(t, tc.edit(good))
			if err == nil {
				t.Fatal("no error")
			}
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("error %T %v is not a *spec.Error", err, err)
			}
			if !strings.HasPrefix(err.Error(), path+":") {
				t.Errorf("error %q does not start with the file name", err)
			}
			if tc.line != 0 && se.Line != tc.line {
				t.Errorf("line %d, want %d: %v", se.Line, tc.line, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

// The shipped labs must parse, on any host: their memory is checked
// against the host that runs them, not the one that tests them.
func TestShippedLabs(t *testing.T) {
	labs, _ := filepath.Glob("../../labs/*.yaml")
	if len(labs) == 0 {
		t.Fatal("no labs/*.yaml")
	}
	for _, l := range labs {
		data, err := os.ReadFile(l)
		if err == nil {
			_, err = ParseOn(l, data, Host{})
		}
		if err != nil {
			t.Error(err)
		}
	}
}

func TestShapes(t *testing.T) {
	lab, _, err := parse(t, strings.Replace(good, "cpus: [2]", "cpus: [2, 16]", 1)+"  numa: [1, 2]\n  memory: 2G\n")
	if err != nil {
		t.Fatal(err)
	}
	shapes, err := lab.Matrix.Shapes("x86_64")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range shapes {
		got = append(got, s.String())
	}
	want := "2 vCPUs | 2 vCPUs (sockets=2,cores=1,threads=1), 2 NUMA nodes | 16 vCPUs | 16 vCPUs (sockets=2,cores=8,threads=1), 2 NUMA nodes"
	if strings.Join(got, " | ") != want {
		t.Errorf("shapes:\n got %s\nwant %s", strings.Join(got, " | "), want)
	}
}

func TestJobBenchmarksAddsControls(t *testing.T) {
	m := Matrix{Benchmarks: []string{"uprobe-nop", "syscall-count"}}
	got := m.JobBenchmarks()
	want := []string{"uprobe-nop", "syscall-count", "usermode-count"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("got %v, want %v", got, want)
	}
	off := false
	m.Controls = &off
	if got := m.JobBenchmarks(); len(got) != 2 {
		t.Errorf("controls off: got %v", got)
	}
}

// A lab that lab track alone uses measures a branch and names no series;
// what needs one says so, and how to give it.
func TestLabWithoutSeries(t *testing.T) {
	lab, _, err := parse(t, strings.Replace(good, "series: s1\n", "", 1))
	if err != nil {
		t.Fatal(err)
	}
	_, err = lab.OpenSeries()
	if err == nil || !strings.Contains(err.Error(), "lab t names no series") || !strings.Contains(err.Error(), "--series PATH") {
		t.Errorf("OpenSeries: %v", err)
	}
}
