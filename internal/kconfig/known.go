package kconfig

import (
	"bufio"
	"bytes"
	"compress/gzip"
	_ "embed"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// knownList is every Kconfig symbol of the kernels lab has read (Linux
// 6.12, Debian's linux-source-6.12), one a line: knowngen writes it.
//
//go:embed known.txt.gz
var knownList []byte

// Known is the set of Kconfig symbols lab knows without a source tree.
func Known() (map[string]bool, error) {
	zr, err := gzip.NewReader(bytes.NewReader(knownList))
	if err != nil {
		return nil, fmt.Errorf("lab's list of Kconfig symbols: %w", err)
	}
	syms := map[string]bool{}
	sc := bufio.NewScanner(zr)
	for sc.Scan() {
		syms[sc.Text()] = true
	}
	return syms, sc.Err()
}

// Unlisted are the fragments' options whose symbol is not in Known: only
// those need the source's own Kconfig files before it is extracted.
func Unlisted(fragments []string) ([]Option, error) {
	known, err := Known()
	if err != nil {
		return nil, err
	}
	var out []Option
	for _, f := range fragments {
		opts, err := ParseFragment(f)
		if err != nil {
			return nil, err
		}
		for _, o := range opts {
			if !known[strings.TrimPrefix(o.Name, "CONFIG_")] {
				out = append(out, o)
			}
		}
	}
	return out, nil
}

// definition is a Kconfig line that defines a symbol.
var definition = regexp.MustCompile(`^\s*(?:menu)?config\s+([A-Za-z0-9_]+)\s*$`)

// DefinedIn is every symbol Kconfig text defines: the files of a tree one
// after another, as tar or git grep give them.
func DefinedIn(r io.Reader) (map[string]bool, error) {
	found := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		if m := definition.FindSubmatch(sc.Bytes()); m != nil {
			found[string(m[1])] = true
		}
	}
	return found, sc.Err()
}

// Undefined is an *UnknownError for the options of opts whose symbol is
// not in defined (nil when there is none), each with the symbol of syms a
// typo probably meant; src says where the symbols were read.
func Undefined(src string, opts []Option, defined, syms map[string]bool) error {
	var unknown []Unknown
	for _, o := range opts {
		name := strings.TrimPrefix(o.Name, "CONFIG_")
		if !defined[name] {
			unknown = append(unknown, Unknown{Option: o, Near: nearest(name, syms)})
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	return &UnknownError{Src: src, Unknown: unknown}
}
