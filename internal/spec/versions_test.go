package spec

import (
	"strconv"
	"strings"
	"testing"
)

// A lab of several series: versions: names each, series: as for one.
func TestVersions(t *testing.T) {
	src := "name: t\nversions:\n  - name: v1\n    series: s1\n  - {name: v2, series: ../patches/s1}\n"
	lab, _, err := parse(t, src)
	if err != nil {
		t.Fatal(err)
	}
	if lab.Series != "" || len(lab.Versions) != 2 || lab.Versions[1] != (Version{Name: "v2", Series: "../patches/s1"}) {
		t.Fatalf("series %q, versions %+v", lab.Series, lab.Versions)
	}
	for i := range lab.Versions {
		s, err := lab.OpenVersion(i)
		if err != nil {
			t.Fatalf("version %d: %v", i, err)
		}
		if len(s.Patches) != 1 {
			t.Errorf("version %d: %d patches", i, len(s.Patches))
		}
		s.Close()
	}
	// What takes one series (lab bisect, lab build) says so.
	if _, err := lab.OpenSeries(); err == nil || !strings.Contains(err.Error(), "lab t has 2 series (versions:), and this takes one") {
		t.Errorf("OpenSeries of a lab of several: %v", err)
	}
	// Written back, it reads the same.
	data, err := lab.YAML("")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "versions:\n") || strings.Contains(string(data), "\nseries: ") {
		t.Errorf("written back:\n%s", data)
	}
}

func TestVersionsRefused(t *testing.T) {
	const v1 = "  - name: v1\n    series: s1\n"
	for _, tc := range []struct {
		src  string
		line int
		want string
	}{
		{"name: t\nseries: s1\nversions:\n" + v1 + "  - name: v2\n    series: s1\n", 3, "give series: (one series) or versions: (several), not both"},
		{"name: t\nversions:\n" + v1, 2, "versions: 1 series: a lab of several needs two or more (one is series:)"},
		{"name: t\nversions:\n" + v1 + "  - name: baseline\n    series: s1\n", 5, `versions: variant name "baseline" is the kernel without any series`},
		{"name: t\nversions:\n" + v1 + "  - name: v1\n    series: s1\n", 5, "versions: two are named v1"},
		{"name: t\nversions:\n" + v1 + "  - name: a/b\n    series: s1\n", 5, "letters, digits"},
		{"name: t\nversions:\n" + v1 + "  - name: v2\n", 5, "versions: v2 has no series:"},
		{"name: t\nversions:\n" + v1 + "  - name: v2\n    series: nope\n", 6, `versions: v2: series "nope": `},
		{"name: t\nversions:\n" + v1 + "  - name: v2\n    series: s1\n    mode: apply\n", 7, `unknown key "mode"`},
	} {
		_, path, err := parse(t, tc.src)
		if err == nil {
			t.Errorf("%q: no error, want %q", tc.src, tc.want)
			continue
		}
		prefix := path + ":" + strconv.Itoa(tc.line) + ": "
		if msg := err.Error(); !strings.HasPrefix(msg, prefix) || !strings.Contains(msg, tc.want) {
			t.Errorf("%q:\n%q\nwant %s...%q", tc.src, msg, prefix, tc.want)
		}
	}
}

// A lab of several boots each kernel: the time limit counts them all.
func TestVersionsTimeLimit(t *testing.T) {
	src := "name: t\nversions:\n  - {name: v1, series: s1}\n  - {name: v2, series: s1}\n  - {name: v3, series: s1}\nmatrix:\n  duration: 5h\n  boots: 10\n"
	_, _, err := parse(t, src)
	if err == nil || !strings.Contains(err.Error(), "(10 boots × 4 variants × 3 benchmark runs per boot") {
		t.Errorf("err = %v", err)
	}
}
