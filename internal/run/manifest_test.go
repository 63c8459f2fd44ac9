package run

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lab/internal/results"
	"lab/internal/series"
	"lab/internal/variant"
)

// A run that built one variant (--only) adds it to the lab's manifest and
// keeps the other's entry, whichever order the runs save in; a --no-build
// run that needs a variant the manifest lacks says which.
func TestManifestKeepsEveryVariant(t *testing.T) {
	cache := t.TempDir()
	lab := fakeLab(1, 1)
	lab.Series = filepath.Join(t.TempDir(), "series")
	if err := os.MkdirAll(lab.Series, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(lab.Series, "0001-a.patch"), []byte("From: a <a@b>\nSubject: [PATCH] x: y\n\n---\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	kernel := func(v variant.Variant, key string) results.Kernel {
		return results.Kernel{Arch: "x86_64", Variant: v, Info: results.Build{Key: key}}
	}
	onlyPatched := &Artifacts{Kernels: []results.Kernel{kernel(variant.Patched, "p2")}}
	if err := saveManifests(cache, lab, nil, onlyPatched); err != nil {
		t.Fatal(err)
	}
	_, err := loadManifests(cache, lab, nil, variant.Both)
	if !errors.Is(err, ErrNotBuilt) || !strings.Contains(err.Error(), "no x86_64/baseline kernel of fake") {
		t.Errorf("--no-build of both with only patched built: %v", err)
	}
	both := &Artifacts{Kernels: []results.Kernel{kernel(variant.Baseline, "b1"), kernel(variant.Patched, "p1")}}
	for _, art := range []*Artifacts{both, onlyPatched} {
		if err := saveManifests(cache, lab, nil, art); err != nil {
			t.Fatal(err)
		}
	}
	key, err := manifestKey(lab, "x86_64", nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, k := range readManifest(t, manifestPath(cache, key)).Kernels {
		got = append(got, string(k.Variant)+" "+k.Info.Key)
	}
	if strings.Join(got, ", ") != "baseline b1, patched p2" {
		t.Errorf("manifest after both, then --only patched: %v", got)
	}
	// A new point release at the tarball's path: the old baseline is not
	// this source's.
	onlyPatched.Source = results.Source{ID: "tarball-new"}
	if err := saveManifests(cache, lab, nil, onlyPatched); err != nil {
		t.Fatal(err)
	}
	if m := readManifest(t, manifestPath(cache, key)); len(m.Kernels) != 1 {
		t.Errorf("manifest of another source kept %d kernels: %+v", len(m.Kernels), m.Kernels)
	}
}

func readManifest(t *testing.T, p string) manifest {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// A run of several series has a manifest of its own, keyed by every series
// and the kernel it names: lab build --series v1 --series v2, then lab run
// with the same series and --no-build, finds every kernel and series.
func TestManifestOfSeveral(t *testing.T) {
	cache := t.TempDir()
	opt := severalOptions(t, "v1", "v2")
	lab := opt.Lab
	for i, n := range opt.Series {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "0001-a.patch"), []byte(fmt.Sprintf("From: a <a@b>\nSubject: [PATCH] x: %d\n\n---\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b%d\n", i, i)), 0o644)
		s, err := series.Open(dir, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		n.Series = s
		opt.Series[i] = n
	}
	kernel := func(v variant.Variant) results.Kernel { return results.Kernel{Arch: "x86_64", Variant: v} }
	art := &Artifacts{Kernels: []results.Kernel{kernel(variant.Baseline), kernel("v1"), kernel("v2")},
		Series: []results.Series{{Name: "s1", Variant: "v1"}, {Name: "s2", Variant: "v2"}}}
	if err := saveManifests(cache, lab, opt.Series, art); err != nil {
		t.Fatal(err)
	}
	if _, err := loadManifests(cache, lab, opt.Series[:1], variant.Kernels([]variant.Variant{"v1"})); !errors.Is(err, ErrNotBuilt) {
		t.Errorf("v1 alone found the manifest of v1 and v2: %v", err)
	}
	key, err := manifestKey(lab, "x86_64", opt.Series)
	if err != nil {
		t.Fatal(err)
	}
	m := readManifest(t, manifestPath(cache, key))
	if len(m.Kernels) != 3 || len(m.Series) != 2 || m.Series[1].Variant != "v2" {
		t.Errorf("manifest %+v", m)
	}
}
