package kbuild

import (
	"errors"
	"strings"
)

// Blame is, for a kernel that does not compile, the line to put first: the
// compiler's first error, and who touched its file, as in
// "kernel/x.c:3:5: error: ... (touched by 0002-x.patch)". touched is asked
// with the file as the compiler printed it, and returns the tree's path
// for it ("": keep the compiler's) and who changed it. ok is false when
// err is not a compiler's error (a link error, a missing tool, no
// BuildError at all).
func Blame(err error, touched func(file string) (path string, who []string)) (line string, ok bool) {
	var be *BuildError
	if !errors.As(err, &be) {
		return "", false
	}
	file, line := be.CompilerError()
	if file == "" {
		return "", false
	}
	path, who := touched(file)
	if path != "" {
		line = path + strings.TrimPrefix(line, file)
	}
	if len(who) == 0 {
		return line + " (the series does not touch it)", true
	}
	return line + " (touched by " + strings.Join(who, ", ") + ")", true
}

// SameFile says whether a path the compiler printed names file, a path in
// the tree: the compiler may print it with the source directory, or "./",
// in front.
func SameFile(compiler, file string) bool {
	return compiler == file || strings.HasSuffix(compiler, "/"+file)
}
