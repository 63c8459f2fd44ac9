package run

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"

	"lab/internal/kbuild"
	"lab/internal/results"
	"lab/internal/spec"
	"lab/internal/testbed"
	"lab/internal/variant"
)

// A manifest records what `lab build` (or any run that built) put in the
// cache for one lab and arch: its kernels and initramfs, with their
// provenance. `lab run --no-build` boots from it alone, so that boot jobs
// on a cluster need neither the kernel source nor a compiler, only the
// shared cache.

// manifestKey identifies a lab's build for one arch by what the build
// takes, by content: the source, the series and its mode, the config
// fragments and the guest tools. Not the lab file itself: its boots,
// shapes and benchmarks change no build, and a lab lab run --series made
// is built from one lab (without a file) and booted from the lab.yaml its
// run folder keeps (lab run RUN/lab.yaml --no-build).
func manifestKey(lab *spec.Lab, archName string, named []NamedSeries) (string, error) {
	h := sha256.New()
	// "manifest 2": a manifest's series became a list (results schema 5);
	// one an older lab wrote is not found, and lab build makes it again
	// from the kernels the cache holds.
	fmt.Fprintf(h, "manifest 2\narch %s\nmode %s\ntools %s\n", archName, lab.Mode, strings.Join(lab.Tools, ","))
	if len(named) == 0 {
		ser, err := lab.OpenSeries()
		if err != nil {
			return "", err
		}
		ser.Close()
		named = []NamedSeries{{Variant: variant.Patched, Series: ser}}
	}
	for _, n := range named {
		fmt.Fprintf(h, "series %s %s\n", n.Variant, n.Series.Hash())
	}
	frags := lab.Fragments(archName)
	for _, f := range frags {
		d, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("manifest: %w", err)
		}
		fmt.Fprintf(h, "fragment %s %x\n", filepath.Base(f), sha256.Sum256(d))
	}
	src := lab.Source
	fmt.Fprintf(h, "source %s %s %s\n", src.Tarball, src.Git, src.Base)
	return hex.EncodeToString(h.Sum(nil))[:24], nil
}

// manifest is one arch's part of Artifacts.
type manifest struct {
	Source    results.Source    `json:"source"`
	Series    []results.Series  `json:"series"`
	Kernels   []results.Kernel  `json:"kernels"`
	Initramfs results.Initramfs `json:"initramfs"`
}

func manifestPath(cache, key string) string { return filepath.Join(cache, "manifests", key+".json") }

// saveManifests records, per arch, what the run built. A run that built
// some of the lab's kernels (lab run --only) adds them to the manifest
// and keeps the others' entries: the key is the build's content, so an
// entry of another variant is as good as it was, and a --no-build boot
// job needs every kernel (a manifest cut down to the one variant a
// concurrent --only run built made a shard boot half its pairs).
func saveManifests(cache string, lab *spec.Lab, named []NamedSeries, art *Artifacts) error {
	for _, a := range lab.Matrix.Arch {
		key, err := manifestKey(lab, a, named)
		if err != nil {
			return err
		}
		m := manifest{Source: art.Source, Series: art.Series}
		for _, k := range art.Kernels {
			if k.Arch == a {
				m.Kernels = append(m.Kernels, k)
			}
		}
		for _, i := range art.Initramfs {
			if i.Arch == a {
				m.Initramfs = i
			}
		}
		if err := writeManifest(manifestPath(cache, key), m); err != nil {
			return err
		}
	}
	return nil
}

// writeManifest writes m at p, keeping the kernels of variants m lacks
// from the manifest there when it is of the same source. Concurrent runs of one lab take turns (a lock
// beside it), so that neither drops the other's variants.
func writeManifest(p string, m manifest) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	lock, err := os.OpenFile(p+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("manifest %s: %w", p, err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("lock manifest %s: %w", p, err)
	}
	var old manifest
	// Another source at the same path (a new point release of the tarball)
	// makes other kernels: its entries are not kept beside this one's.
	if data, err := os.ReadFile(p); err == nil && json.Unmarshal(data, &old) == nil && old.Source.ID == m.Source.ID {
		for _, k := range old.Kernels {
			if !slices.ContainsFunc(m.Kernels, func(n results.Kernel) bool { return n.Variant == k.Variant }) {
				m.Kernels = append(m.Kernels, k)
			}
		}
	}
	sort.SliceStable(m.Kernels, func(i, j int) bool { return m.Kernels[i].Variant < m.Kernels[j].Variant })
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

// ErrNotBuilt says the cache lacks what --no-build needs.
var ErrNotBuilt = errors.New("not in the cache: run `lab build` with the same lab file, flags and --cache first")

// loadManifests gives the artifacts of the lab from the cache alone, and
// checks every image against its recorded sha256 and that the kernels of
// every variant in want are there.
func loadManifests(cache string, lab *spec.Lab, named []NamedSeries, want []variant.Variant) (*Artifacts, error) {
	art := &Artifacts{}
	archs := append([]string(nil), lab.Matrix.Arch...)
	sort.Strings(archs)
	for _, a := range archs {
		key, err := manifestKey(lab, a, named)
		if err != nil {
			return nil, err
		}
		data, err := os.ReadFile(manifestPath(cache, key))
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("--no-build: %s kernels of %s: %w", a, lab.Name, ErrNotBuilt)
		} else if err != nil {
			return nil, err
		}
		var m manifest
		if err := json.Unmarshal(data, &m); err != nil {
			return nil, fmt.Errorf("--no-build: manifest %s: %w", manifestPath(cache, key), err)
		}
		for _, v := range want {
			if !slices.ContainsFunc(m.Kernels, func(k results.Kernel) bool { return k.Variant == v }) {
				return nil, fmt.Errorf("--no-build: no %s/%s kernel of %s in %s: %w", a, v, lab.Name, manifestPath(cache, key), ErrNotBuilt)
			}
		}
		b := &kbuild.Builder{CacheDir: cache}
		for _, k := range m.Kernels {
			if !slices.Contains(want, k.Variant) {
				continue
			}
			info, err := b.LookupKey(k.Info.Key)
			if err != nil {
				return nil, err
			}
			if info == nil {
				return nil, fmt.Errorf("--no-build: the %s/%s kernel (key %s) is gone from the cache or damaged: %w", k.Arch, k.Variant, k.Info.Key, ErrNotBuilt)
			}
			k.Info, k.Cached = testbed.RecordBuild(*info), true
			art.Kernels = append(art.Kernels, k)
		}
		// The cache may be mounted elsewhere than where it was built.
		m.Initramfs.Path = filepath.Join(cache, "initramfs", filepath.Base(m.Initramfs.Path))
		if _, err := os.Stat(m.Initramfs.Path); err != nil {
			return nil, fmt.Errorf("--no-build: the %s initramfs %s: %w", a, m.Initramfs.Path, ErrNotBuilt)
		}
		m.Initramfs.Cached = true
		art.Initramfs = append(art.Initramfs, m.Initramfs)
		art.Source, art.Series = m.Source, m.Series
	}
	return art, nil
}
