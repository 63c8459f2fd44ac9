package main

import (
	"fmt"
	"io"
	"strings"

	"lab/internal/run"
	"lab/internal/series"
	"lab/internal/spec"
	"lab/internal/variant"
)

// openSeriesList opens every series of lab run --series A --series B ... (a
// run of several series) and names each as its kernel's variant; done
// closes them. Standard input holds one series: "-" is refused, as is a
// series given twice.
func openSeriesList(paths []string, stdin io.Reader) (named []run.NamedSeries, done func(), err error) {
	var opened []*series.Series
	closeAll := func() {
		for _, s := range opened {
			s.Close()
		}
	}
	defer func() {
		if err != nil {
			closeAll()
		}
	}()
	seen := map[string]bool{}
	for _, p := range paths {
		switch {
		case p == "-":
			return nil, nil, usagef("--series -: standard input holds one series; give each of several series as a file or folder")
		case seen[p]:
			return nil, nil, usagef("--series %s given twice: each series of a run is a kernel of its own", p)
		}
		seen[p] = true
		s, err := openSeriesFlag(p, stdin)
		if err != nil {
			return nil, nil, err
		}
		opened = append(opened, s)
	}
	names := seriesNames(opened)
	for i, s := range opened {
		v, err := variant.Name(names[i])
		if err != nil {
			return nil, nil, fmt.Errorf("--series %s: %w", paths[i], err)
		}
		named = append(named, run.NamedSeries{Variant: v, Series: s})
	}
	return named, closeAll, nil
}

// seriesNames names the series of a run of several: by their versions
// ("v1", "v2": the cover letters' [PATCH v2 0/n]) when those tell them
// apart, else by their names (the file's, made path-safe), else by their
// place ("series1", "series2"). "baseline" is the kernel without any.
func seriesNames(list []*series.Series) []string {
	distinct := func(names []string) bool {
		seen := map[string]bool{}
		for _, n := range names {
			if seen[n] || variant.Variant(n) == variant.Baseline {
				return false
			}
			if _, err := variant.Name(n); err != nil {
				return false
			}
			seen[n] = true
		}
		return true
	}
	var versions, names, places []string
	for i, s := range list {
		versions = append(versions, fmt.Sprintf("v%d", max(s.Version, 1)))
		names = append(names, strings.TrimSuffix(spec.NameFor(s), "."))
		places = append(places, fmt.Sprintf("series%d", i+1))
	}
	for _, c := range [][]string{versions, names} {
		if distinct(c) {
			return c
		}
	}
	return places
}

// openVersions opens the series of a lab of several (versions:), each
// named as the lab names it; done closes them. Only lab run measures
// several.
func openVersions(lab *spec.Lab, command string) (named []run.NamedSeries, done func(), err error) {
	if command != "run" && command != "build" {
		return nil, nil, usagef("%s takes one series, and lab %s has %d (versions:): several are for lab run and lab build", command, lab.Name, len(lab.Versions))
	}
	closeAll := func() {
		for _, n := range named {
			n.Series.Close()
		}
	}
	for i, v := range lab.Versions {
		s, err := lab.OpenVersion(i)
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("%s: versions: %s: %w", lab.Path, v.Name, err)
		}
		named = append(named, run.NamedSeries{Variant: variant.Variant(v.Name), Series: s})
	}
	return named, closeAll, nil
}
