package spec

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"lab/internal/variant"
)

// Host is what a lab is checked against on the machine that runs it, and
// what Default makes a lab for.
type Host struct {
	MemoryMiB int64 // RAM (MemTotal); 0: unknown, not checked
	CPUs      int   // host CPUs
	// KVMArch is the arch whose guests KVM runs here, "" when none does
	// (TCG only). ReadHost leaves it to the caller: package vm decides
	// it (vm.ChooseAccel), and reading a lab file does not need it.
	KVMArch string
}

// ReadHost reads this machine's RAM from /proc/meminfo, and its CPUs.
func ReadHost() Host {
	h := readHost("/proc/meminfo")
	h.CPUs = runtime.NumCPU()
	return h
}

func readHost(meminfo string) Host {
	f, err := os.Open(meminfo)
	if err != nil {
		return Host{}
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var kib int64
		if _, err := fmt.Sscanf(sc.Text(), "MemTotal: %d kB", &kib); err == nil {
			return Host{MemoryMiB: kib / 1024}
		}
	}
	return Host{}
}

// MaxMeasure bounds the time a run spends measuring: a lab that would
// measure for days holds a typo (duration: 5m for 5s, boots: 500), not a
// plan; lab says what would fit instead of starting it.
const MaxMeasure = 24 * time.Hour

// MinSample is the shortest sample lab takes. Under icount a sample
// shorter than a second repeats as well as a second does (the guest's
// clock is its instruction count) and costs the host less, but the
// one-off cost of the producers' start is a larger share of it: the icount
// floor grows as the sample shortens (verdict.MinICountFloorPctFor), 0.1 %
// at this length.
const MinSample = 100 * time.Millisecond

// Sample is one sample's length: a second, as the kernel's bench samples,
// or the whole duration when that is shorter (one sample).
func (m *Matrix) Sample() time.Duration { return min(m.Duration.Duration, time.Second) }

// validateTimes checks duration and warm-up: whole samples (the guest is
// told a number of samples: 1.5s would become 1s), and a run that measures
// for at most MaxMeasure, booting each of its kernels (2: baseline and
// patched; a lab of several, one more per series).
func (m *Matrix) validateTimes(at func(msg string, keys ...string) error, kernels int) error {
	d, w, iv := m.Duration.Duration, m.Warmup.Duration, m.Sample()
	switch {
	case d < MinSample:
		return at(fmt.Sprintf("duration %v: want at least %v (one sample)", d, MinSample), "matrix", "duration")
	case d < time.Second && d%time.Millisecond != 0:
		return at(fmt.Sprintf("duration %v: lab measures whole milliseconds: write %v", d, d.Round(time.Millisecond)), "matrix", "duration")
	case d%iv != 0:
		return at(fmt.Sprintf("duration %v: lab measures whole seconds (one sample a second): write %v or %v", d, d.Truncate(time.Second), d.Truncate(time.Second)+time.Second), "matrix", "duration")
	case w < 0:
		return at(fmt.Sprintf("warmup %v: want 0 (no warm-up) or more", w), "matrix", "warmup")
	case w%iv != 0:
		unit := "whole seconds"
		if iv != time.Second {
			unit = fmt.Sprintf("whole samples of %v", iv)
		}
		return at(fmt.Sprintf("warmup %v: lab warms up %s: write %v or %v", w, unit, w.Truncate(iv), w.Truncate(iv)+iv), "matrix", "warmup")
	}
	units := m.measureUnits()
	total := float64(m.Boots) * float64(kernels) * units * (d + w).Seconds()
	if total <= MaxMeasure.Seconds() {
		return nil
	}
	key := "boots"
	if d >= time.Minute || w >= time.Minute {
		key = "duration"
	}
	return at(fmt.Sprintf("this run would measure for %s (%d boots × %d variants × %g benchmark runs per boot × (%s + %s warm-up)): lab runs at most %s; %s",
		human(total), m.Boots, kernels, units, short(d), short(w), short(MaxMeasure), m.whatFits(units, kernels)), "matrix", key)
}

// measureUnits is how many benchmark runs (a benchmark at a producer
// count) one boot of each variant makes, summed over every arch and shape.
func (m *Matrix) measureUnits() float64 {
	numa := max(len(m.NUMA), 1)
	if m.NUMALayout != nil {
		numa = 1
	}
	var units float64
	for _, c := range m.CPUs {
		units += float64(len(m.JobBenchmarks()) * len(m.ProducersFor(c)) * numa)
	}
	return units * float64(len(m.Arch))
}

// whatFits says which duration or boots would keep the run within
// MaxMeasure.
func (m *Matrix) whatFits(units float64, kernels int) string {
	var ok []string
	perBoot := float64(kernels) * units
	if d := math.Floor(MaxMeasure.Seconds()/(float64(m.Boots)*perBoot)) - m.Warmup.Seconds(); d >= 1 {
		ok = append(ok, fmt.Sprintf("duration: %s", short(time.Duration(min(d, m.Duration.Seconds())*float64(time.Second)))))
	}
	if b := math.Floor(MaxMeasure.Seconds() / (perBoot * (m.Duration.Seconds() + m.Warmup.Seconds()))); b >= 1 {
		ok = append(ok, fmt.Sprintf("boots: %d", int(min(b, float64(m.Boots)))))
	}
	if len(ok) == 0 {
		return "fewer benchmarks, producer counts or shapes would fit"
	}
	return "with the rest as it is, " + strings.Join(ok, " or ") + " would fit"
}

// human writes seconds as days, hours and minutes.
func human(secs float64) string {
	if secs > 1e9 {
		return fmt.Sprintf("%.0f years", secs/(365*24*3600))
	}
	d := (time.Duration(secs) * time.Second).Round(time.Minute)
	days := int(d / (24 * time.Hour))
	if days == 0 {
		return short(d)
	}
	if rest := d % (24 * time.Hour); rest != 0 {
		return fmt.Sprintf("%dd %s", days, short(rest))
	}
	return fmt.Sprintf("%dd", days)
}

// short is d without zero minutes and seconds: 24h, 5m, 1h30m.
func short(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// checkName rejects a name that becomes part of a path (results/<name>/,
// patches/<series>/, kernel-config/<fragment>) but could leave its folder
// or hide in it: separators, "..", a leading dot, or anything outside
// [A-Za-z0-9._-].
func checkName(what, name string) error {
	switch {
	case strings.ContainsAny(name, `/\`):
		return fmt.Errorf("%s %q: a name, not a path: write it without / (it becomes a folder or file name)", what, name)
	case strings.HasPrefix(name, "."):
		return fmt.Errorf("%s %q: a name cannot start with a dot (it becomes a folder or file name)", what, name)
	case strings.Contains(name, ".."):
		return fmt.Errorf("%s %q: a name cannot hold \"..\" (it becomes a folder or file name)", what, name)
	case strings.IndexFunc(name, func(r rune) bool { return !nameRune(r) }) >= 0:
		return fmt.Errorf("%s %q: use only letters, digits, '.', '_' and '-' (it becomes a folder or file name)", what, name)
	}
	return nil
}

func nameRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-'
}

// firstDup is the first item that appears twice in s, "" when none.
func firstDup[T comparable](s []T) string {
	seen := map[T]bool{}
	for _, x := range s {
		if seen[x] {
			return fmt.Sprint(x)
		}
		seen[x] = true
	}
	return ""
}

func joinInts(x []int) string {
	var s []string
	for _, v := range x {
		s = append(s, strconv.Itoa(v))
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// validateVersions checks a lab of several series (versions:): two or
// more, each named as a variant (a path-safe word, not "baseline") once,
// each with its series; and no series: beside them.
func (l *Lab) validateVersions(at func(msg string, keys ...string) error) error {
	if l.Series != "" {
		return at("give series: (one series) or versions: (several), not both", "versions")
	}
	if len(l.Versions) < 2 {
		return at(fmt.Sprintf("versions: %d series: a lab of several needs two or more (one is series:)", len(l.Versions)), "versions")
	}
	seen := map[string]bool{}
	for i, v := range l.Versions {
		key := fmt.Sprint(i)
		if _, err := variant.Name(v.Name); err != nil {
			return at("versions: "+err.Error(), "versions", key, "name")
		}
		if seen[v.Name] {
			return at(fmt.Sprintf("versions: two are named %s: each names a kernel and a report column", v.Name), "versions", key, "name")
		}
		seen[v.Name] = true
		if v.Series == "" {
			return at(fmt.Sprintf("versions: %s has no series: (a folder under patches/, or a path such as ./v2.mbx)", v.Name), "versions", key)
		}
		if !isPath(v.Series) {
			if err := checkName("series", v.Series); err != nil {
				return at("versions: "+err.Error(), "versions", key, "series")
			}
		}
	}
	return nil
}
