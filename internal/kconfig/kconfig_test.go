package kconfig

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParseFragment(t *testing.T) {
	dir := t.TempDir()
	p := write(t, dir, "f.config", "# comment\nCONFIG_A=y\n\n# CONFIG_B is not set\nCONFIG_C=256\nCONFIG_D=\"x y\"\n")
	opts, err := ParseFragment(p)
	if err != nil {
		t.Fatal(err)
	}
	want := []Option{{"CONFIG_A", "y", p, 2}, {"CONFIG_B", "n", p, 4}, {"CONFIG_C", "256", p, 5}, {"CONFIG_D", "\"x y\"", p, 6}}
	if len(opts) != len(want) {
		t.Fatalf("got %v", opts)
	}
	for i := range want {
		if opts[i] != want[i] {
			t.Errorf("option %d = %+v, want %+v", i, opts[i], want[i])
		}
	}
	bad := write(t, dir, "bad.config", "CONFIG_A=y\nCONFIG_B\n")
	if _, err := ParseFragment(bad); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("want a line-2 error, got %v", err)
	}
}

func TestVerify(t *testing.T) {
	dir := t.TempDir()
	src := t.TempDir()
	write(t, src, "kernel/trace/Kconfig", "config FPROBE\n\tbool \"Kernel Function Probe\"\n\tdepends on HAVE_RETHOOK\n\tdepends on FUNCTION_TRACER\n\nconfig OTHER\n\tbool\n")
	write(t, src, "lib/Kconfig.debug", "if DEBUG_INFO\nendif\nmenuconfig RUNTIME_TESTING_MENU\n\tbool\nif RUNTIME_TESTING_MENU\nconfig SANITY\n\tdepends on KUNIT\nendif\n")
	common := write(t, dir, "common.config", "CONFIG_SMP=y\nCONFIG_FPROBE=y\n# CONFIG_SLUB_TINY is not set\nCONFIG_NR_CPUS=64\n")
	arch := write(t, dir, "arm64.config", "CONFIG_NR_CPUS=256\nCONFIG_NO_SUCH_THING=y\nCONFIG_SANITY=y\n")
	final := write(t, dir, ".config", "CONFIG_SMP=y\n# CONFIG_FPROBE is not set\nCONFIG_NR_CPUS=256\n")
	err := Verify(final, []string{common, arch}, src)
	var de *DroppedError
	if !errors.As(err, &de) {
		t.Fatalf("want DroppedError, got %v", err)
	}
	if len(de.Dropped) != 3 {
		t.Fatalf("dropped = %+v, want FPROBE, NO_SUCH_THING and SANITY", de.Dropped)
	}
	msg := err.Error()
	for _, want := range []string{
		common + ":2: CONFIG_FPROBE=y was requested but the final .config has it unset",
		"kernel/trace/Kconfig:1: depends on HAVE_RETHOOK, depends on FUNCTION_TRACER",
		arch + ":2: CONFIG_NO_SUCH_THING=y",
		"no such Kconfig symbol",
		"lib/Kconfig.debug:6: depends on KUNIT, inside if RUNTIME_TESTING_MENU",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	// A later fragment overrides an earlier one (NR_CPUS=256 wins), as in merge_config.sh.
	if strings.Contains(msg, "NR_CPUS") {
		t.Errorf("NR_CPUS reported although the last fragment's value is set:\n%s", msg)
	}
	ok := write(t, dir, "ok.config", "CONFIG_SMP=y\n# CONFIG_FPROBE is not set\n")
	if err := Verify(final, []string{ok}, src); err != nil {
		t.Errorf("satisfied fragment: %v", err)
	}
}
