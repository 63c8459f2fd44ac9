// Package guestroot fetches a Debian package and every package it depends
// on, for a guest arch other than the host's, and unpacks them into a
// folder of the lab cache: a root a guest program and its libraries are
// taken from (initramfs.ProgramFiles). apt-get download needs no root and
// installs nothing; dpkg must know the arch (dpkg --add-architecture) and
// apt its package lists (apt-get update), as scripts/install-deps leaves
// them.
package guestroot

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// complete marks a root whose every package was unpacked.
const complete = ".lab-complete"

// Fetch returns the root holding pkg of debArch and its dependencies,
// unpacked into cacheDir/guestroot/<debArch>/<pkg>_<version> unless an
// earlier run did, and pkg's version. logf says what it downloads.
func Fetch(ctx context.Context, cacheDir, debArch, pkg string, logf func(string, ...any)) (root, version string, err error) {
	if debArch == "" || pkg == "" {
		return "", "", fmt.Errorf("guest root: no package (%q) or arch (%q)", pkg, debArch)
	}
	qualified := pkg + ":" + debArch
	if version, err = candidate(ctx, qualified); err != nil {
		return "", "", err
	}
	root, err = fetch(ctx, cacheDir, debArch, pkg, version, logf)
	return root, version, err
}

func fetch(ctx context.Context, cacheDir, debArch, pkg, version string, logf func(string, ...any)) (string, error) {
	qualified := pkg + ":" + debArch
	root := filepath.Join(cacheDir, "guestroot", debArch, pkg+"_"+strings.ReplaceAll(version, ":", "%"))
	if _, err := os.Stat(filepath.Join(root, complete)); err == nil {
		return root, nil
	}
	if err := os.MkdirAll(filepath.Dir(root), 0o755); err != nil {
		return "", err
	}
	// Two runs that fetch the same root: the second waits, then finds it.
	lock, err := os.OpenFile(root+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(root, complete)); err == nil {
		return root, nil
	}
	pkgs, err := closure(ctx, qualified)
	if err != nil {
		return "", err
	}
	logf("guest root %s: downloading %d Debian packages (%s and what it depends on)", debArch, len(pkgs), qualified)
	if err := unpack(ctx, root, pkgs); err != nil {
		return "", fmt.Errorf("guest root for %s: %w", qualified, err)
	}
	return root, nil
}

// candidate is the version apt would install of a qualified package.
func candidate(ctx context.Context, qualified string) (string, error) {
	out, err := run(ctx, "", "apt-cache", "show", "--no-all-versions", qualified)
	if err != nil {
		return "", fmt.Errorf("%w (does dpkg know the arch and apt its lists? ./scripts/install-deps --workloads)", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Version: "); ok {
			return strings.TrimSpace(v), nil
		}
	}
	return "", fmt.Errorf("apt-cache show %s: no version", qualified)
}

// closure is qualified and every package it depends on, recursively, as
// apt resolves them for its arch (virtual packages left out).
func closure(ctx context.Context, qualified string) ([]string, error) {
	out, err := run(ctx, "", "apt-cache", "depends", "--recurse", "--no-recommends", "--no-suggests", "--no-conflicts",
		"--no-breaks", "--no-replaces", "--no-enhances", qualified)
	if err != nil {
		return nil, err
	}
	return packages(out), nil
}

// packages are the packages apt-cache depends --recurse lists: its lines
// that are not indented, virtual ones (<name>) left out, each once.
func packages(out []byte) []string {
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, " ") || strings.HasPrefix(line, "<") {
			continue
		}
		seen[strings.TrimSpace(line)] = true
	}
	var pkgs []string
	for p := range seen {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	return pkgs
}

// unpack downloads pkgs and unpacks them into root, which is made anew
// and marked complete last.
func unpack(ctx context.Context, root string, pkgs []string) error {
	if err := os.RemoveAll(root); err != nil {
		return err
	}
	debs, err := os.MkdirTemp(filepath.Dir(root), "debs-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(debs)
	if _, err := run(ctx, debs, "apt-get", append([]string{"download", "-q"}, pkgs...)...); err != nil {
		return err
	}
	files, err := filepath.Glob(filepath.Join(debs, "*.deb"))
	if err != nil {
		return err
	}
	if len(files) != len(pkgs) {
		return fmt.Errorf("apt-get download gave %d packages of %d", len(files), len(pkgs))
	}
	for _, f := range files {
		if _, err := run(ctx, "", "dpkg-deb", "-x", f, root); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(root, complete), []byte(strings.Join(pkgs, "\n")+"\n"), 0o644)
}

// run runs a command without a shell, its error carrying what it printed.
func run(ctx context.Context, dir, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}
