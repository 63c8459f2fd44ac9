package spec

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"
)

func parseFlags(t *testing.T, args ...string) (*Flags, error) {
	t.Helper()
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var f Flags
	f.RegisterFlags(fs)
	return &f, fs.Parse(args)
}

func TestFlagsApply(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		check func(*Lab) bool
	}{
		{"warmup 0 is honoured", []string{"--warmup", "0"}, func(l *Lab) bool { return l.Matrix.Warmup.Duration == 0 }},
		{"duration", []string{"--duration", "2s"}, func(l *Lab) bool { return l.Matrix.Duration.Duration == 2*time.Second }},
		{"arch alias", []string{"--arch", "aarch64"}, func(l *Lab) bool { return l.Matrix.Arch[0] == "arm64" }},
		{"cpus clips producers", []string{"--cpus", "1"}, func(l *Lab) bool { return len(l.Matrix.Producers) == 1 && l.Matrix.Producers[0] == 1 }},
		{"unset flags leave the lab", nil, func(l *Lab) bool { return l.Matrix.Boots == 3 && l.Matrix.Warmup.Duration == time.Second }},
		{"no controls", []string{"--no-controls"}, func(l *Lab) bool { return len(l.Matrix.JobBenchmarks()) == 1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lab := parseGood(t)
			f, err := parseFlags(t, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Apply(lab); err != nil {
				t.Fatal(err)
			}
			if !tc.check(lab) {
				t.Errorf("matrix %+v", lab.Matrix)
			}
		})
	}
}

// A layout's nodes give the guest's memory; --numa, which replaces the
// layout, keeps it.
func TestNUMAFlagKeepsLayoutMemory(t *testing.T) {
	lab, _, err := parse(t, good+"  numa_layout:\n    nodes:\n      - {cpus: 0, memory: 512M}\n      - {cpus: 1, memory: 768M}\n")
	if err != nil {
		t.Fatal(err)
	}
	if lab.Matrix.Memory != "" {
		t.Errorf("memory %q, want none: the layout's nodes give it", lab.Matrix.Memory)
	}
	f, err := parseFlags(t, "--numa", "1")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Apply(lab); err != nil {
		t.Fatal(err)
	}
	if lab.Matrix.Memory != "1280M" {
		t.Errorf("memory after --numa 1: %q, want 1280M", lab.Matrix.Memory)
	}
}

// Zero is a value, and a bad value is an error, never a default.
func TestFlagsReject(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // in the parse or the apply error
	}{
		{[]string{"--duration", "0"}, "duration 0s: want at least 100ms"},
		{[]string{"--boots", "0"}, "boots 0: want at least 1"},
		{[]string{"--producers", "1.5"}, `"1.5" is not a whole number`},
		{[]string{"--boots", "99999999999999999999"}, `"99999999999999999999" is too large: at most 2147483647`},
		{[]string{"--cpus", "2,99999999999999999999"}, `"99999999999999999999" is too large: at most 2147483647`},
		{[]string{"--boots", "2", "--boots", "3"}, "given twice"},
		{[]string{"--duration", "5"}, "not a duration"},
		{[]string{"--warmup", "-1s"}, "negative"},
		{[]string{"--arch", "x86_64,"}, "empty item"},
		{[]string{"--arch", "riscv64"}, `unknown architecture "riscv64"`},
		{[]string{"--memory", "8G"}, "memory 8G is more than this host's RAM (4G"},
		{[]string{"--duration", "1500ms"}, "duration 1.5s: lab measures whole seconds"},
		{[]string{"--boots", "100000"}, "this run would measure for"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			f, err := parseFlags(t, tc.args...)
			if err == nil {
				err = f.Apply(parseGood(t))
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// parseGood is the good lab with 3 boots and a 1 s warm-up: the values the
// flags tests override.
func parseGood(t *testing.T) *Lab {
	t.Helper()
	src := strings.Replace(strings.Replace(good, "boots: 4", "boots: 3", 1), "warmup: 2s", "warmup: 1s", 1)
	lab, _, err := parse(t, src)
	if err != nil {
		t.Fatal(err)
	}
	return lab
}
