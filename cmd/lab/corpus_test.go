package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"lab/internal/exitcode"
	"lab/internal/results"
)

// The corpus: bad inputs as a new user writes them (lab files, series
// folders, config fragments, flags, folders that are not lab runs), each run
// through the real command path. Each must fail with a clear message and
// the right exit code before anything heavy starts: no kernel source
// unpacked, no run folder made. --cache and --results point into a regular
// file (blocker), so a case that passed validation by mistake fails at its
// first heavy step, and the test says so.

// labFlagCode is the exit code of a lab the command-line flags made invalid
// (--duration 0, --memory 100T): spec returns a *spec.FlagError, a usage
// error.
const labFlagCode = int(exitcode.Usage)

// good is a valid lab of the corpus checkout (testdata/corpus/checkout).
const good = `name: corpus
series: ok
mode: apply
matrix:
  arch: [x86_64]
  cpus: [2]
  benchmarks: [uprobe-nop]
  producers: [1, 2]
  boots: 2
  duration: 2s
  warmup: 1s
claims:
  - benchmark: uprobe-nop
    producers: [2]
    direction: faster
`

// inMatrix is good with lines added at the end of its matrix.
func inMatrix(lines string) string { return with("  warmup: 1s\n", "  warmup: 1s\n"+lines) }

// empty stands for a lab file of 0 bytes.
const empty = "<0 bytes>"

// with is good with old replaced by new (old must be there).
func with(old, new string) string {
	if !strings.Contains(good, old) {
		panic("corpus: good lab has no " + old)
	}
	return strings.Replace(good, old, new, 1)
}

type corpusCase struct {
	class string
	name  string
	lab   string            // labs/t.yaml of the checkout ({ROOT} is its path); "" keeps good, empty makes it 0 bytes
	files map[string]string // more files of the checkout (content "/" makes a folder, "-" removes)
	args  string            // LAB: the lab file, RUN(x): testdata run folder x, OUT: a fresh output folder
	want  string            // in stderr (stdout when code is 0); {ROOT} is the checkout's path
	line  int               // > 0: the message is at labs/t.yaml:line
	code  int
}

func corpus() []corpusCase {
	const run = "run LAB"
	return []corpusCase{
		// The YAML itself.
		{"yaml", "empty file", empty, nil, run, "t.yaml: empty lab file: it needs at least name: and series:", 0, 1},
		{"yaml", "only comments", "# a lab, some day\n", nil, run, "empty lab file", 0, 1},
		{"yaml", "binary garbage", "\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x03\x00>\x00", nil, run, "not a text file (control character U+007F): a lab file is YAML text", 1, 1},
		{"yaml", "not UTF-8", with("name: corpus", "name: corpus\ndescription: caf\xe9"), nil, run, "not a text file (bytes that are not UTF-8)", 2, 1},
		{"yaml", "tab indent", with("  cpus: [2]", "\tcpus: [2]"), nil, run, "a tab in the indentation: YAML indents with spaces only; replace the tab with spaces", 6, 1},
		{"yaml", "second document", good + "---\nname: other\n", nil, run, "a second YAML document starts here (---): a lab file is one document", 16, 1},
		{"yaml", "scalar for a list", with("arch: [x86_64]", "arch: x86_64"), nil, run, "matrix.arch takes a list, even of one: write arch: [x86_64]", 5, 1},
		{"yaml", "list not closed", with("[x86_64]", "[x86_64"), nil, run, "a [ list is not closed", 5, 1},
		{"yaml", "indentation off", with("  cpus: [2]", "   cpus: [2]"), nil, run, "this line's indentation does not fit", 6, 1},
		{"yaml", "key indented under a value", with("  boots: 2\n  duration", "  boots: 2\n    duration"), nil, run, "this line is indented deeper than the key above it", 10, 1},
		{"yaml", "matrix key in the first column", with("  cpus: [2]\n", "cpus: [2]\n"), nil, run, "this line is indented less than the keys around it (lines 5 and 7), which ends their block", 6, 1},
		{"yaml", "matrix key at the top", inMatrix("numa: [2]\n"), nil, run, `unknown key "numa": it is a key of matrix: indent it under matrix:`, 12, 1},
		{"yaml", "clusters on x86_64", inMatrix("  clusters: 2\n"), nil, run, "x86_64: clusters=2: x86_64's machine has no clusters", 12, 1},
		{"yaml", "colon missing", with("mode: apply", "mode apply"), nil, run, "this line is not key: value: put a colon and a space after the key", 3, 1},
		{"yaml", "quote not closed", with("name: corpus", `name: "corpus`), nil, run, `a " is not closed: end the quoted text on the same line`, 1, 1},
		{"yaml", "key twice", with("  boots: 2", "  boots: 2\n  boots: 3"), nil, run, `key "boots" is given twice (first at line 9): keep one`, 10, 1},
		{"yaml", "unknown key", with("mode: apply", "mood: apply"), nil, run, `unknown key "mood" (known: claims, config, console_expect, description, matrix, mode, name, series, source, tools, versions, watch)`, 3, 1},
		{"yaml", "unknown key in matrix", with("  boots: 2", "  boot: 2"), nil, run, `unknown key "boot" in matrix (known: affinity, arch,`, 9, 1},
		{"yaml", "top level list", "- name: corpus\n  series: ok\n", nil, run, "a lab file is a set of keys (name: ..., series: ..., matrix: ...), not a list", 1, 1},
		{"yaml", "key without value", with("  boots: 2", "  boots:"), nil, run, "matrix.boots has no value: give one, or remove the line for the default", 9, 1},
		{"yaml", "matrix not indented", "name: corpus\nseries: ok\nmatrix:\narch: [x86_64]\n", nil, run, "matrix has nothing under it: indent its keys by two spaces under matrix:", 3, 1},
		{"yaml", "word for a number", with("boots: 2", "boots: two"), nil, run, `matrix.boots: "two" is not a whole number: write e.g. boots: 5`, 9, 1},
		{"yaml", "number too long for an int", with("boots: 2", "boots: 99999999999999999999"), nil, run, "matrix.boots: 99999999999999999999 is too large: at most 2147483647", 9, 1},
		{"yaml", "quoted number", with("boots: 2", `boots: "2"`), nil, run, `matrix.boots: "2" is quoted text: write the number without quotes`, 9, 1},
		{"yaml", "yes for a boolean", inMatrix("  clip_producers: yes\n"), nil, run, `matrix.clip_producers: "yes": write true or false`, 12, 1},
		{"yaml", "list for one value", with("series: ok", "series: [ok]"), nil, run, "series takes one value, not a list: write e.g. series: uprobe-srcu", 2, 1},
		{"yaml", "claims without dashes", with("  - benchmark: uprobe-nop\n    producers: [2]\n    direction: faster", "  benchmark: uprobe-nop"), nil, run, `claims takes a list, not a set of keys: start each item with "- "`, 13, 1},
		{"yaml", "CRLF line endings", strings.ReplaceAll(with("boots: 2", "boots: 0"), "\n", "\r\n"), nil, run, "boots 0: want at least 1", 9, 1},
		{"yaml", "alias without anchor", with("producers: [1, 2]", "producers: *p"), nil, run, "*p: no &p anchor above it", 8, 1},

		// Zero is a value, never "unset".
		{"zero", "duration 0s", with("duration: 2s", "duration: 0s"), nil, run, "duration 0s: want at least 100ms (one sample)", 10, 1},
		{"zero", "boots 0", with("boots: 2", "boots: 0"), nil, run, "boots 0: want at least 1", 9, 1},
		{"zero", "producers 1.5", with("producers: [1, 2]", "producers: [1.5]"), nil, run, "matrix.producers: 1.5 is not a whole number: write e.g. producers: [1, 2]", 8, 1},
		{"zero", "empty producers", with("producers: [1, 2]", "producers: []"), nil, run, "matrix.producers is an empty list: give at least one item", 8, 1},
		{"zero", "warmup 0 is honoured", with("boots: 2\n  duration: 2s\n  warmup: 1s", "boots: 20\n  duration: 1h\n  warmup: 0"), nil, run, "(1h + 0s warm-up)", 10, 1},
		{"zero", "half a second", with("duration: 2s", "duration: 2500ms"), nil, run, "duration 2.5s: lab measures whole seconds (one sample a second): write 2s or 3s", 10, 1},
		{"zero", "warmup below a second", with("warmup: 1s", "warmup: 500ms"), nil, run, "warmup 500ms: lab warms up whole seconds: write 0s or 1s", 11, 1},
		{"zero", "negative warmup", with("warmup: 1s", "warmup: -1s"), nil, run, "warmup -1s: want 0 (no warm-up) or more", 11, 1},
		{"zero", "empty mode", with("mode: apply", `mode: ""`), nil, run, `mode "": want "apply", "revert" or "auto"`, 3, 1},
		{"zero", "cpus 0", with("cpus: [2]", "cpus: [0]"), nil, run, "cpus 0: want 1 or more", 6, 1},
		// A count that must be 1 or more: the file and the flag alike.
		{"zero", "numa 0", inMatrix("  numa: [0]\n"), nil, run, "numa 0: want 1 or more nodes (1: no NUMA)", 12, 1},
		{"zero", "numa 0 among others", inMatrix("  numa: [1, 0]\n"), nil, run, "numa 0: want 1 or more nodes", 12, 1},
		{"zero", "sockets 0", inMatrix("  sockets: 0\n"), nil, run, "sockets 0: want 1 or more (leave sockets out and lab works it out from the vCPUs)", 12, 1},
		{"zero", "clusters 0", inMatrix("  clusters: 0\n"), nil, run, "clusters 0: want 1 or more", 12, 1},
		{"zero", "cores 0", inMatrix("  cores: 0\n"), nil, run, "cores 0: want 1 or more", 12, 1},
		{"zero", "threads 0", inMatrix("  threads: 0\n"), nil, run, "threads 0: want 1 or more", 12, 1},
		{"zero", "threads -1", inMatrix("  threads: -1\n"), nil, run, "threads -1: want 1 or more", 12, 1},
		{"zero", "producers 0", with("producers: [1, 2]", "producers: [0, 1]"), nil, run, "producers 0: want at least 1", 8, 1},
		{"zero", "maxactive 0 is the kernel's default", with("boots: 2\n  duration: 2s\n  warmup: 1s", "boots: 20\n  duration: 1h\n  warmup: 0\n  maxactive: 0"), nil, run, "(1h + 0s warm-up)", 10, 1},

		// Limits: what no host can run, or would run for days.
		{"limits", "memory above the host's", inMatrix("  memory: 100T\n"), nil, run, "memory 100T is more than this host's RAM", 12, 1},
		{"limits", "memory beyond any machine", inMatrix("  memory: 99999999999T\n"), nil, run, "more than any machine has", 12, 1},
		{"limits", "duration of days", with("duration: 2s", "duration: 5h"), nil, run, "this run would measure for 5d (2 boots × 2 variants × 6 benchmark runs per boot × (5h + 1s warm-up)): lab runs at most 24h; with the rest as it is, duration: 59m59s would fit", 10, 1},
		{"limits", "boots by the thousand", with("boots: 2", "boots: 100000"), nil, run, "boots: 2400 would fit", 9, 1},
		{"limits", "cpulist 0-99999999", inMatrix("  numa_layout:\n    nodes:\n      - {cpus: 0-99999999, memory: 512M}\n      - {cpus: 1, memory: 512M}\n"), nil, run, `numa node 0: cpu list "0-99999999": CPU 99999999 is past the last CPU, 1: write CPUs within 0-1`, 14, 1},
		{"limits", "vCPUs above the arch's", with("cpus: [2]", "cpus: [100000]"), nil, run, "100000 vCPUs: x86_64 guests boot at most 255 here", 6, 1},
		{"limits", "NUMA nodes that do not divide", inMatrix("  numa: [3]\n"), nil, run, "2 vCPUs do not split evenly over 3 NUMA nodes: use 1 or 2 nodes, or 3 vCPUs", 12, 1},
		{"limits", "producers above vCPUs", with("producers: [1, 2]", "producers: [1, 4]"), nil, run, "producers 4 is more than the 2 vCPUs of the guest (set clip_producers: true to drop such counts)", 8, 1},
		{"limits", "a list item twice", with("producers: [1, 2]", "producers: [1, 2, 2]"), nil, run, "producers lists 2 twice: give each once", 8, 1},

		// Names become paths.
		{"names", "name climbs out", with("name: corpus", "name: ../x"), nil, run, `name "../x": a name, not a path: write it without /`, 1, 1},
		{"names", "name is a path", with("name: corpus", "name: a/b"), nil, run, `name "a/b": a name, not a path`, 1, 1},
		{"names", "hidden name", with("name: corpus", "name: .corpus"), nil, run, `name ".corpus": a name cannot start with a dot`, 1, 1},
		{"names", "name with a blank", with("name: corpus", "name: my lab"), nil, run, `name "my lab": use only letters, digits, '.', '_' and '-'`, 1, 1},
		{"names", "series path to nothing", with("series: ok", "series: ../../etc"), nil, run, `series "../../etc": no such file or folder: `, 2, 1},
		{"names", "fragment climbs out", good + "config: [../../etc/passwd]\n", nil, run, `config fragment "../../etc/passwd": a name, not a path`, 16, 1},
		{"names", "no name", strings.Replace(good, "name: corpus\n", "", 1), nil, run, `missing key "name" (write e.g. name: uprobe-srcu)`, 1, 1},

		// Claims the matrix never measures.
		{"claims", "benchmark not run", with("  - benchmark: uprobe-nop", "  - benchmark: uretprobe-nop"), nil, run, "claim: benchmark uretprobe-nop is not in the matrix (benchmarks: uprobe-nop, usermode-count, syscall-count): add it there, or fix the claim", 13, 1},
		{"claims", "producer count not run", with("    producers: [2]", "    producers: [2, 8]"), nil, run, "claim: producers 8 is not in the matrix (producers: [1, 2]): add it there, or fix the claim", 14, 1},
		{"claims", "scaling without 1 producer", with("producers: [1, 2]", "producers: [2]\n  clip_producers: true") + "    scaling: true\n", nil, run, "claim: scaling compares against 1 producer, which the matrix does not run (producers: [2]): add 1 there", 17, 1},
		{"claims", "unknown benchmark", with("  - benchmark: uprobe-nop", "  - benchmark: uprobe-nope"), nil, run, `claim: unknown benchmark "uprobe-nope"`, 13, 1},
		{"claims", "direction sideways", with("direction: faster", "direction: sideways"), nil, run, `claim: direction "sideways": want faster or slower`, 15, 1},

		// The series folder.
		{"series", "no folder", with("series: ok", "series: nope"), nil, run, `series "nope": no folder {ROOT}/patches/nope (a name is a folder under patches/, which holds ok)`, 2, 1},
		{"series", "a path to a name", with("series: ok", "series: ../ok"), nil, run, `series "../ok": no such file or folder: {ROOT}/ok (a relative path is taken from the lab file's folder, {ROOT}/labs); did you mean series: ok, the folder patches/ok?`, 2, 1},
		{"series", "empty folder", "", map[string]string{"patches/ok/0001-corpus-a-valid-patch.patch": "-"}, run, "has no patches: put the series there with git format-patch -o", 2, 1},
		{"series", "a README", "", map[string]string{"patches/ok/README": "How to apply.\n"}, run, "patches/ok/README: not a patch file: a series folder holds only patch files", 2, 1},
		{"series", "a .orig left by patch", "", map[string]string{"patches/ok/0001-corpus-a-valid-patch.patch.orig": "x\n"}, run, "0001-corpus-a-valid-patch.patch.orig: not a patch file", 2, 1},
		{"series", "a patch saved as .txt", "", map[string]string{"patches/ok/0002-x.txt": "From 1234 Mon Sep 17 00:00:00 2001\nSubject: [PATCH 2/2] x\n\n--- a/x\n+++ b/x\n"}, run, "patches/ok/0002-x.txt: holds a patch mail, but lab reads only files named .patch, .mbox, .mbx, .diff, .eml in a series folder: rename it to 0002-x.patch", 2, 1},
		{"series", "a patch mail without extension", "", map[string]string{"patches/ok/0002-x": "Subject: [PATCH 2/2] x\n\n--- a/x\n+++ b/x\n"}, run, "rename it to 0002-x.patch", 2, 1},
		{"series", "a sub-folder", "", map[string]string{"patches/ok/v2": "/"}, run, "patches/ok/v2: not a patch file", 2, 1},
		{"series", "no Subject", "", map[string]string{"patches/ok/0002-x.diff": "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"}, run, "0002-x.diff: no Subject: header: not a mail; write patches with git format-patch", 2, 1},
		{"series", "no diff", "", map[string]string{"patches/ok/0002-x.patch": "From: A <a@example.org>\nSubject: [PATCH 2/2] corpus: words only\n\nNo diff here.\n"}, run, `0002-x.patch: "corpus: words only" has no diff: nothing to apply`, 2, 1},
		{"series", "empty patch", "", map[string]string{"patches/ok/0002-x.patch": ""}, run, "0002-x.patch: empty file: not a patch", 2, 1},
		{"series", "binary patch file", "", map[string]string{"patches/ok/0002-x.patch": "\x00\x01\x02"}, run, "0002-x.patch: not a text file", 2, 1},
		{"series", "an mbox of two mails", "", map[string]string{"patches/ok/series.mbox": strings.Repeat("From 1234 Mon Sep 17 00:00:00 2001\nSubject: [PATCH] x\n\n--- a/x\n+++ b/x\n", 2)}, run, "series.mbox: holds 2 mails: lab applies one patch per file; split it with git mailsplit", 2, 1},
		{"series", "series is a file", with("series: ok", "series: okfile"), map[string]string{"patches/okfile": "x\n"}, run, "is a file: a series is a folder of patches", 2, 1},

		// Config fragments.
		{"fragment", "option without value", "", map[string]string{"kernel-config/common.config": "CONFIG_SMP=y\nCONFIG_KPROBES\n"}, run, `common.config:2: "CONFIG_KPROBES" has no =`, 0, 1},
		{"fragment", "yes for y", "", map[string]string{"kernel-config/common.config": "CONFIG_SMP=yes\n"}, run, `common.config:1: CONFIG_SMP=yes: "yes" is not a Kconfig value: write CONFIG_NAME=y, =m, =n, ="text", =123 or =0x1f`, 0, 1},
		{"fragment", "not a config line", "", map[string]string{"kernel-config/common.config": "SMP=y\n"}, run, `common.config:1: "SMP=y" is not a config line`, 0, 1},
		{"fragment", "blanks around =", "", map[string]string{"kernel-config/common.config": "CONFIG_SMP = y\n"}, run, `common.config:1: "CONFIG_SMP " is not an option name`, 0, 1},
		{"fragment", "CRLF fragment", "", map[string]string{"kernel-config/common.config": "CONFIG_SMP=y\r\n"}, run, "common.config:1: Windows (CRLF) line ending", 0, 1},
		{"fragment", "option twice", "", map[string]string{"kernel-config/common.config": "CONFIG_SMP=y\nCONFIG_SMP=n\n"}, run, "common.config:2: CONFIG_SMP is already set at line 1: keep one of the two lines", 0, 1},
		{"fragment", "arch fragment", "", map[string]string{"kernel-config/x86_64.config": "  CONFIG_SERIAL_8250=y\n"}, run, "the x86_64 config fragment: ", 0, 1},
		{"fragment", "missing fragment", good + "config: [common.config, debug.config]\n", nil, run, `config fragment "debug.config": no file`, 16, 1},
		{"fragment", "unclosed string", "", map[string]string{"kernel-config/common.config": "CONFIG_CMDLINE=\"console=ttyS0\n"}, run, `is not a Kconfig value`, 0, 1},

		// Flags, on the good lab.
		{"flags", "flag twice", "", nil, "run LAB --boots 2 --boots 3", `invalid value "3" for flag -boots: given twice: give it once`, 0, 2},
		{"flags", "--duration 0", "", nil, "run LAB --duration 0", "with the command-line flags: duration 0s: want at least 100ms (one sample)", 0, labFlagCode},
		{"flags", "-j -4", "", nil, "run LAB -j -4", "-j -4: want 1 or more build jobs", 0, 2},
		{"flags", "--boots 99999999999999999999", "", nil, "run LAB --boots 99999999999999999999", `invalid value "99999999999999999999" for flag -boots: "99999999999999999999" is too large: at most 2147483647`, 0, 2},
		{"flags", "--producers 1.5", "", nil, "run LAB --producers 1.5", `invalid value "1.5" for flag -producers: "1.5" is not a whole number`, 0, 2},
		{"flags", "--accel hvf", "", nil, "run LAB --accel hvf", `--accel "hvf": want kvm or tcg`, 0, 2},
		{"flags", "--only both", "", nil, "run LAB --only both", "--only:", 0, 2},
		{"flags", "--cpus 0-99999999", "", nil, "run LAB --cpus 0-99999999", `invalid value "0-99999999" for flag -cpus: "0-99999999" is not a whole number`, 0, 2},
		{"flags", "unknown flag", "", nil, "run LAB --frobnicate", "flag provided but not defined: -frobnicate", 0, 2},
		{"flags", "bare duration", "", nil, "run LAB --duration 5", "not a duration: write e.g. 5s or 500ms", 0, 2},
		{"flags", "negative warmup", "", nil, "run LAB --warmup -1s", `invalid value "-1s" for flag -warmup: negative`, 0, 2},
		{"flags", "empty arch item", "", nil, "run LAB --arch x86_64,", `an empty item in "x86_64,"`, 0, 2},
		{"flags", "boolean flag value", "", nil, "run LAB --no-controls=maybe", "want true or false", 0, 2},
		{"flags", "-j 1.5", "", nil, "run LAB -j 1.5", `"1.5" is not a whole number`, 0, 2},
		{"flags", "--memory 100T", "", nil, "run LAB --memory 100T", "with the command-line flags: memory 100T is more than this host's RAM", 0, labFlagCode},
		{"flags", "--boots 0", "", nil, "run LAB --boots 0", "with the command-line flags: boots 0: want at least 1", 0, labFlagCode},
		{"flags", "--arch riscv64", "", nil, "run LAB --arch riscv64", `unknown architecture "riscv64"`, 0, labFlagCode},
		{"flags", "--benchmarks typo", "", nil, "run LAB --benchmarks uprobe-nope", `unknown benchmark "uprobe-nope"`, 0, labFlagCode},
		{"flags", "--producers above --cpus", "", nil, "run LAB --producers 1,4", "producers 4 is more than the 2 vCPUs", 0, labFlagCode},
		{"flags", "--measure fast", "", nil, "run LAB --measure fast", `measure "fast": want auto, wall or icount`, 0, labFlagCode},
		{"flags", "--duration 1500ms", "", nil, "run LAB --duration 1500ms", "duration 1.5s: lab measures whole seconds", 0, labFlagCode},
		{"flags", "--boots for days", "", nil, "run LAB --boots 100000", "this run would measure for", 0, labFlagCode},
		{"flags", "--numa 3", "", nil, "run LAB --numa 3", "do not split evenly over 3 NUMA nodes", 0, labFlagCode},
		{"flags", "--numa 0", "", nil, "run LAB --numa 0", "with the command-line flags: numa 0: want 1 or more nodes (1: no NUMA)", 0, labFlagCode},
		{"flags", "--sockets 0", "", nil, "run LAB --sockets 0", "with the command-line flags: sockets 0: want 1 or more", 0, labFlagCode},
		{"flags", "--clusters 0", "", nil, "run LAB --clusters 0", "with the command-line flags: clusters 0: want 1 or more", 0, labFlagCode},
		{"flags", "--cores 0", "", nil, "run LAB --cores 0", "with the command-line flags: cores 0: want 1 or more", 0, labFlagCode},
		{"flags", "--threads 0", "", nil, "run LAB --threads 0", "with the command-line flags: threads 0: want 1 or more", 0, labFlagCode},
		{"flags", "--cpus 0", "", nil, "run LAB --cpus 0", "with the command-line flags: cpus 0: want 1 or more", 0, labFlagCode},
		{"flags", "--producers 0", "", nil, "run LAB --producers 0", "with the command-line flags: producers 0: want at least 1", 0, labFlagCode},
		{"flags", "no lab file", "", nil, "run", "run takes one lab file, got 0", 0, 2},
		{"flags", "two lab files", "", nil, "run LAB LAB", "run takes one lab file, got 2", 0, 2},
		{"flags", "lab file missing", "", nil, "run labs/nope.yaml", "no such file or directory", 0, 1},
		{"flags", "unknown command", "", nil, "rnu LAB", `unknown command "rnu"`, 0, 2},
		{"flags", "bisect of a bad lab", with("boots: 2", "boots: 0"), nil, "bisect LAB", "boots 0: want at least 1", 9, 1},
		{"flags", "bisect --only", "", nil, "bisect LAB --only patched", "flag provided but not defined: -only", 0, 2},
		// Under git bisect run, 1..127 (but 125) would blame the commit.
		{"flags", "bisect --run without ends", "", nil, "bisect LAB --run --benchmark uprobe-nop", "--run judges the git tree's HEAD for git bisect run", 0, 128},
		{"flags", "bisect --run, mistyped flag", "", nil, "bisect LAB --run --benchmrk uprobe-nop", "flag provided but not defined", 0, 128},
		{"flags", "bisect --run, two labs", "", nil, "bisect LAB LAB --run", "bisect takes one lab file, got 2", 0, 128},

		// The kernel source: found before a run folder is made, in words.
		{"source", "git folder missing", good + "source:\n  git: {ROOT}/linux\n  base: v6.12\n", nil, run, "/linux: no such folder: give the folder of a git clone of Linux", 17, 1},
		{"source", "git folder is no repository", good + "source:\n  git: {ROOT}/linux\n  base: v6.12\n", map[string]string{"linux": "/"}, run, "/linux is not a git repository", 17, 1},
		{"source", "git path is a file", good + "source:\n  git: {ROOT}/linux\n  base: v6.12\n", map[string]string{"linux": "Linux\n"}, run, "/linux is a file, not a git tree", 17, 1},
		{"source", "git base missing", good + "source:\n  git: {ROOT}/linux\n  base: v6.12\n", emptyRepo("linux"), run, `source.base "v6.12" is not a commit of`, 18, 1},
		{"source", "tarball missing", good + "source:\n  tarball: {ROOT}/linux.tar.xz\n", nil, run, "/linux.tar.xz: no such file", 17, 1},
		{"source", "tarball is a text file", good + "source:\n  tarball: {ROOT}/linux.tar.xz\n", map[string]string{"linux.tar.xz": "see https://kernel.org\n"}, run, "/linux.tar.xz: a text file, not a tarball", 17, 1},
		{"source", "tarball is empty", good + "source:\n  tarball: {ROOT}/linux.tar.xz\n", map[string]string{"linux.tar.xz": ""}, run, "/linux.tar.xz: an empty file, not a tarball", 17, 1},
		{"source", "tarball is a folder", good + "source:\n  tarball: {ROOT}/linux\n", map[string]string{"linux": "/"}, run, "/linux: a folder, not a tarball", 17, 1},
		{"source", "tarball is binary", good + "source:\n  tarball: {ROOT}/linux.tar.xz\n", map[string]string{"linux.tar.xz": "\x7fELF\x02\x01\x01\x00"}, run, "neither a compressed nor a plain tar archive", 17, 1},
		{"source", "build of a missing git folder", good + "source:\n  git: {ROOT}/linux\n  base: v6.12\n", nil, "build LAB", "/linux: no such folder", 17, 1},
		{"source", "bisect of a missing git folder", good + "source:\n  git: {ROOT}/linux\n  base: v6.12\n", nil, "bisect LAB", "/linux: no such folder", 17, 1},
		{"source", "bisect of a git base missing", good + "source:\n  git: {ROOT}/linux\n  base: v6.12\n", emptyRepo("linux"), "bisect LAB", `source.base "v6.12" is not a commit of`, 18, 1},
		{"source", "bisect of a text tarball", good + "source:\n  tarball: {ROOT}/linux.tar.xz\n", map[string]string{"linux.tar.xz": "not a tarball\n"}, "bisect LAB", "a text file, not a tarball", 17, 1},

		// Folders that are not lab runs.
		{"runs", "no results.json", "", nil, "report RUN(no-results-json) -out OUT", "no-results-json: not a lab run folder (no results.json: no such file or directory)", 0, 1},
		{"runs", "another tool's JSON", "", nil, "report RUN(other-tool) -out OUT", `not a lab results file: it has no "lab" field (another tool's JSON?)`, 0, 1},
		{"runs", "truncated results.json", "", nil, "report RUN(truncated) -out OUT", "cut off after", 0, 1},
		{"runs", "rejected before its first boot", "", nil, "report RUN(no-boots) -out OUT", "run 20260101-000000 of lab corpus has no boots: it stopped before its first boot", 0, 1},
		{"runs", "negative rate", "", nil, "report RUN(negative-rate) -out OUT", "boot 1 (x86_64, baseline): uprobe-nop at 1 producers has a sample of 1000000000 ns at rate -1000: not figures a lab run writes", 0, 1},
		{"runs", "zero interval", "", nil, "table RUN(zero-interval)", "has a sample of 0 ns", 0, 1},
		{"runs", "negative hits", "", nil, "table RUN(negative-hits)", "not a lab results file: boots.results.samples.hits holds a number -1000, which lab never writes there", 0, 1},
		{"runs", "NaN rate", "", nil, "table RUN(nan-rate)", "boots.results.samples.rate holds a string", 0, 1},
		{"runs", "newer schema", "", nil, "table RUN(newer-schema)", "results schema 99; this lab reads " + fmt.Sprint(results.Schema) + " and older", 0, 1},
		{"runs", "empty results.json", "", nil, "table RUN(empty)", "empty file: not a lab results file", 0, 1},
		{"runs", "YAML, not JSON", "", nil, "table RUN(yaml-not-json)", "not JSON (at byte 1", 0, 1},
		{"runs", "boots with nothing", "", nil, "table RUN(nothing-measured)", "none of the 2 boots of run 20260101-000000 has results or a failure", 0, 1},
		{"runs", "no lab name", "", nil, "table RUN(no-lab-name)", `it has no "lab" field`, 0, 1},
		{"runs", "compare with a non-run", "", nil, "compare RUN(example-srcu) RUN(other-tool) -out OUT", `it has no "lab" field`, 0, 1},
		{"runs", "compare of two labs", "", nil, "compare RUN(example-srcu-bench) RUN(example-lazy) -out OUT", "uprobe-srcu vs uprobe-lazy-buffer · x86_64", 0, 0},
		{"runs", "compare of two measuring methods", "", nil, "compare RUN(example-srcu) RUN(example-lazy) -out OUT", "were measured by different agent methods (producer-program; goroutine producers", 0, 1},
		// Files that parse but that no lab run writes.
		{"runs", "every sample zero", "", nil, "report RUN(all-zero) -out OUT", "all-zero/results.json: every sample of the 2 baseline boots that delivered is zero", 0, 1},
		{"runs", "every patched sample zero", "", nil, "table RUN(patched-zero)", "every sample of the 2 patched boots that delivered is zero", 0, 1},
		{"runs", "rates without hits", "", nil, "table RUN(rates-without-hits)", "boot 1 (x86_64, baseline): uprobe-nop at 1 producers has a sample of 0 hits at rate 1000", 0, 1},
		{"runs", "results without samples", "", nil, "table RUN(no-samples)", "no-samples/results.json: boot 1 (x86_64, baseline): uprobe-nop at 1 producers ran but has no samples", 0, 1},
		{"runs", "a variant no run has", "", nil, "table RUN(variant-foo)", `variant-foo/results.json: boot 2 is of variant "foo": this run boots baseline, patched only`, 0, 1},
		{"runs", "patched boots of a --only baseline run", "", nil, "table RUN(patched-in-baseline-run)", "boot 2 is of patched, which this run does not have (it booted baseline only: --only baseline)", 0, 1},
		{"runs", "a boot index twice", "", nil, "report RUN(index-twice) -out OUT", "index-twice/results.json: boot 2 is there twice", 0, 1},
		{"runs", "a result without a benchmark", "", nil, "table RUN(no-benchmark)", "boot 1 (x86_64, baseline): a result names no benchmark", 0, 1},
		{"runs", "a list, not a run", "", nil, "table RUN(top-level-array)", "not a lab results file: the file is an array, not an object of lab's fields", 0, 1},
		{"runs", "boots as an object", "", nil, "table RUN(boots-object)", "not a lab results file: boots holds an object, which lab never writes there", 0, 1},
		{"runs", "compare with all-zero samples", "", nil, "compare RUN(example-srcu) RUN(all-zero) -out OUT", "every sample of the 2 baseline boots that delivered is zero", 0, 1},
		{"runs", "compare with a boot index twice", "", nil, "compare RUN(index-twice) RUN(example-srcu) -out OUT", "boot 2 is there twice", 0, 1},
		{"runs", "report of two folders", "", nil, "report RUN(negative-rate) RUN(no-boots)", "report takes one run directory, got 2", 0, 2},
		{"runs", "report --lab of a bad lab", with("boots: 2", "boots: 0"), nil, "report RUN(example-srcu) --lab LAB -out OUT", "boots 0: want at least 1", 9, 1},
	}
}

// emptyRepo makes dir a git repository without a commit (so without the
// base ref a lab names), from files alone: the corpus runs no git.
func emptyRepo(dir string) map[string]string {
	return map[string]string{
		dir + "/.git/HEAD": "ref: refs/heads/main\n", dir + "/.git/objects": "/", dir + "/.git/refs/heads": "/",
		dir + "/.git/config": "[core]\n\trepositoryformatversion = 0\n\tbare = false\n",
	}
}

// examples are committed runs the corpus uses as valid ones.
var examples = map[string]string{
	"example-srcu": "../../results/examples/uprobe-srcu/x86_64-1cpu-icount",
	"example-lazy": "../../results/examples/uprobe-lazy-buffer/x86_64-1cpu-icount",
	// measured by the same (older) agent method as example-lazy
	"example-srcu-bench": "../../results/examples/uprobe-srcu/x86_64-1cpu-icount-bench",
}

// messageNoise is what a message must not show: Go and YAML-library types.
var messageNoise = regexp.MustCompile(`\[\]string|\[\]int|spec\.[A-Z]|!!\w+|cannot unmarshal|struct field|interface \{\}|Go value|fork/exec|exit status|%!|<nil>|\ba [aeiou]| {2}holds|error parsing|parsing time`)

func TestCorpus(t *testing.T) {
	cases := corpus()
	if len(cases) < 60 {
		t.Fatalf("the corpus has %d cases; keep at least 60", len(cases))
	}
	seen := map[string]bool{}
	for _, tc := range cases {
		if seen[tc.class+"/"+tc.name] {
			t.Fatalf("two cases named %s/%s", tc.class, tc.name)
		}
		seen[tc.class+"/"+tc.name] = true
		t.Run(tc.class+"/"+tc.name, func(t *testing.T) {
			t.Parallel()
			runCase(t, tc)
		})
	}
}

func runCase(t *testing.T, tc corpusCase) {
	tmp := t.TempDir()
	root := filepath.Join(tmp, "checkout")
	copyTree(t, "testdata/corpus/checkout", root)
	lab := tc.lab
	switch lab {
	case "":
		lab = good
	case empty:
		lab = ""
	}
	lab = strings.ReplaceAll(lab, "{ROOT}", root) // a path in the checkout (source.git)
	writeFile(t, filepath.Join(root, "labs", "t.yaml"), lab)
	for name, body := range tc.files {
		p := filepath.Join(root, name)
		switch body {
		case "-":
			os.Remove(p)
		case "/":
			os.MkdirAll(p, 0o755)
		default:
			writeFile(t, p, body)
		}
	}
	// Anything heavy needs --cache or --results: both point into a file.
	blocker := filepath.Join(tmp, "blocker")
	writeFile(t, blocker, "not a folder: a heavy step started\n")
	out := filepath.Join(tmp, "out")

	args := expandArgs(t, tc.args, filepath.Join(root, "labs", "t.yaml"), out)
	if args[0] == "run" || args[0] == "bisect" {
		args = append(args, "--cache", filepath.Join(blocker, "cache"), "--results", filepath.Join(blocker, "results"))
	}
	var stdout, stderr strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	code := runMain(ctx, args, &stdout, &stderr)
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("took %v: validation must be quick", took)
	}
	msg := stderr.String()
	if tc.code == 0 {
		msg = stdout.String()
	}
	if strings.Contains(msg, blocker) || strings.Contains(msg, "missing tools") {
		t.Fatalf("PASSED VALIDATION: lab %s went on to a heavy step (exit %d):\n%s", tc.args, code, msg)
	}
	if code != tc.code {
		t.Errorf("exit %d, want %d; stderr:\n%s", code, tc.code, stderr.String())
	}
	if want := strings.ReplaceAll(tc.want, "{ROOT}", root); !strings.Contains(msg, want) { // a message naming an absolute path
		t.Errorf("output does not say %q:\n%s", tc.want, msg)
	}
	if tc.line > 0 && !strings.Contains(msg, filepath.Join(root, "labs", "t.yaml")+":"+strconv.Itoa(tc.line)+": ") {
		t.Errorf("message not at labs/t.yaml:%d:\n%s", tc.line, msg)
	}
	if tc.code == int(exitcode.Failed) {
		if lines := strings.Count(strings.TrimSpace(msg), "\n"); lines > 0 {
			t.Errorf("message is %d lines, want one:\n%s", lines+1, msg)
		}
	}
	if m := messageNoise.FindString(strings.ReplaceAll(msg, "(YAML: ", "")); m != "" {
		t.Errorf("message shows %q, a Go or YAML-library word:\n%s", m, msg)
	}
	nothingHeavy(t, tmp, blocker, root, out, tc.code == 0)
}

// nothingHeavy checks that the case left no trace of a heavy step: the
// blocker is still the file it was, the checkout has no results folder, and
// the output folder exists only when the command succeeded.
func nothingHeavy(t *testing.T, tmp, blocker, root, out string, ok bool) {
	t.Helper()
	if data, err := os.ReadFile(blocker); err != nil || !strings.HasPrefix(string(data), "not a folder") {
		t.Errorf("the blocker file changed (%v): a heavy step ran", err)
	}
	for _, p := range []string{filepath.Join(root, "results"), filepath.Join(root, "src")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s was made: a heavy step ran", p)
		}
	}
	if _, err := os.Stat(out); (err == nil) != ok {
		t.Errorf("output folder %s: exists %v, want %v", out, err == nil, ok)
	}
	ents, _ := os.ReadDir(tmp)
	for _, e := range ents {
		if n := e.Name(); n != "checkout" && n != "blocker" && n != "out" {
			t.Errorf("%s was made in the test folder", n)
		}
	}
}

// expandArgs makes the command line: LAB is the lab file, RUN(x) the
// testdata run folder x (or a committed example), OUT the output folder.
func expandArgs(t *testing.T, line, lab, out string) []string {
	var args []string
	for _, a := range strings.Fields(line) {
		switch {
		case a == "LAB":
			a = lab
		case a == "OUT":
			a = out
		case strings.HasPrefix(a, "RUN("):
			name := strings.TrimSuffix(strings.TrimPrefix(a, "RUN("), ")")
			a = filepath.Join("testdata", "corpus", "runs", name)
			if ex, ok := examples[name]; ok {
				a = ex
			}
			if _, err := os.Stat(a); err != nil {
				t.Fatalf("no run folder %s", a)
			}
		}
		args = append(args, a)
	}
	return args
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, p, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}
