// Package kconfig makes a kernel .config from tinyconfig and lab's fragments
// with the kernel's own merge_config.sh, then checks that every option the
// fragments ask for survived olddefconfig.
package kconfig

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"lab/internal/proc"
)

// Option is one line of a fragment.
type Option struct {
	Name  string // CONFIG_FOO
	Value string // "y", "m", "256", "\"str\"", or "n" for "is not set"
	File  string
	Line  int
}

// ParseFragment reads CONFIG_X=v and "# CONFIG_X is not set" lines; any
// other line that is not a comment or blank is an error naming
// fragment:line, since merge_config.sh would drop it without a word.
func ParseFragment(path string) ([]Option, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parse(string(data), path)
}

// parse reads a fragment's lines. It splits on \n itself: bufio.Scanner
// would drop a \r that merge_config.sh's sed expressions do not.
func parse(data, file string) ([]Option, error) {
	var opts []Option
	first := map[string]int{} // option name -> line it was first set
	lines := strings.Split(strings.TrimSuffix(data, "\n"), "\n")
	for i, l := range lines {
		n := i + 1
		o, ok, err := parseLine(l)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", file, n, err)
		}
		if !ok {
			continue
		}
		if at, dup := first[o.Name]; dup {
			return nil, fmt.Errorf("%s:%d: %s is already set at line %d: keep one of the two lines", file, n, o.Name, at)
		}
		first[o.Name] = n
		o.File, o.Line = file, n
		opts = append(opts, o)
	}
	return opts, nil
}

const lineHelp = `write CONFIG_NAME=y, =m, =n, ="text", =123 or =0x1f, or "# CONFIG_NAME is not set"`

// parseLine reads one line: ok is false for comments and blank lines.
func parseLine(l string) (o Option, ok bool, err error) {
	switch {
	case strings.HasSuffix(l, "\r"):
		return o, false, fmt.Errorf("Windows (CRLF) line ending: kconfig reads the \\r as part of the value; convert the file with dos2unix")
	case strings.TrimSpace(l) == "":
		return o, false, nil
	case strings.HasPrefix(l, "# CONFIG_") && strings.HasSuffix(l, " is not set"):
		name := strings.TrimSuffix(strings.TrimPrefix(l, "# "), " is not set")
		if !validName(name) {
			return o, false, fmt.Errorf("%q is not an option name (CONFIG_ and then letters, digits and _)", name)
		}
		return Option{Name: name, Value: "n"}, true, nil
	case strings.HasPrefix(l, "#"):
		return o, false, nil
	case l != strings.TrimLeft(l, " \t"):
		return o, false, fmt.Errorf("%q starts with blanks, which merge_config.sh does not read: start the line with CONFIG_ or #", l)
	case !strings.HasPrefix(l, "CONFIG_"):
		return o, false, fmt.Errorf("%q is not a config line: %s", l, lineHelp)
	}
	k, v, found := strings.Cut(l, "=")
	if !found {
		return o, false, fmt.Errorf("%q has no =: %s", l, lineHelp)
	}
	if !validName(k) {
		return o, false, fmt.Errorf("%q is not an option name (CONFIG_ and then letters, digits and _, with no blanks around =): %s", k, lineHelp)
	}
	if !validValue(v) {
		return o, false, fmt.Errorf("%s=%s: %q is not a Kconfig value: %s", k, v, v, lineHelp)
	}
	return Option{Name: k, Value: v}, true, nil
}

func validName(name string) bool {
	rest, ok := strings.CutPrefix(name, "CONFIG_")
	return ok && rest != "" && strings.Trim(rest, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") == ""
}

// validValue accepts what kconfig reads back from a .config: a tristate, a
// quoted string (with \" and \\ escapes), a decimal or a 0x hex number.
func validValue(v string) bool {
	switch {
	case v == "y" || v == "m" || v == "n":
		return true
	case strings.HasPrefix(v, `"`):
		return quoted(v)
	case strings.HasPrefix(v, "0x") || strings.HasPrefix(v, "0X"):
		return len(v) > 2 && strings.Trim(v[2:], "0123456789abcdefABCDEF") == ""
	}
	_, err := strconv.ParseInt(v, 10, 64)
	return err == nil
}

// quoted reports whether v is one double-quoted string and nothing after it.
func quoted(v string) bool {
	for i := 1; i < len(v); i++ {
		switch v[i] {
		case '\\':
			i++
		case '"':
			return i == len(v)-1
		}
	}
	return false
}

// Values reads a final .config into a map; options that are not set are "n".
func Values(path string) (map[string]string, error) {
	opts, err := ParseFragment(path)
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, o := range opts {
		m[o.Name] = o.Value
	}
	return m, nil
}

// Dropped is a requested option that the final .config does not have.
type Dropped struct {
	Option
	Got    string // the final value, "n" when absent
	Reason string // what Kconfig says it depends on, when found
}

func (d Dropped) String() string {
	s := fmt.Sprintf("%s:%d: %s=%s was requested but the final .config has %s", d.File, d.Line, d.Name, d.Value, show(d.Got))
	if d.Reason != "" {
		s += " (" + d.Reason + ")"
	}
	return s
}

func show(v string) string {
	if v == "n" {
		return "it unset"
	}
	return "=" + v
}

// DroppedError lists every dropped option.
type DroppedError struct{ Dropped []Dropped }

func (e *DroppedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d config option(s) did not survive olddefconfig:", len(e.Dropped))
	for _, d := range e.Dropped {
		b.WriteString("\n  " + d.String())
	}
	return b.String()
}

// Verify checks the final .config against the fragments. srcDir, when not
// empty, is searched for each dropped option's Kconfig dependencies.
func Verify(finalConfig string, fragments []string, srcDir string) error {
	got, err := Values(finalConfig)
	if err != nil {
		return err
	}
	want := map[string]Option{} // later fragments override earlier ones, as in merge_config.sh
	for _, fr := range fragments {
		opts, err := ParseFragment(fr)
		if err != nil {
			return err
		}
		for _, o := range opts {
			want[o.Name] = o
		}
	}
	var dropped []Dropped
	for name, o := range want {
		g, ok := got[name]
		if !ok {
			g = "n"
		}
		if g != o.Value {
			d := Dropped{Option: o, Got: g}
			if srcDir != "" {
				d.Reason = dependsOn(srcDir, strings.TrimPrefix(name, "CONFIG_"))
			}
			dropped = append(dropped, d)
		}
	}
	if len(dropped) == 0 {
		return nil
	}
	sort.Slice(dropped, func(i, j int) bool {
		if dropped[i].File != dropped[j].File {
			return dropped[i].File < dropped[j].File
		}
		return dropped[i].Line < dropped[j].Line
	})
	return &DroppedError{Dropped: dropped}
}

// dependsOn finds "config NAME" in the Kconfig files and returns its
// "depends on" lines, or says that no such symbol exists.
func dependsOn(srcDir, name string) string {
	cmd := exec.Command("grep", "-rn", "--include=Kconfig*", "-E", "^(menu)?config "+name+"$", ".")
	cmd.Dir = srcDir
	out, err := cmd.Output()
	if err != nil || len(out) == 0 {
		return "no such Kconfig symbol in this source"
	}
	var reasons []string
	for _, hit := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		file, rest, _ := strings.Cut(hit, ":")
		var line int
		fmt.Sscanf(rest, "%d", &line)
		deps := blockDeps(filepath.Join(srcDir, file), line)
		if ifs := enclosingIfs(filepath.Join(srcDir, file), line); ifs != "" {
			deps = strings.TrimPrefix(deps+", inside "+ifs, ", ")
		}
		where := fmt.Sprintf("%s:%d", strings.TrimPrefix(file, "./"), line)
		if deps == "" {
			reasons = append(reasons, where+" has no prompt dependencies; a select or choice overrode it")
		} else {
			reasons = append(reasons, where+": "+deps)
		}
	}
	return strings.Join(reasons, "; ")
}

// enclosingIfs lists the "if X" blocks of a Kconfig file that enclose line:
// a symbol inside "if X" is invisible while X is off.
func enclosingIfs(path string, line int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var stack []string
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan() && n < line; n++ {
		l := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(l, "if "):
			stack = append(stack, l)
		case strings.HasPrefix(l, "endif") && len(stack) > 0:
			stack = stack[:len(stack)-1]
		}
	}
	return strings.Join(stack, ", ")
}

func blockDeps(path string, start int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var deps []string
	for n := 1; sc.Scan(); n++ {
		if n <= start {
			continue
		}
		l := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(l, "config ") || strings.HasPrefix(l, "menuconfig ") || strings.HasPrefix(l, "endmenu") || strings.HasPrefix(l, "if ") || strings.HasPrefix(l, "choice") || strings.HasPrefix(l, "endchoice") {
			break
		}
		if strings.HasPrefix(l, "depends on ") {
			deps = append(deps, l)
		}
	}
	return strings.Join(deps, ", ")
}

// Merge writes buildDir/.config: it checks the fragments' options against
// the tree's Kconfig symbols (CheckSymbols), then makes tinyconfig, merges
// the fragments with scripts/kconfig/merge_config.sh, runs olddefconfig
// and verifies the result.
func Merge(ctx context.Context, srcDir, buildDir string, makeArgs, fragments []string, log io.Writer) error {
	return MergeIn(ctx, nil, srcDir, buildDir, makeArgs, fragments, log)
}

// MergeIn is Merge with the tree's scripts run in a sandbox (nil: none).
func MergeIn(ctx context.Context, sb *proc.Sandbox, srcDir, buildDir string, makeArgs, fragments []string, log io.Writer) error {
	run := func(dir, name string, args ...string) error {
		cmd := sb.Command(ctx, name, args...)
		cmd.Dir = dir
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
		}
		return nil
	}
	mk := func(target string) error {
		return run(srcDir, "make", append(append([]string{"O=" + buildDir}, makeArgs...), target)...)
	}
	// An option the tree does not know would be dropped by olddefconfig
	// and reported only after it; say so before running make at all.
	if err := CheckSymbols(srcDir, fragments); err != nil {
		return err
	}
	if err := mk("tinyconfig"); err != nil {
		return err
	}
	args := append([]string{"-m", "-O", buildDir, filepath.Join(buildDir, ".config")}, fragments...)
	// merge_config.sh makes its temporary file in the folder it runs in:
	// the build folder, since the source tree is read-only in the sandbox.
	if err := run(buildDir, filepath.Join(srcDir, "scripts", "kconfig", "merge_config.sh"), args...); err != nil {
		return err
	}
	if err := mk("olddefconfig"); err != nil {
		return err
	}
	return Verify(filepath.Join(buildDir, ".config"), fragments, srcDir)
}
