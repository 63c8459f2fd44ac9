// Package cpulist reads and writes the kernel's CPU list format
// ("0-3,8,10-11"), as in /sys/devices/system/cpu/online and
// /sys/devices/system/node/node*/cpulist.
package cpulist

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// MaxCPU is the largest CPU number Parse accepts: the kernel's largest
// NR_CPUS is 8192 (x86 MAXSMP), so no /sys file or guest has CPU 8192. A
// bound is what keeps "0-99999999" from filling memory one CPU at a time.
const MaxCPU = 8191

// Parse reads a CPU list into ascending CPU numbers, none above MaxCPU.
func Parse(s string) ([]int, error) { return ParseMax(s, MaxCPU) }

// ParseMax reads a CPU list whose CPUs are at most last (a guest's last
// vCPU), rejecting a larger one before expanding its range.
func ParseMax(s string, last int) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	last = min(last, MaxCPU)
	seen := map[int]bool{}
	for _, part := range strings.Split(s, ",") {
		a, b, err := parseRange(part)
		if err != nil {
			return nil, fmt.Errorf("cpu list %q: %v", s, err)
		}
		if b > last {
			return nil, fmt.Errorf("cpu list %q: CPU %d is past the last CPU, %d: write CPUs within 0-%d", s, b, last, last)
		}
		for c := a; c <= b; c++ {
			seen[c] = true
		}
	}
	out := make([]int, 0, len(seen))
	for c := range seen {
		out = append(out, c)
	}
	sort.Ints(out)
	return out, nil
}

// parseRange reads "N" or "N-M" (N <= M).
func parseRange(part string) (lo, hi int, err error) {
	l, h, isRange := strings.Cut(part, "-")
	lo, err = strconv.Atoi(l)
	if errors.Is(err, strconv.ErrRange) {
		return 0, 0, fmt.Errorf("CPU %s is too large (write e.g. 0-3,8)", l)
	}
	if err != nil || lo < 0 {
		return 0, 0, fmt.Errorf("bad CPU %q (write e.g. 0-3,8)", l)
	}
	if !isRange {
		return lo, lo, nil
	}
	hi, err = strconv.Atoi(h)
	if errors.Is(err, strconv.ErrRange) {
		return 0, 0, fmt.Errorf("CPU %s is too large (write e.g. 0-3,8)", h)
	}
	if err != nil || hi < lo {
		return 0, 0, fmt.Errorf("bad range %q (write FIRST-LAST, e.g. 0-3)", part)
	}
	return lo, hi, nil
}

// Format writes CPU numbers as a list with ranges.
func Format(cpus []int) string {
	c := append([]int(nil), cpus...)
	sort.Ints(c)
	var parts []string
	for i := 0; i < len(c); {
		j := i
		for j+1 < len(c) && c[j+1] <= c[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(c[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", c[i], c[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}
