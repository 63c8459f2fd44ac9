package kconfig

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
)

// Symbols returns every symbol a kernel tree's Kconfig files define with
// "config X" or "menuconfig X", without the CONFIG_ prefix. It reads every
// Kconfig* file under srcDir (about 1700 in 6.12), several at a time.
func Symbols(srcDir string) (map[string]bool, error) {
	files, err := kconfigFiles(srcDir)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no Kconfig files: not a kernel source tree", srcDir)
	}
	var (
		mu   sync.Mutex
		syms = map[string]bool{}
		errs []error
		wg   sync.WaitGroup
		next = make(chan string)
	)
	for range runtime.NumCPU() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range next {
				names, err := defined(f)
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				}
				for _, n := range names {
					syms[n] = true
				}
				mu.Unlock()
			}
		}()
	}
	for _, f := range files {
		next <- f
	}
	close(next)
	wg.Wait()
	if len(errs) > 0 {
		return nil, errs[0]
	}
	return syms, nil
}

// kconfigFiles lists the Kconfig* files of a tree, skipping hidden folders
// (.git) where no Kconfig lives.
func kconfigFiles(srcDir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(srcDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != srcDir && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() && strings.HasPrefix(d.Name(), "Kconfig") {
			files = append(files, p)
		}
		return nil
	})
	return files, err
}

// defined lists the symbols one Kconfig file defines.
func defined(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var names []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && (f[0] == "config" || f[0] == "menuconfig") {
			names = append(names, f[1])
		}
	}
	return names, sc.Err()
}

// UnknownError lists the fragment options that no Kconfig file of the tree
// defines: merge_config.sh and olddefconfig would drop them without a word.
type UnknownError struct {
	Src     string
	Unknown []Unknown
}

// Unknown is one option the tree does not know.
type Unknown struct {
	Option
	Near string // a defined symbol one or two edits away, "" when none
}

func (e *UnknownError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d config option(s) are not Kconfig symbols of %s:", len(e.Unknown), e.Src)
	for _, u := range e.Unknown {
		fmt.Fprintf(&b, "\n  %s:%d: %s: no \"config %s\" in any Kconfig file", u.File, u.Line, u.Name, strings.TrimPrefix(u.Name, "CONFIG_"))
		if u.Near != "" {
			fmt.Fprintf(&b, "; did you mean CONFIG_%s?", u.Near)
		} else {
			b.WriteString("; remove the line, or check the name against this kernel version")
		}
	}
	return b.String()
}

// CheckSymbols checks that every option the fragments name is a Kconfig
// symbol of the tree at srcDir: an *UnknownError names each other one with
// its fragment and line. Run it once the source is there and before
// olddefconfig (Merge does), so that a typo fails in a second, not after a
// build.
func CheckSymbols(srcDir string, fragments []string) error {
	var opts []Option
	for _, f := range fragments {
		o, err := ParseFragment(f)
		if err != nil {
			return err
		}
		opts = append(opts, o...)
	}
	syms, err := Symbols(srcDir)
	if err != nil {
		return err
	}
	return Undefined("the source in "+srcDir, opts, syms, syms)
}

// nearest is the defined symbol closest to name, within two edits: the
// likely meaning of a typo.
func nearest(name string, syms map[string]bool) string {
	const far = 3 // edits that make another name, not a typo
	best, bestD := "", far
	for s := range syms {
		if d := len(s) - len(name); d >= far || d <= -far {
			continue
		}
		if d := distance(name, s, far); d < bestD || (d == bestD && d < far && s < best) {
			best, bestD = s, d
		}
	}
	return best
}

// distance is the Levenshtein distance of a and b, or limit when it is at
// least limit (the caller only wants closer ones).
func distance(a, b string, limit int) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			rowMin = min(rowMin, cur[j])
		}
		if rowMin >= limit {
			return limit
		}
		prev, cur = cur, prev
	}
	return min(prev[len(b)], limit)
}
