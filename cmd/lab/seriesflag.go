package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"lab/internal/series"
	"lab/internal/spec"
)

// openSeriesFlag is series.Open for a --series value. --series takes a
// path, from the working folder, where a lab file's series: takes a name
// under patches/: when the value is not there but the checkout's
// patches/ holds a folder of its last name, the error says so.
func openSeriesFlag(p string, stdin io.Reader) (*series.Series, error) {
	s, err := series.Open(p, stdin, "")
	if err == nil || p == "-" {
		return s, err
	}
	if _, serr := os.Stat(p); !errors.Is(serr, fs.ErrNotExist) {
		return nil, err
	}
	name := filepath.Base(filepath.Clean(p))
	dir := filepath.Join(spec.FindRoot(""), "patches", name)
	if fi, serr := os.Stat(dir); serr == nil && fi.IsDir() {
		return nil, fmt.Errorf("%w; did you mean --series %s, the folder patches/%s? (--series takes a path; a lab file's series: %s is that folder)", err, dir, name, name)
	}
	return nil, err
}
