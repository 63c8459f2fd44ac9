package spec

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// goTypes are the Go and YAML-library words a message must not show.
var goTypes = regexp.MustCompile(`\[\]string|\[\]int|spec\.|!!\w+|unmarshal|struct field|interface \{\}|reflect|%!|<nil>|\ba [aeiou]|error parsing|parsing time|Go `)

// Every bad lab file gets one line at file:line that says what to write.
func TestRejectsOneLine(t *testing.T) {
	const head = "name: t\nseries: s1\n"
	for _, tc := range []struct {
		src  string
		line int // 0: no line (the whole file)
		want string
	}{
		{"", 0, "empty lab file: it needs at least name: and series:"},
		{"# only a comment\n", 0, "empty lab file"},
		{"\x7fELF\x02\x01\x01\x00", 1, "not a text file (control character U+007F)"},
		{head + "description: \xff\xfe\n", 3, "not a text file (bytes that are not UTF-8)"},
		{head + "matrix:\n\tarch: [x86_64]\n", 4, "a tab in the indentation: YAML indents with spaces only"},
		{head + "matrix:\n  \tarch: [x86_64]\n", 4, "a tab in the indentation"},
		{head + "description: |\n  one\n  \ttabbed text\n", 0, ""},
		{head + "matrix:\n  arch: x86_64\n", 4, "matrix.arch takes a list, even of one: write arch: [x86_64]"},
		{head + "---\nname: u\n", 3, "a second YAML document starts here (---)"},
		{"---\n" + head, 0, ""},
		{head + "matrix:\n  producers: [1.5]\n", 4, "matrix.producers: 1.5 is not a whole number: write e.g. producers: [1, 2]"},
		{head + "matrix:\n  producers: 1\n", 4, "write producers: [1]"},
		{head + "matrix:\n  producers: []\n", 4, "matrix.producers is an empty list"},
		{head + "claims: []\n", 0, ""},
		{head + "matrix:\n  boots:\n", 4, "matrix.boots has no value"},
		{head + "matrix:\n  boots: 0\n", 4, "boots 0: want at least 1"},
		{head + "matrix:\n  duration: 0s\n", 4, "duration 0s: want at least 100ms"},
		{head + "matrix:\n  duration: 2.5s\n", 4, "duration 2.5s: lab measures whole seconds (one sample a second): write 2s or 3s"},
		{head + "matrix:\n  warmup: 500ms\n", 4, "warmup 500ms: lab warms up whole seconds: write 0s or 1s"},
		{head + "matrix:\n  duration: 50ms\n", 4, "duration 50ms: want at least 100ms"},
		{head + "matrix:\n  duration: 1500ms\n", 4, "duration 1.5s: lab measures whole seconds (one sample a second): write 1s or 2s"},
		{head + "matrix:\n  duration: 250500us\n", 4, "duration 250.5ms: lab measures whole milliseconds"},
		{head + "matrix:\n  duration: 500ms\n  warmup: 750ms\n", 5, "warmup 750ms: lab warms up whole samples of 500ms: write 500ms or 1s"},
		{head + "matrix:\n  duration: 500ms\n  warmup: 1s\n", 0, ""},
		{head + "tools: [bpf-bench]\nmatrix:\n  duration: 500ms\n", 5, "tools: bpf-bench samples once a second: give a duration of whole seconds, not 500ms"},
		{head + "tools: [bpf-bench]\nmatrix:\n  duration: 1s\n  warmup: 0s\n", 6, "tools: bpf-bench warms up for at least 1s: give a warmup of 1s or more, not 0s"},
		{head + "matrix:\n  warmup: -1s\n", 4, "warmup -1s: want 0 (no warm-up) or more"},
		{head + "matrix:\n  duration: five\n", 4, `matrix.duration: "five" is not a duration: write e.g. 5s`},
		{head + "matrix:\n  duration: [5s]\n", 4, "matrix.duration takes one duration, not a list"},
		{head + "matrix:\n  boots: \"5\"\n", 4, `matrix.boots: "5" is quoted text: write the number without quotes`},
		{head + "matrix:\n  boots: 1e3\n", 4, `matrix.boots: "1e3" is not a whole number: write e.g. boots: 5`},
		// Out of range is too large, with the limit, however many digits.
		{head + "matrix:\n  boots: 99999999999999999999\n", 4, "matrix.boots: 99999999999999999999 is too large: at most 2147483647"},
		{head + "matrix:\n  boots: 18446744073709551615\n", 4, "matrix.boots: 18446744073709551615 is too large: at most 2147483647"},
		{head + "matrix:\n  boots: 2147483648\n", 4, "matrix.boots: 2147483648 is too large: at most 2147483647"},
		{head + "matrix:\n  boots: -99999999999999999999\n", 4, "matrix.boots: -99999999999999999999 is too small: at least -2147483647"},
		{head + "matrix:\n  cpus: [2, 99999999999999999999]\n", 4, "matrix.cpus: 99999999999999999999 is too large: at most 2147483647"},
		{head + "matrix:\n  duration: 99999999999h\n", 4, `matrix.duration: "99999999999h" is too large: a duration is at most 2562047h0m0s`},
		{head + "matrix:\n  duration: 99999999999999\n", 4, "matrix.duration: 99999999999999 seconds is too large: at most 1000000000"},
		{head + "matrix:\n  memory: 99999999999999999999G\n", 4, `memory "99999999999999999999G": more than any machine has`},
		{head + "matrix:\n  clip_producers: yes\n", 4, `matrix.clip_producers: "yes": write true or false`},
		{"name: t\nseries: [s1]\n", 2, "series takes one value, not a list: write e.g. series: uprobe-srcu"},
		{head + "claims:\n  benchmark: uprobe-nop\n", 4, `claims takes a list, not a set of keys: start each item with "- "`},
		{head + "matrix: 5\n", 3, `matrix takes keys under it (affinity, arch,`},
		{"matrix:\narch: [x]\n", 1, "matrix has nothing under it: indent its keys by two spaces under matrix:"},
		{"- name: t\n", 1, "a lab file is a set of keys (name: ..., series: ..., matrix: ...), not a list"},
		{"just text\n", 1, `not the value "just text"`},
		{`{"lab": 1}` + "\n", 1, `unknown key "lab" (known: claims, config,`},
		{"name: *x\n", 1, "*x: no &x anchor above it"},
		// An item of a list is named as one, and keys are names.
		{head + "matrix:\n  arch: [[x86_64]]\n", 4, "item 1 of matrix.arch takes one value, not a list: write e.g. arch: [x86_64]"},
		{head + "matrix:\n  cpus: [1, {a: 1}]\n", 4, "item 2 of matrix.cpus takes a whole number, not a set of keys: write e.g. cpus: [2]"},
		{head + "claims: [1]\n", 3, `item 1 of claims takes keys under it (benchmark, direction, min, note, producers, scaling), not the value "1"`},
		{head + "matrix:\n  numa_layout:\n    distances: [10, 20]\n", 5, `item 1 of matrix.numa_layout.distances takes a list, not the value "10": write e.g. distances: [[10, 20], [20, 10]]`},
		{head + "matrix:\n  numa_layout:\n    distances: 5\n", 5, `matrix.numa_layout.distances takes a list, not the value "5": write e.g. distances: [[10, 20], [20, 10]]`},
		{head + "matrix:\n  affinity: [true]\n", 4, "matrix.affinity takes true or false, not a list"},
		{head + "\"\": x\n", 3, "a key must be a name: this one is empty"},
		{head + "~: x\n", 3, "a key must be a name: this one is empty"},
		{head + "[a]: x\n", 3, "a key must be a name: a list or a set of keys cannot be one"},
		{head + "<<: {mode: apply}\n", 3, "<<: a lab file does not merge keys from elsewhere: write the keys out"},
		{"&k name: t\nseries: s1\n", 0, ""},
		{head + "console_expect: ['ok (']\n", 3, `console_expect "ok (": not a regular expression: missing closing )`},
		{head + "watch:\n  paths: [kernel/events/uprobes.c]\n  subject: 'uprobe ('\n", 5, `watch: subject "uprobe (": not a regular expression`},
		{head + "watch:\n  path: [kernel/]\n", 4, `unknown key "path"`},
		// A syntax mistake is at the line that holds it, not where the
		// parser gave up: an unclosed bracket at its own line.
		{head + "matrix:\n  arch: [x86_64\n  cpus: [2]\n", 4, "a [ list is not closed"},
		{head + "config: [common.config\nmatrix:\n  cpus: [2]\n  boots: 3\n", 3, "a [ list is not closed"},
		{head + "matrix: {arch: [x86_64, cpus: [2]}\n", 3, "a [ list is not closed"},
		{head + "matrix:\n  arch: [x86_64\n", 4, "a [ list is not closed"},
		{head + "matrix:\n  numa_layout:\n    distances: [[10, 20], [20, 10]\n  boots: 3\n", 5, "a [ list is not closed"},
		{head + "console_expect: ['ok [1'\nmatrix:\n  cpus: [2]\n", 3, "a [ list is not closed"},
		{head + "matrix:\n  arch: {a: 1\n  cpus: [2]\n", 4, "a { is not closed"},
		{head + "matrix:\n  numa_layout:\n    nodes: [{cpus: 0, memory: 512M}, {cpus: 1\n    distances: [[10, 20], [20, 10]]\n", 5, "a { is not closed"},
		// A wrongly indented key at that key's line.
		{head + "matrix:\n  arch: [x86_64]\n   cpus: [2]\n", 5, "this line's indentation does not fit"},
		{head + "matrix:\n  cpus: [2]\n duration: 5s\n", 5, "this line's indentation does not fit"},
		{head + "matrix:\n  boots: 3\n    cpus: [2]\n", 5, "this line is indented deeper than the key above it"},
		{head + "matrix:\n  arch: [x86_64]\ncpus: [2]\n  benchmarks: [uprobe-nop]\n", 5, "this line is indented less than the keys around it (lines 4 and 6), which ends their block: indent it as they are"},
		{head + "matrix:\n  arch: [x86_64]\n\n# why\ncpus: [2]\n  boots: 3\n", 7, "(lines 4 and 8)"},
		{head + "source:\n  git: /x\nconfig: [common.config]\n  mode: apply\n", 6, "this line's indentation does not fit"},
		{"name: t\n  series: s1\n", 2, "this line is indented deeper than the key above it"},
		{head + "claims:\n  - benchmark: uprobe-nop\n      direction: faster\n", 5, "this line is indented deeper than the key above it"},
		{head + "matrix:\n  cpus:\n  - 2\n   - 4\n", 6, `this line is indented deeper than the line above it, so YAML reads it as the rest of item 1 of matrix.cpus ("2 - 4")`},
		{head + "description: a long\n  sentence\n", 0, ""},
		{head + "matrix:\n  arch: [x86_64]\ncpus: [2]\n", 5, `unknown key "cpus": it is a key of matrix: indent it under matrix:`},
		{head + "matrix:\n  arch: [x86_64]\n  mode: apply\n", 5, `unknown key "mode" in matrix: it is a top-level key: start it in the first column`},
		{head + "claims:\n  - benchmark: uprobe-nop\n    direction: faster\nproducers: [1]\n", 6, `unknown key "producers": it is a key of claims or of matrix`},
		{head + "source:\n  git: /x\nbase: v6.12\n", 5, `unknown key "base": it is a key of source: indent it under source:`},
		// A shape error at the key that makes the shape impossible.
		{head + "matrix:\n  arch: [x86_64]\n  cpus: [4]\n  clusters: 2\n", 6, "x86_64: clusters=2: x86_64's machine has no clusters"},
		{head + "matrix:\n  clusters: 2\n  arch: [x86_64]\n  cpus: [4]\n", 4, "clusters=2"},
		{head + "matrix:\n  arch: [x86_64]\n  cpus: [4]\n  sockets: 3\n", 6, "4 vCPUs cannot be sockets=3,cores=1,threads=1 (= 3)"},
		{head + "matrix:\n  arch: [arm64]\n  cpus: [4]\n  cores: 1\n  clusters: 3\n", 7, "4 vCPUs cannot be sockets=1,clusters=3"},
		{head + "matrix:\n  arch: [x86_64]\n  cpus: [3]\n  numa: [2]\n", 6, "3 vCPUs do not split evenly over 2 NUMA nodes"},
		{head + "matrix:\n  arch: [x86_64]\n  cpus:\n    - 2\n    - 5000\n", 7, "5000 vCPUs: x86_64 guests boot at most"},
		{"name t\nseries: s1\n", 1, "this line is not key: value: put a colon and a space after the key"},
		{"name: \"t\nseries: s1\n", 1, `a " is not closed`},
		{head + "note: a: b\n", 3, `a second ": " on one line: put text that holds ": " in quotes`},
		{head + "name: u\n", 3, `key "name" is given twice (first at line 1): keep one`},
		{"name: t\r\nseries: s1\r\nmatrix:\r\n  boots: 0\r\n", 4, "boots 0"},
		{head + "matrix:\n  cpus: [2, 2]\n", 4, "cpus lists 2 twice: give each once"},
		{head + "matrix:\n  memory: 64T\n", 4, "memory 64T is more than this host's RAM (4G, MemTotal in /proc/meminfo): give the guest at most 4G"},
		{head + "matrix:\n  memory: 9999999999T\n", 4, "more than any machine has"},
		{head + "matrix:\n  duration: 5h\n  boots: 10\n", 4, "this run would measure for 12d 12h1m (10 boots × 2 variants × 3 benchmark runs per boot × (5h + 1s warm-up)): lab runs at most 24h; with the rest as it is, duration: 23m59s would fit"},
		{head + "matrix:\n  boots: 100000\n", 4, "boots: 2400 would fit"},
		{head + "matrix:\n  cpus: [2]\n  numa_layout:\n    nodes:\n      - {cpus: 0-99999999, memory: 512M}\n      - {cpus: 1, memory: 512M}\n", 7, `numa node 0: cpu list "0-99999999": CPU 99999999 is past the last CPU, 1: write CPUs within 0-1`},
		{head + "matrix:\n  cpus: [2]\n  numa_layout:\n    nodes:\n      - {cpus: 0, memory: 512M}\n      - {cpus: 1, memory: 5}\n", 8, "numa node 1: memory 5M: want at least 256M"},
		// A missing key is at the first key's line, where it would go.
		{"series: s1\n", 1, `missing key "name" (write e.g. name: uprobe-srcu)`},
		{"# a lab\n\nseries: s1\nmatrix:\n  boots: 3\n", 3, `missing key "name"`},
		{"matrix:\n  boots: 3\nseries: s1\n", 1, `missing key "name"`},
		{"name: ../x\nseries: s1\n", 1, `name "../x": a name, not a path: write it without /`},
		{"name: .x\nseries: s1\n", 1, `name ".x": a name cannot start with a dot`},
		{"name: a..b\nseries: s1\n", 1, `a name cannot hold ".."`},
		{"name: a b\nseries: s1\n", 1, `use only letters, digits, '.', '_' and '-'`},
		{"name: t\nseries: ../../etc\n", 2, `series "../../etc": no such file or folder: `},
		{head + "config: [../../../etc/passwd]\n", 3, `config fragment "../../../etc/passwd": a name, not a path`},
		{head + "config: [nope.config]\n", 3, `config fragment "nope.config": no file`},
		{head + "claims:\n  - benchmark: uretprobe-nop\n    direction: faster\n", 4, "claim: benchmark uretprobe-nop is not in the matrix (benchmarks: uprobe-nop, usermode-count, syscall-count)"},
		{head + "claims:\n  - benchmark: syscall-count\n    direction: faster\n", 0, ""},
		{head + "claims:\n  - benchmark: uprobe-nop\n    producers: [8]\n    direction: faster\n", 5, "claim: producers 8 is not in the matrix (producers: [1])"},
		{head + "matrix:\n  cpus: [2]\n  producers: [1, 2, 4, 8]\n  clip_producers: true\nclaims:\n  - benchmark: uprobe-nop\n    producers: [8]\n    direction: faster\n", 0, ""},
		{head + "matrix:\n  cpus: [2]\n  producers: [2, 4]\n  clip_producers: true\nclaims:\n  - benchmark: uprobe-nop\n    producers: [4]\n    scaling: true\n    direction: faster\n", 10, "claim: scaling compares against 1 producer, which the matrix does not run"},
	} {
		lab, path, err := parse(t, tc.src)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%q: %v", tc.src, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%q: no error (lab %+v), want %q", tc.src, lab, tc.want)
			continue
		}
		prefix := path + ": "
		if tc.line > 0 {
			prefix = path + ":" + strconv.Itoa(tc.line) + ": "
		}
		msg := err.Error()
		switch {
		case !strings.HasPrefix(msg, prefix):
			t.Errorf("%q: %q does not start with %q", tc.src, msg, prefix)
		case !strings.Contains(msg, tc.want):
			t.Errorf("%q: %q does not contain %q", tc.src, msg, tc.want)
		case strings.Contains(msg, "\n"):
			t.Errorf("%q: %q is more than one line", tc.src, msg)
		case goTypes.MatchString(strings.ReplaceAll(msg, "(YAML: ", "")):
			t.Errorf("%q: %q shows Go or YAML-library types", tc.src, msg)
		}
	}
}

// A key the file gives keeps its value, 0 included; one it leaves out gets
// the default.
func TestZeroIsAValue(t *testing.T) {
	lab, _, err := parse(t, "name: t\nseries: s1\nmatrix:\n  warmup: 0\n  maxactive: 0\n")
	if err != nil {
		t.Fatal(err)
	}
	m := lab.Matrix
	if m.Warmup.Duration != 0 {
		t.Errorf("warmup: 0 became %v", m.Warmup)
	}
	if m.Boots != 3 || m.Duration.Duration != 5*time.Second || m.Measure != MeasureAuto || len(m.Producers) != 1 || lab.Mode != ModeApply {
		t.Errorf("defaults not filled in: %+v, mode %q", m, lab.Mode)
	}
	if _, _, err := parse(t, "name: t\nseries: s1\nmode: \"\"\n"); err == nil || !strings.Contains(err.Error(), `mode "": want "apply", "revert" or "auto"`) {
		t.Errorf(`mode: "" = %v, want an error, not the default`, err)
	}
}

// The series and the fragments are checked when the lab is read, before
// the kernel source is unpacked.
func TestCheckFiles(t *testing.T) {
	for _, tc := range []struct {
		file, body, want string
	}{
		{"patches/s1/README", "notes\n", `series "s1": ` + "%ROOT%/patches/s1/README: not a patch file"},
		{"patches/s1/0002-y.patch", "From: a\nSubject: [PATCH 2/2] y\n\nwords\n", `"y" has no diff`},
		{"kernel-config/common.config", "CONFIG_SMP=y\nCONFIG_A\n", `config fragment "common.config": %ROOT%/kernel-config/common.config:2: "CONFIG_A" has no =`},
		{"kernel-config/x86_64.config", "CONFIG_A=yes\n", `the x86_64 config fragment: %ROOT%/kernel-config/x86_64.config:1: CONFIG_A=yes: "yes" is not a Kconfig value`},
	} {
		root := checkout(t)
		if err := os.WriteFile(filepath.Join(root, tc.file), []byte(tc.body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ParseOn(filepath.Join(root, "labs", "t.yaml"), []byte(good), testHost)
		if want := strings.ReplaceAll(tc.want, "%ROOT%", root); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", tc.file, err, want)
		}
	}
}

func TestReadHost(t *testing.T) {
	p := filepath.Join(t.TempDir(), "meminfo")
	os.WriteFile(p, []byte("MemFree:  1000 kB\nMemTotal:       16318212 kB\n"), 0o644)
	if h := readHost(p); h.MemoryMiB != 15935 {
		t.Errorf("MemTotal 16318212 kB = %d MiB, want 15935", h.MemoryMiB)
	}
	if h := readHost(filepath.Join(t.TempDir(), "none")); h.MemoryMiB != 0 {
		t.Errorf("no meminfo: %d MiB, want 0 (unknown)", h.MemoryMiB)
	}
}
