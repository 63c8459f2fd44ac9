package run

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lab/internal/results"
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
	if err := saveManifests(cache, lab, onlyPatched); err != nil {
		t.Fatal(err)
	}
	_, err := loadManifests(cache, lab, variant.Both)
	if !errors.Is(err, ErrNotBuilt) || !strings.Contains(err.Error(), "no x86_64/baseline kernel of fake") {
		t.Errorf("--no-build of both with only patched built: %v", err)
	}
	both := &Artifacts{Kernels: []results.Kernel{kernel(variant.Baseline, "b1"), kernel(variant.Patched, "p1")}}
	for _, art := range []*Artifacts{both, onlyPatched} {
		if err := saveManifests(cache, lab, art); err != nil {
			t.Fatal(err)
		}
	}
	key, err := manifestKey(lab, "x86_64")
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
