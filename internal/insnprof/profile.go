package insnprof

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"lab/internal/results"
)

// Section is one marked section of the plugin's output: the guest
// instructions counted by the start address of the block they ran in.
type Section struct {
	N          int // from 1, as the guest numbered it
	Total      uint64
	Incomplete bool // the guest never reached its stop marker
	Counts     map[uint64]uint64
}

// ReadSections reads the plugin's output: every section, by number.
func ReadSections(r io.Reader) (map[int]*Section, error) {
	out := map[int]*Section{}
	var cur *Section
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if rest, ok := strings.CutPrefix(text, "# section "); ok {
			f := strings.Fields(rest)
			if len(f) < 7 || f[1] != "id" || f[3] != "total" {
				return nil, fmt.Errorf("line %d: a section header lab cannot read: %q", line, text)
			}
			n, err1 := strconv.Atoi(f[0])
			total, err2 := strconv.ParseUint(f[4], 10, 64)
			if err1 != nil || err2 != nil {
				return nil, fmt.Errorf("line %d: a section header lab cannot read: %q", line, text)
			}
			cur = &Section{N: n, Total: total, Incomplete: strings.HasSuffix(text, " incomplete"), Counts: map[uint64]uint64{}}
			out[n] = cur
			continue
		}
		if strings.HasPrefix(text, "#") || text == "" {
			continue
		}
		if cur == nil {
			return nil, fmt.Errorf("line %d: counts before any section: %q", line, text)
		}
		a, c, ok := strings.Cut(text, " ")
		addr, err1 := strconv.ParseUint(a, 16, 64)
		n, err2 := strconv.ParseUint(c, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("line %d: not an address and a count: %q", line, text)
		}
		cur.Counts[addr] += n
	}
	return out, sc.Err()
}

// Symbols names kernel addresses by the function they are in.
type Symbols struct {
	addrs []uint64
	names []string
}

// User is the name of every user-space address: the producers' loop,
// the agent, libc; a profile counts them together.
const User = "[user]"

// kernelStart is the lowest kernel address on both arches lab runs:
// x86_64's and arm64's kernels live in the upper half.
const kernelStart = 0xffff000000000000

// LoadSystemMap reads a System.map's text symbols.
func LoadSystemMap(path string) (*Symbols, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	type sym struct {
		addr uint64
		name string
	}
	var syms []sym
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 3 || !strings.ContainsAny(fs[1], "tTwW") {
			continue
		}
		addr, err := strconv.ParseUint(fs[0], 16, 64)
		if err != nil {
			continue
		}
		syms = append(syms, sym{addr, fs[2]})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(syms) == 0 {
		return nil, fmt.Errorf("%s: no text symbols", path)
	}
	slices.SortStableFunc(syms, func(a, b sym) int { return cmp.Compare(a.addr, b.addr) })
	s := &Symbols{}
	for _, x := range syms {
		s.addrs, s.names = append(s.addrs, x.addr), append(s.names, x.name)
	}
	return s, nil
}

// Name is the function addr is in: the nearest text symbol at or below it.
func (s *Symbols) Name(addr uint64) string {
	if addr < kernelStart {
		return User
	}
	i := sort.Search(len(s.addrs), func(i int) bool { return s.addrs[i] > addr }) - 1
	if i < 0 {
		return fmt.Sprintf("[kernel %#x]", addr)
	}
	return s.names[i]
}

// Summarize is the profile of each benchmark result of boot b (a boot with
// the plugin loaded): the sections of its measured samples, by function.
func Summarize(b results.Boot, sections map[int]*Section, syms *Symbols) ([]results.ProfileResult, error) {
	var out []results.ProfileResult
	for _, res := range b.Results {
		if !res.OK() || len(res.Samples) == 0 {
			continue
		}
		pr := results.ProfileResult{Benchmark: res.Benchmark, Tool: res.Tool, Producers: res.Producers}
		byName := map[string]uint64{}
		for _, s := range res.Samples {
			sec := sections[s.Section]
			if s.Section == 0 || sec == nil || sec.Incomplete {
				return nil, fmt.Errorf("%s p=%d: the sample of section %d has no complete section in the plugin's output (an agent without section markers?)", res.Benchmark, res.Producers, s.Section)
			}
			pr.Ops += s.Hits
			pr.Instructions += sec.Total
			for addr, n := range sec.Counts {
				byName[syms.Name(addr)] += n
			}
		}
		for name, n := range byName {
			pr.Functions = append(pr.Functions, results.FunctionCount{Name: name, Instructions: n})
		}
		slices.SortFunc(pr.Functions, func(a, b results.FunctionCount) int {
			return cmp.Or(cmp.Compare(b.Instructions, a.Instructions), cmp.Compare(a.Name, b.Name))
		})
		out = append(out, pr)
	}
	return out, nil
}
