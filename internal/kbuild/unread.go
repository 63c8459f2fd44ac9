package kbuild

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// Unread says whether a change to these files (paths relative to the
// source tree's top) leaves every kernel image as it was, because no build
// reads them: documentation (not its Kconfig or Makefile files, which
// configuration and make do read), the tree's own notes at the top, the
// licences, and git's ignore lists. The rule is narrow on purpose: a file
// outside it may be read in ways a path does not show (x86's opcode map,
// a .txt, generates C), and a change read as unread would lose a
// regression, while one built needlessly costs an incremental build.
func Unread(paths []string) bool {
	if len(paths) == 0 {
		return false
	}
	for _, p := range paths {
		if !unread(p) {
			return false
		}
	}
	return true
}

func unread(p string) bool {
	base := path.Base(p)
	switch {
	case base == ".gitignore" || base == ".mailmap":
		return true
	case strings.HasPrefix(base, "Kconfig") || strings.HasPrefix(base, "Makefile") || strings.HasPrefix(base, "Kbuild"):
		return false
	case strings.HasPrefix(p, "Documentation/") || strings.HasPrefix(p, "LICENSES/"):
		return true
	}
	switch p {
	case "MAINTAINERS", "CREDITS", "README", "COPYING":
		return true
	}
	return false
}

// Alias stores, under in's key, the kernel of entry from, a build of
// another commit whose change to in's tree no build reads (Unread): the
// same image and config, recorded with in's inputs and SameAs naming
// from's key, without a checkout or make.
func (b *Builder) Alias(from *Info, in Inputs) (*Info, error) {
	key, err := in.Key()
	if err != nil {
		return nil, err
	}
	dir := b.kernelDir(key)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	info := *from
	info.Key, info.Inputs, info.SameAs, info.Cached = key, in, from.Key, false
	info.Compiled, info.Duration, info.Configure, info.Make = 0, 0, 0, 0
	info.BuiltAt = time.Now().UTC()
	for _, f := range []*string{&info.Image, &info.Config, &info.BTF} {
		if *f == "" {
			continue
		}
		to := filepath.Join(dir, filepath.Base(*f))
		if err := linkOrCopy(*f, to); err != nil {
			return nil, fmt.Errorf("kernel of %s from %s: %w", key, from.Key, err)
		}
		*f = to
	}
	linkOrCopy(filepath.Join(filepath.Dir(from.Image), "System.map"), filepath.Join(dir, "System.map"))
	data, _ := json.MarshalIndent(info, "", "  ")
	tmp := filepath.Join(dir, "info.json.tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return nil, err
	}
	return &info, os.Rename(tmp, filepath.Join(dir, "info.json"))
}

// linkOrCopy hard-links src to dst (an entry's files are never written
// again), or copies it where a link cannot be made.
func linkOrCopy(src, dst string) error {
	os.Remove(dst)
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	return copyFile(src, dst)
}
