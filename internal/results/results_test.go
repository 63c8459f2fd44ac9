package results

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"lab/initramfs/protocol"
	"lab/internal/variant"
)

func res(bench string, p int, hits ...uint64) protocol.Result {
	r := protocol.Result{Benchmark: bench, Producers: p}
	for _, h := range hits {
		r.Samples = append(r.Samples, protocol.Sample{IntervalNS: 1e9, Hits: h})
	}
	return r
}

func toolRes(r protocol.Result) protocol.Result {
	r.Tool = "bpf-bench"
	return r
}

func TestScalingRatios(t *testing.T) {
	got := ScalingRatios([]protocol.Result{
		res("kretprobe", 1, 100, 100),
		res("kretprobe", 2, 196, 196),
		res("kretprobe", 4, 300, 300),
		res("uprobe-nop", 2, 50), // no 1-producer figure: no ratio
		{Benchmark: "uprobe-ret", Producers: 1, Error: "attach failed"},
		res("uprobe-ret", 2, 10),
		// The same benchmark measured by the kernel's bench: its own ratio.
		toolRes(res("kretprobe", 1, 50)),
		toolRes(res("kretprobe", 2, 150)),
	})
	want := []Ratio{{Benchmark: "kretprobe", Producers: 2, Value: 1.96}, {Benchmark: "kretprobe", Producers: 4, Value: 3},
		{Benchmark: "kretprobe", Tool: "bpf-bench", Producers: 2, Value: 3}}
	if len(got) != len(want) {
		t.Fatalf("ratios = %v, want %v", got, want)
	}
	for i := range want {
		if got[i].Benchmark != want[i].Benchmark || got[i].Tool != want[i].Tool || got[i].Producers != want[i].Producers || math.Abs(got[i].Value-want[i].Value) > 1e-9 {
			t.Errorf("ratio %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

// results.json carries its schema; an unversioned file (before schemas) is
// read, with a failed boot's message kept; a newer schema is refused.
func TestLoadSchemas(t *testing.T) {
	dir := t.TempDir()
	r := &Run{Lab: "t", Boots: []Boot{{Index: 1, Variant: "baseline"}, {Index: 2, Variant: "patched"}}}
	r.Boots[1].Fail(kindError{FailHang})
	if err := r.Save(filepath.Join(dir, "results.json")); err != nil {
		t.Fatal(err)
	}
	got, err := Load(filepath.Join(dir, "results.json"))
	if err != nil || got.Schema != Schema || got.Boots[1].Failure.Kind != FailHang || !got.Boots[0].OK() {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	legacy := filepath.Join(dir, "legacy.json")
	os.WriteFile(legacy, []byte(`{"lab":"t","boots":[{"index":1,"variant":"baseline","error":"kernel panic; console..."},{"index":2,"variant":"patched"}]}`), 0o644)
	got, err = Load(legacy)
	if err != nil || got.Boots[0].OK() || got.Boots[0].Failure.Kind != FailUnknown || !got.Boots[1].OK() {
		t.Fatalf("legacy: %+v, %v", got, err)
	}
	newer := filepath.Join(dir, "newer.json")
	os.WriteFile(newer, []byte(`{"schema":99,"lab":"t"}`), 0o644)
	if _, err := Load(newer); err == nil || !strings.Contains(err.Error(), "schema 99") {
		t.Errorf("newer schema: %v", err)
	}
	other := filepath.Join(dir, "other.json")
	os.WriteFile(other, []byte(`[1,2,3]`), 0o644)
	if _, err := Load(other); err == nil || !strings.Contains(err.Error(), "not a lab results file") {
		t.Errorf("another tool's JSON: %v", err)
	}
}

func TestSourceDiffers(t *testing.T) {
	deb := func(v, id string) Source {
		return Source{Desc: "Debian linux-source-6.12 " + v + "-1~deb12u1", ID: id, Version: v, Commit: "c1"}
	}
	for _, tc := range []struct {
		name string
		a, b Source
		want string // a word the message must hold; "" for none
	}{
		{"same tarball", deb("6.12.117", "tarball-aaa"), deb("6.12.117", "tarball-aaa"), ""},
		{"Debian's point release moved", deb("6.12.117", "tarball-aaa"), deb("6.12.118", "tarball-bbb"), "Linux 6.12.117 against Linux 6.12.118"},
		{"same version, rebuilt tarball", deb("6.12.118", "tarball-aaa"), deb("6.12.118", "tarball-bbb"), "same version"},
		{"one git tree, two bases", Source{ID: "git-1", Version: "6.12.0", Commit: "0123456789abcdef"}, Source{ID: "git-1", Version: "6.12.0", Commit: "fedcba9876543210"}, "0123456789ab against fedcba987654"},
		// A tarball's import commit carries the time of extraction: two
		// caches of one tarball have two commits for the same files.
		{"one tarball, two caches", Source{ID: "tarball-a", Version: "6.12.1", Commit: "c1"}, Source{ID: "tarball-a", Version: "6.12.1", Commit: "c2"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.a.Differs(tc.b)
			if (got == "") != (tc.want == "") || !strings.Contains(got, tc.want) {
				t.Errorf("Differs = %q, want one holding %q", got, tc.want)
			}
		})
	}
}

func TestCommitOfAVariant(t *testing.T) {
	one := &Run{Series: []Series{{Variant: variant.Patched, Variants: variant.Pair[string]{Baseline: "b", Patched: "p"}}}}
	several := &Run{Series: []Series{{Variant: "v1", Variants: variant.Pair[string]{Baseline: "b", Patched: "c1"}}, {Variant: "v2", Variants: variant.Pair[string]{Baseline: "b", Patched: "c2"}}}}
	for _, tc := range []struct {
		r    *Run
		v    variant.Variant
		want string
	}{
		{one, variant.Baseline, "b"}, {one, variant.Patched, "p"}, {&Run{}, variant.Baseline, ""},
		{several, variant.Baseline, "b"}, {several, "v1", "c1"}, {several, "v2", "c2"}, {several, variant.Patched, ""},
	} {
		if got := tc.r.Commit(tc.v); got != tc.want {
			t.Errorf("Commit(%s) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

// A record says what made it; one from before schema 4 gets its kind from
// the rest of it.
func TestKindOfAnOlderRecord(t *testing.T) {
	for _, tc := range []struct {
		name, json, want string
	}{
		{"run", `{"schema":3,"lab":"l","run_id":"20260101-000000","boots":[{"index":1}]}`, KindRun},
		{"build", `{"schema":3,"lab":"l","run_id":"build-20260101-000000","complete":true,"finished":"2026-01-01T00:00:00Z"}`, KindBuild},
		{"bisect", `{"schema":3,"lab":"l","run_id":"bisect-1","bisect":{"outcome":"found"}}`, KindBisect},
		{"track", `{"schema":3,"lab":"l","run_id":"track-1","bisect":{"outcome":"tracked"}}`, KindTrack},
		{"merge", `{"schema":3,"lab":"l","run_id":"m","merged":{"shards":["a"]},"boots":[{"index":1}]}`, KindMerge},
		{"schema 4 says", `{"schema":4,"kind":"merge","lab":"l","run_id":"x","boots":[{"index":1}]}`, KindMerge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := decode("results.json", []byte(tc.json))
			if err == nil {
				err = upgrade("results.json", []byte(tc.json), r)
			}
			if err != nil || r.Kind != tc.want {
				t.Errorf("kind %q (%v), want %q", r.Kind, err, tc.want)
			}
		})
	}
}

// A record's series are one list whatever schema wrote it: before schema
// 5 a run of one had its series as an object ("series"), whose kernel was
// patched, and a run of several had them in "series_list".
func TestSeriesOfAnOlderRecord(t *testing.T) {
	one := `{"name":"s","mode":"revert","sha256":"h","patches":[],"variant_commits":{"baseline":"b","patched":"p"}}`
	for _, tc := range []struct {
		name, json string
		want       []variant.Variant
		patched    string // the commit of the last kernel
	}{
		{"one series, schema 4", `{"schema":4,"lab":"l","run_id":"r","series":` + one + `}`, []variant.Variant{variant.Patched}, "p"},
		{"several, schema 4", `{"schema":4,"lab":"l","run_id":"r","series":` + one + `,"series_list":[` +
			`{"name":"s","variant":"v1","variant_commits":{"baseline":"b","patched":"c1"}},` +
			`{"name":"t","variant":"v2","variant_commits":{"baseline":"b","patched":"c2"}}]}`, []variant.Variant{"v1", "v2"}, "c2"},
		{"a track, schema 3", `{"schema":3,"lab":"l","run_id":"r","series":{"name":"","mode":"","sha256":"","patches":null,"variant_commits":{"baseline":"","patched":""}}}`, nil, ""},
		{"schema 5", `{"schema":5,"lab":"l","run_id":"r","series":[{"name":"s","variant":"v9","variant_commits":{"baseline":"b","patched":"c9"}}]}`, []variant.Variant{"v9"}, "c9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := decode("results.json", []byte(tc.json))
			if err == nil {
				err = upgrade("results.json", []byte(tc.json), r)
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := r.SeriesVariants(); !slices.Equal(got, tc.want) {
				t.Errorf("series' kernels %v, want %v", got, tc.want)
			}
			if len(tc.want) > 0 {
				if got := r.Commit(tc.want[len(tc.want)-1]); got != tc.patched {
					t.Errorf("commit of %s: %q, want %q", tc.want[len(tc.want)-1], got, tc.patched)
				}
				if r.Commit(variant.Baseline) != "b" {
					t.Errorf("baseline commit %q, want b", r.Commit(variant.Baseline))
				}
			}
		})
	}
}
