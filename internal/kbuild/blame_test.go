package kbuild

import (
	"errors"
	"fmt"
	"testing"
)

func TestBlame(t *testing.T) {
	compile := &BuildError{Arch: "x86_64", Commit: "abc", Dir: "/o",
		Err: errors.New("make: ...\n../kernel/events/uprobes.c:12:7: error: expected ';'\nmore")}
	patches := func(file string) (string, []string) {
		if SameFile(file, "kernel/events/uprobes.c") {
			return "", []string{"0001-a.patch", "0003-c.patch"}
		}
		return "", nil
	}
	step := func(file string) (string, []string) { return "kernel/events/uprobes.c", []string{"0003-c.patch"} }
	for _, tc := range []struct {
		name    string
		err     error
		touched func(string) (string, []string)
		want    string
		ok      bool
	}{
		{"the patches that touch it", compile, patches, "../kernel/events/uprobes.c:12:7: error: expected ';' (touched by 0001-a.patch, 0003-c.patch)", true},
		{"the tree's path", compile, step, "kernel/events/uprobes.c:12:7: error: expected ';' (touched by 0003-c.patch)", true},
		{"untouched", compile, func(string) (string, []string) { return "", nil }, "../kernel/events/uprobes.c:12:7: error: expected ';' (the series does not touch it)", true},
		{"wrapped", fmt.Errorf("kernel: %w", compile), patches, "../kernel/events/uprobes.c:12:7: error: expected ';' (touched by 0001-a.patch, 0003-c.patch)", true},
		{"a link error", &BuildError{Err: errors.New("ld: undefined reference to `x'")}, patches, "", false},
		{"not a build error", errors.New("disk full"), patches, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Blame(tc.err, tc.touched)
			if got != tc.want || ok != tc.ok {
				t.Errorf("Blame = %q, %v; want %q, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestSameFile(t *testing.T) {
	for _, tc := range []struct {
		compiler, file string
		want           bool
	}{
		{"kernel/x.c", "kernel/x.c", true},
		{"../kernel/x.c", "kernel/x.c", true},
		{"./kernel/x.c", "kernel/x.c", true},
		{"/src/linux/kernel/x.c", "kernel/x.c", true},
		{"kernel/ax.c", "x.c", false},
		{"kernel/x.c", "kernel/y.c", false},
	} {
		if got := SameFile(tc.compiler, tc.file); got != tc.want {
			t.Errorf("SameFile(%q, %q) = %v, want %v", tc.compiler, tc.file, got, tc.want)
		}
	}
}
