package initramfs

import (
	"debug/elf"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// ProgramFiles are the files a guest program needs in the image: the
// program, its ELF interpreter and every shared library it needs,
// transitively (DT_NEEDED, as the loader resolves them in Debian's
// multiarch folders), each from root (the host's "/" for a program of the
// host's arch). A file goes in at the path the loader opens, with the
// content of what that path's symlinks lead to. A program of another
// machine than want, or a library found nowhere, is an error naming it.
func ProgramFiles(root, multiarch string, want elf.Machine, program string) ([]File, error) {
	dirs := []string{"/lib/" + multiarch, "/usr/lib/" + multiarch, "/lib", "/usr/lib", "/lib64"}
	var files []File
	seen := map[string]bool{}
	queue := []string{program}
	for len(queue) > 0 {
		guest := queue[0]
		queue = queue[1:]
		if seen[guest] {
			continue
		}
		seen[guest] = true
		host, err := resolve(root, guest)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", program, err)
		}
		files = append(files, File{Host: host, Guest: strings.TrimPrefix(guest, "/")})
		interp, needed, err := dynamic(host, want)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", program, guest, err)
		}
		if interp != "" {
			queue = append(queue, interp)
		}
		for _, lib := range needed {
			found, err := findLibrary(root, dirs, lib)
			if err != nil {
				return nil, fmt.Errorf("%s: %s needs %s: %w", program, guest, lib, err)
			}
			queue = append(queue, found)
		}
	}
	return files, nil
}

// dynamic reads an ELF file's interpreter and the libraries it needs.
func dynamic(file string, want elf.Machine) (interp string, needed []string, err error) {
	f, err := elf.Open(file)
	if err != nil {
		return "", nil, err
	}
	defer f.Close()
	if f.Machine != want {
		return "", nil, fmt.Errorf("built for %s, the guest runs %s", f.Machine, want)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			data := make([]byte, p.Filesz)
			if _, err := p.ReadAt(data, 0); err != nil {
				return "", nil, fmt.Errorf("read its interpreter: %w", err)
			}
			interp = strings.TrimRight(string(data), "\x00")
		}
	}
	needed, err = f.ImportedLibraries()
	if err != nil && f.Section(".dynamic") != nil {
		return "", nil, fmt.Errorf("read its libraries: %w", err)
	}
	return interp, needed, nil
}

// findLibrary is the first of dirs (paths in the guest) holding lib.
func findLibrary(root string, dirs []string, lib string) (string, error) {
	for _, d := range dirs {
		guest := path.Join(d, lib)
		if _, err := resolve(root, guest); err == nil {
			return guest, nil
		}
	}
	return "", fmt.Errorf("not in %s under %s", strings.Join(dirs, ", "), root)
}

// resolve follows the symlinks of guest, a path under root, within root
// (an absolute link target is root's, not the host's), to a regular file.
func resolve(root, guest string) (string, error) {
	p := guest
	for hops := 0; hops < 40; hops++ {
		host := filepath.Join(root, p)
		// The folders on the way may be links too (/lib -> usr/lib).
		dir, err := filepath.EvalSymlinks(filepath.Dir(host))
		if err != nil {
			return "", err
		}
		host = filepath.Join(dir, filepath.Base(host))
		fi, err := os.Lstat(host)
		if err != nil {
			return "", err
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			if !fi.Mode().IsRegular() {
				return "", fmt.Errorf("%s is not a regular file", guest)
			}
			return host, nil
		}
		target, err := os.Readlink(host)
		if err != nil {
			return "", err
		}
		if !path.IsAbs(target) {
			rel, err := filepath.Rel(root, dir)
			if err != nil {
				return "", err
			}
			target = path.Join("/", filepath.ToSlash(rel), target)
		}
		p = target
	}
	return "", fmt.Errorf("%s: too many symlinks", guest)
}
