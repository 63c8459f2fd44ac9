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
}

// Every line of a fragment is an option, a comment or blank; anything else
// is an error at fragment:line that says what to write.
func TestParseFragmentRejects(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		line string
		want string
	}{
		{"CONFIG_B", `"CONFIG_B" has no =`},
		{"CONFIG_B=", `"" is not a Kconfig value`},
		{"CONFIG_B=yes", `"yes" is not a Kconfig value`},
		{"CONFIG_B=y # on", `"y # on" is not a Kconfig value`},
		{"CONFIG_B = y", `"CONFIG_B " is not an option name`},
		{"CONFIG_B=\"open", `is not a Kconfig value`},
		{"CONFIG_B=\"a\" b", `is not a Kconfig value`},
		{"CONFIG_B=0xZZ", `"0xZZ" is not a Kconfig value`},
		{"CONFIG_B-C=y", `"CONFIG_B-C" is not an option name`},
		{"CONFIG_=y", `"CONFIG_" is not an option name`},
		{"  CONFIG_B=y", "starts with blanks"},
		{"B=y", `"B=y" is not a config line`},
		{"set CONFIG_B=y", "is not a config line"},
		{"CONFIG_B=y\r", "CRLF"},
		{"# CONFIG_B-C is not set", `"CONFIG_B-C" is not an option name`},
		{"CONFIG_A=m", "CONFIG_A is already set at line 1"},
	} {
		p := write(t, dir, "bad.config", "CONFIG_A=y\n"+tc.line+"\n")
		_, err := ParseFragment(p)
		if err == nil || !strings.HasPrefix(err.Error(), p+":2: ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want %s:2: ...%s", tc.line, err, p, tc.want)
		}
	}
	for _, good := range []string{"CONFIG_B=n", "CONFIG_B=-3", "CONFIG_B=0x1f", `CONFIG_B=""`, `CONFIG_B="a \"b\" \\"`, "#CONFIG_B=y", "\t", "# CONFIG_B is not set"} {
		if _, err := ParseFragment(write(t, dir, "good.config", "CONFIG_A=y\n"+good+"\n")); err != nil {
			t.Errorf("%q: %v", good, err)
		}
	}
}

// CheckSymbols names each fragment option no Kconfig file defines, with its
// line and the symbol a typo probably meant.
func TestCheckSymbols(t *testing.T) {
	src := t.TempDir()
	write(t, src, "Kconfig", "source \"kernel/Kconfig\"\nconfig SMP\n\tbool \"SMP\"\n")
	write(t, src, "kernel/trace/Kconfig", "menuconfig FTRACE\n\tbool\nif FTRACE\n  config FPROBE\n\tbool\nendif\n")
	write(t, src, "lib/Kconfig.debug", "config KUNIT\n\ttristate\n")
	write(t, src, ".git/Kconfig", "config HIDDEN\n")
	write(t, src, "kernel/Makefile", "config NOT_KCONFIG\n")
	dir := t.TempDir()
	good := write(t, dir, "good.config", "CONFIG_SMP=y\nCONFIG_FTRACE=y\nCONFIG_FPROBE=y\n# CONFIG_KUNIT is not set\n")
	if err := CheckSymbols(src, []string{good}); err != nil {
		t.Fatal(err)
	}
	bad := write(t, dir, "bad.config", "CONFIG_SMP=y\nCONFIG_FPROBEE=y\nCONFIG_HIDDEN=y\n# CONFIG_NOT_KCONFIG is not set\n")
	err := CheckSymbols(src, []string{good, bad})
	var ue *UnknownError
	if !errors.As(err, &ue) || len(ue.Unknown) != 3 {
		t.Fatalf("want 3 unknown options, got %v", err)
	}
	for _, want := range []string{
		bad + `:2: CONFIG_FPROBEE: no "config FPROBEE" in any Kconfig file; did you mean CONFIG_FPROBE?`,
		bad + `:3: CONFIG_HIDDEN:`,
		bad + `:4: CONFIG_NOT_KCONFIG: no "config NOT_KCONFIG" in any Kconfig file; remove the line`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if err := CheckSymbols(t.TempDir(), []string{good}); err == nil || !strings.Contains(err.Error(), "not a kernel source tree") {
		t.Errorf("empty tree: %v", err)
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
