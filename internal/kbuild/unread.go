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
// from's key, without a checkout or make. The entry is made whole in a
// folder of its own and renamed into place, so that no reader sees it
// half made, and a crash leaves no key folder whose files are links to
// another entry's (a build of the key would write through them).
func (b *Builder) Alias(from *Info, in Inputs) (*Info, error) {
	key, err := in.Key()
	if err != nil {
		return nil, err
	}
	dir := b.kernelDir(key)
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), key+".alias-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil { // MkdirTemp's 0700 would keep a shared cache's other users out
		return nil, err
	}
	info := *from
	info.Key, info.Inputs, info.SameAs, info.Cached, info.Seeded = key, in, from.Key, false, ""
	info.Compiled, info.Duration, info.Configure, info.Make = 0, 0, 0, 0
	info.BuiltAt = time.Now().UTC()
	for _, f := range []*string{&info.Image, &info.Config, &info.BTF} {
		if *f == "" {
			continue
		}
		if err := linkOrCopy(*f, filepath.Join(tmp, filepath.Base(*f))); err != nil {
			return nil, fmt.Errorf("kernel of %s from %s: %w", key, from.Key, err)
		}
		*f = filepath.Join(dir, filepath.Base(*f))
	}
	linkOrCopy(filepath.Join(filepath.Dir(from.Image), "System.map"), filepath.Join(tmp, "System.map"))
	data, _ := json.MarshalIndent(info, "", "  ")
	if err := os.WriteFile(filepath.Join(tmp, "info.json"), data, 0o644); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		// The key has a folder already: another run's alias or build of it,
		// whole or under way. Its own Lookup or make decides.
		return nil, fmt.Errorf("kernel of %s from %s: %w", key, from.Key, err)
	}
	return &info, nil
}

// linkOrCopy hard-links src to dst, a new file (an entry's files are
// replaced by rename, never written again), or copies it where a link
// cannot be made.
func linkOrCopy(src, dst string) error {
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	return copyFile(src, dst)
}
