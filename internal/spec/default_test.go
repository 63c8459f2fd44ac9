package spec

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"lab/internal/series"
)

// mbox is a one-patch series as git format-patch --cover-letter --stdout
// writes it, v2, with a base-commit: line and trailers.
const mbox = `From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: A <a@example.org>
Date: Wed, 2 Dec 2026 10:00:00 +0000
Subject: [PATCH v2 0/1] x: faster y

Makes y faster.

base-commit: 1b8f85defbc8aaaaaaaaaaaaaaaaaaaaaaaaaaaa

From 1111111111111111111111111111111111111111 Mon Sep 17 00:00:00 2001
From: A <a@example.org>
Date: Wed, 2 Dec 2026 10:00:00 +0000
Subject: [PATCH v2 1/1] x: y

Acked-by: B <b@example.org>
Signed-off-by: A <a@example.org>
---
diff --git a/x b/x
--- a/x
+++ b/x
@@ -1 +1 @@
-a
+b
`

// openMbox writes mbox into dir as NAME.mbx and opens it (into a temporary
// folder, removed at the test's end).
func openMbox(t *testing.T, dir string) *series.Series {
	t.Helper()
	p := filepath.Join(dir, "v2_x.mbx")
	if err := os.WriteFile(p, []byte(mbox), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := series.Open(p, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// The lab made for a series without a lab file: the shape this host can
// judge, written back as a lab file that reads as the same lab.
func TestDefault(t *testing.T) {
	root := checkout(t)
	t.Setenv("LAB_ROOT", root)
	s := openMbox(t, t.TempDir())
	for _, tc := range []struct {
		name      string
		host      Host
		arch      string
		cpus      []int
		producers []int
		boots     int
		measure   string
	}{
		{"TCG", Host{MemoryMiB: 4096, CPUs: 2}, "x86_64", []int{1}, []int{1}, 1, MeasureICount},
		{"KVM, 16 CPUs", Host{MemoryMiB: 65536, CPUs: 16, KVMArch: "x86_64"}, "x86_64", []int{1, 2, 4, 8, 16}, []int{1, 2, 4, 8, 16}, 8, MeasureWall},
		{"KVM, 6 CPUs", Host{MemoryMiB: 65536, CPUs: 6, KVMArch: "arm64"}, "arm64", []int{1, 2, 4, 6}, []int{1, 2, 4, 6}, 8, MeasureWall},
		{"KVM, 1 CPU", Host{MemoryMiB: 4096, CPUs: 1, KVMArch: "x86_64"}, "x86_64", []int{1}, []int{1}, 8, MeasureWall},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lab, err := Default("v2_x", s, tc.host)
			if err != nil {
				t.Fatal(err)
			}
			m := lab.Matrix
			if lab.Mode != ModeAuto || lab.Root != root || lab.Series != s.Dir || lab.Description != "x: faster y" {
				t.Errorf("mode %q, root %s, series %s, description %q", lab.Mode, lab.Root, lab.Series, lab.Description)
			}
			if !reflect.DeepEqual(m.Arch, []string{tc.arch}) || !reflect.DeepEqual(m.CPUs, tc.cpus) || !reflect.DeepEqual(m.Producers, tc.producers) ||
				m.Boots != tc.boots || m.Measure != tc.measure || m.Duration.Duration != 3*time.Second || m.Warmup.Duration != time.Second {
				t.Errorf("matrix %+v", m)
			}
			if len(tc.cpus) > 1 && !m.ClipProducers {
				t.Errorf("a contention matrix without clip_producers: %+v", m)
			}
			if got := m.JobBenchmarks(); !reflect.DeepEqual(got, append(append([]string(nil), DefaultBenchmarks...), "usermode-count", "syscall-count")) {
				t.Errorf("benchmarks %v: want the probe suite and the controls", got)
			}
			if !strings.Contains(lab.BaseNote, "1b8f85defbc8: cannot be checked against the tarball linux-source-6.12.tar.xz") {
				t.Errorf("base note %q", lab.BaseNote)
			}
			// Written back as a run folder's lab.yaml, beside its series/.
			dir := t.TempDir()
			copied, err := series.Open(s.Dir, nil, filepath.Join(dir, "series"))
			if err != nil {
				t.Fatal(err)
			}
			saved := *lab
			saved.Series = "./series"
			data, err := saved.YAML("made by lab run --series v2_x.mbx\nrepeat: lab run lab.yaml")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(data), "# made by lab run --series v2_x.mbx\n# repeat: lab run lab.yaml\nname: v2_x\n") {
				t.Errorf("lab.yaml starts:\n%s", data)
			}
			p := filepath.Join(dir, "lab.yaml")
			os.WriteFile(p, data, 0o644)
			again, err := ParseOn(p, data, tc.host)
			if err != nil {
				t.Fatalf("the written lab does not read back: %v\n%s", err, data)
			}
			if again.SeriesPath() != copied.Dir || again.Root != root {
				t.Errorf("read back: series at %s, root %s; want %s, %s", again.SeriesPath(), again.Root, copied.Dir, root)
			}
			if d := labDiff(lab, again); d != "" {
				t.Errorf("read back differs: %s\n%s", d, data)
			}
		})
	}
}

// labDiff names the first field two labs differ in, beyond where they were
// read from.
func labDiff(a, b *Lab) string {
	x, y := *a, *b
	for _, l := range []*Lab{&x, &y} {
		l.Path, l.Series, l.doc, l.host = "", "", nil, Host{}
	}
	va, vb := reflect.ValueOf(x), reflect.ValueOf(y)
	for i := 0; i < va.NumField(); i++ {
		if f := va.Type().Field(i); f.IsExported() && !reflect.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			return f.Name
		}
	}
	return ""
}

// Every lab of the checkout, written back by YAML, reads as the same lab:
// a run folder's lab.yaml repeats the run.
func TestYAMLRoundTrip(t *testing.T) {
	files, _ := filepath.Glob("../../labs/*.yaml")
	if len(files) < 5 {
		t.Fatalf("labs: %v", files)
	}
	for _, f := range files {
		lab, err := ParseOn(f, mustRead(t, f), testHost)
		if err != nil {
			t.Fatal(err)
		}
		data, err := lab.YAML("")
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseOn(f, data, testHost)
		if err != nil {
			t.Fatalf("%s written back does not read: %v\n%s", f, err, data)
		}
		if d := labDiff(lab, again); d != "" || again.Series != lab.Series {
			t.Errorf("%s written back differs in %s:\n%s", f, d, data)
		}
	}
	// What no lab of the checkout has: a NUMA layout without distances,
	// a source with a base, claims with all their keys, tools.
	lab, _, err := parse(t, "name: t\nseries: s1\nsource:\n  git: /src/linux\n  base: v6.12\ntools: [bpf-bench]\nconsole_expect: ['ok 1']\n"+
		"matrix:\n  cpus: [2]\n  warmup: 2s\n  controls: false\n  affinity: true\n  maxactive: 32\n  pin: off\n  numa_layout:\n    nodes:\n      - {cpus: 0, memory: 512M}\n      - {cpus: 1, memory: 512M}\n"+
		"claims:\n  - {benchmark: uprobe-nop, producers: [1], direction: slower, min: 2%, note: \"a: b\"}\n")
	if err != nil {
		t.Fatal(err)
	}
	data, _ := lab.YAML("")
	again, err := ParseOn(lab.Path, data, testHost)
	if err != nil {
		t.Fatalf("written back does not read: %v\n%s", err, data)
	}
	if d := labDiff(lab, again); d != "" {
		t.Errorf("written back differs in %s:\n%s", d, data)
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// A lab file's series: is a name under patches/ or a path from the lab
// file's folder, of a folder or an mbox.
func TestSeriesPath(t *testing.T) {
	root := checkout(t)
	os.WriteFile(filepath.Join(root, "labs", "v2_x.mbx"), []byte(mbox), 0o644)
	os.MkdirAll(filepath.Join(root, "runs", "r1"), 0o755)
	os.WriteFile(filepath.Join(root, "runs", "r1", "x.patch"), []byte(testPatch), 0o644)
	for _, tc := range []struct {
		at, series, want, err string
	}{
		{"labs/t.yaml", "s1", "patches/s1", ""},
		{"labs/t.yaml", "./v2_x.mbx", "labs/v2_x.mbx", ""},
		{"labs/t.yaml", "../runs/r1", "runs/r1", ""},
		{"runs/r1/lab.yaml", "./x.patch", "runs/r1/x.patch", ""},
		// A series that is not there: where lab looked, absolute, and the
		// other reading of series: when it finds one.
		{"labs/t.yaml", "v2_x.mbx", "", `labs/t.yaml:2: series "v2_x.mbx": no folder ` + root + "/patches/v2_x.mbx (a name is a folder under patches/, which holds s1); did you mean series: ./v2_x.mbx, beside the lab file?"},
		{"labs/t.yaml", "nope", "", `labs/t.yaml:2: series "nope": no folder ` + root + "/patches/nope (a name is a folder under patches/, which holds s1)"},
		{"labs/t.yaml", "./nope.mbx", "", `labs/t.yaml:2: series "./nope.mbx": no such file or folder: ` + root + "/labs/nope.mbx (a relative path is taken from the lab file's folder, " + root + "/labs)"},
		{"labs/t.yaml", "../s1", "", `series "../s1": no such file or folder: ` + root + "/s1 (a relative path is taken from the lab file's folder, " + root + "/labs); did you mean series: s1, the folder patches/s1?"},
		{"labs/t.yaml", "/nowhere/patches/s1/", "", `series "/nowhere/patches/s1/": no such file or folder: /nowhere/patches/s1; did you mean series: s1, the folder patches/s1?`},
	} {
		p := filepath.Join(root, tc.at)
		lab, err := ParseOn(p, []byte("name: t\nseries: "+tc.series+"\n"), testHost)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("series: %s: %v, want %q", tc.series, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("series: %s: %v", tc.series, err)
			continue
		}
		if got := lab.SeriesPath(); got != filepath.Join(root, tc.want) {
			t.Errorf("series: %s at %s: %s, want %s", tc.series, tc.at, got, tc.want)
		}
		s, err := lab.OpenSeries()
		if err != nil || len(s.Patches) != 1 {
			t.Errorf("series: %s: open: %v", tc.series, err)
		} else {
			s.Close()
		}
	}
}

// Root: the first folder at or above the lab file's that holds
// kernel-config/; else $LAB_ROOT; else lab's checkout from the working
// folder.
func TestFindRoot(t *testing.T) {
	root := checkout(t)
	deep := filepath.Join(root, "results", "t", "20261202-100000")
	os.MkdirAll(deep, 0o755)
	elsewhere := filepath.Join(t.TempDir(), "runs", "r1")
	os.MkdirAll(elsewhere, 0o755)
	wd, _ := os.Getwd()
	lab, _ := filepath.Abs(filepath.Join(wd, "..", ".."))
	for _, tc := range []struct {
		name, dir, env, want string
	}{
		{"labs/", filepath.Join(root, "labs"), "", root},
		{"a run folder in the checkout", deep, "", root},
		{"a run folder elsewhere, $LAB_ROOT", elsewhere, root, root},
		{"a run folder elsewhere, lab's checkout", elsewhere, "", lab},
		{"no lab file, $LAB_ROOT", "", root, root},
		{"no lab file, lab's checkout", "", "", lab},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("LAB_ROOT", tc.env)
			if got := FindRoot(tc.dir); got != tc.want {
				t.Errorf("FindRoot(%s) = %s, want %s", tc.dir, got, tc.want)
			}
		})
	}
}

// A git source builds from the series' base-commit unless the lab gives
// source.base; a tarball cannot check one, and the note says so.
func TestBase(t *testing.T) {
	root := checkout(t)
	s := openMbox(t, t.TempDir())
	for _, tc := range []struct {
		name, source, base, note, err string
	}{
		{"git, no base", "source:\n  git: /src/linux\n", "1b8f85defbc8aaaaaaaaaaaaaaaaaaaaaaaaaaaa", "the git source builds from it (the lab gives no source.base)", ""},
		{"git, base given", "source:\n  git: /src/linux\n  base: v6.12\n", "v6.12", "not used: the lab gives source.base v6.12, which wins", ""},
		{"git, the same base", "source:\n  git: /src/linux\n  base: 1b8f85defbc8\n", "1b8f85defbc8", "the lab's source.base names it", ""},
		{"tarball", "", "", "cannot be checked against the tarball linux-source-6.12.tar.xz (a tarball has no history); the series goes on the source as the tarball ships it", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(root, "labs", "t.yaml")
			data := []byte("name: t\nseries: s1\n" + tc.source)
			os.WriteFile(p, data, 0o644)
			lab, err := LoadWith(p, s)
			if err != nil {
				t.Fatal(err)
			}
			if lab.Source.Base != tc.base || !strings.Contains(lab.BaseNote, tc.note) || lab.Series != s.Dir {
				t.Errorf("base %q, note %q, series %s", lab.Source.Base, lab.BaseNote, lab.Series)
			}
		})
	}
	// The file's own series names no base-commit: a git source needs one.
	_, err := ParseOn(filepath.Join(root, "labs", "t.yaml"), []byte("name: t\nseries: s1\nsource:\n  git: /src/linux\n"), testHost)
	if err == nil || !strings.Contains(err.Error(), "t.yaml:4: source.git needs source.base (the ref to build from): the series names no base-commit") {
		t.Errorf("git without a base: %v", err)
	}
}

// --mode changes the lab's mode; a wrong one is a flag error.
func TestModeFlag(t *testing.T) {
	lab, _, err := parse(t, good)
	if err != nil {
		t.Fatal(err)
	}
	var f Flags
	f.Mode.Set("auto")
	if err := f.Apply(lab); err != nil || lab.Mode != ModeAuto {
		t.Errorf("--mode auto: %v, mode %q", err, lab.Mode)
	}
	var bad Flags
	bad.Mode.Set("sideways")
	if err := bad.Apply(lab); err == nil || !strings.Contains(err.Error(), `with the command-line flags: mode "sideways": want "apply", "revert" or "auto"`) {
		t.Errorf("--mode sideways: %v", err)
	}
}
