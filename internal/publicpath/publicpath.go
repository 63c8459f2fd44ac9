// Package publicpath names the folders of the machine that made a result
// as a reader elsewhere can place them: what goes to a list (a watch
// reply, its attachment) or into the repository (a committed example)
// says "$LAB_CACHE/kernels/…", "results/…" or "~/…", never /root/… or
// /tmp/….
package publicpath

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Names collects the folders to name. The zero value names none.
type Names struct{ pairs [][2]string }

// Folder names the folder path (and everything inside it) as as: a path
// that goes on inside it becomes as/…; the bare folder is left alone,
// since "/tmp" may be part of a word.
func (n *Names) Folder(path, as string) { n.add(path, as, false) }

// Whole names path as as wherever it appears, whole or as a folder: a
// source tarball or tree, a file named on a command line.
func (n *Names) Whole(path, as string) { n.add(path, as, true) }

func (n *Names) add(path, as string, whole bool) {
	if path == "" {
		return
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	if path == "/" {
		return
	}
	n.pairs = append(n.pairs, [2]string{path + "/", as + "/"})
	if whole {
		n.pairs = append(n.pairs, [2]string{path, as})
	}
}

// Replacer rewrites the named folders; a folder inside another is named
// by its own.
func (n *Names) Replacer() *strings.Replacer {
	pairs := slices.Clone(n.pairs)
	slices.SortStableFunc(pairs, func(a, b [2]string) int { return len(b[0]) - len(a[0]) })
	var args []string
	for _, p := range pairs {
		args = append(args, p[0], p[1])
	}
	return strings.NewReplacer(args...)
}

// machine matches an absolute path in a folder that belongs to one
// machine: home folders, temporary and scratch folders, a checkout or a
// cache under them. System paths a reader shares (/usr/bin/qemu-…,
// /dev/kvm, /proc/…, /sys/…) are not machine paths.
var machine = regexp.MustCompile(`(?:^|[^\w.$~/-])(/(?:root|home|tmp|var/tmp|work|srv|opt|mnt|media|scratch|data|builds)/[^\s"'` + "`" + `<>)\],;]*)`)

// Find lists the machine paths text names, each once, in order.
func Find(text []byte) []string {
	var out []string
	for _, m := range machine.FindAllSubmatch(text, -1) {
		if p := string(m[1]); !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// Copy copies the folder src to dst (which must not exist) with every text
// file's named folders rewritten by r; other files are copied as they are,
// and what is not a file or folder (a socket left by QEMU) is left out.
func Copy(src, dst string, r *strings.Replacer) error {
	if _, err := os.Stat(dst); err == nil {
		return fmt.Errorf("%s exists: lab export overwrites nothing", dst)
	}
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case !d.Type().IsRegular():
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if isText(data) {
			data = []byte(r.Replace(string(data)))
		}
		if err := os.WriteFile(to, data, 0o644); err != nil {
			return fmt.Errorf("export %s: %w", rel, err)
		}
		return nil
	})
}

// isText says whether data reads as text: no NUL byte in its first 8 kB,
// as git decides.
func isText(data []byte) bool {
	return !bytes.Contains(data[:min(len(data), 8192)], []byte{0})
}
