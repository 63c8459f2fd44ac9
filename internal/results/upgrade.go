package results

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"lab/internal/topology"
)

// upgrade brings a file of an older schema to this one, and refuses a
// schema this lab does not know. The rules, oldest first:
//
//   - 0 (no "schema"): a failed boot had only its message ("error"); it
//     becomes a failure of kind FailUnknown.
//   - 0 to 3: no kind; it is read from the rest (kindBefore4).
//   - 0 to 2: the matrix, the claims and the kernels' build inputs were the
//     working types of the lab file and the build (Go field names, e.g.
//     "ClipProducers", and durations as {"Duration": ns}); QMP's vCPUs had
//     QMP's hyphenated names ("cpu-index"). Schema 3 has record types of
//     its own, in snake_case ("clip_producers", "duration_ns").
//
// data is the file; r is it decoded as this schema, which ignores the
// old names: upgrade reads them from data.
func upgrade(path string, data []byte, r *Run) error {
	if r.Schema < 0 || r.Schema > Schema {
		return fmt.Errorf("%s: results schema %d; this lab reads %d and older: use a newer lab", path, r.Schema, Schema)
	}
	if r.Schema == 0 {
		if err := upgradeFailures(data, r); err != nil {
			return fmt.Errorf("%s: results without a schema: %w", path, err)
		}
	}
	if r.Schema < 3 {
		if err := upgradeV2(data, r); err != nil {
			return fmt.Errorf("%s: results schema %d: %w", path, r.Schema, err)
		}
	}
	// Before the merged field, only the command line said that lab merge
	// made a run.
	if r.Merged == nil && r.Shard == nil && len(r.Command) > 1 && r.Command[1] == "merge" {
		r.Merged = &Merged{}
	}
	if r.Schema < 4 {
		r.Kind = kindBefore4(r)
	}
	return nil
}

// kindBefore4 is what made a record before it said so (schema 4): a track
// was a bisect whose outcome was "tracked", a merge had Merged, a build no
// boots and a run id starting "build-".
func kindBefore4(r *Run) string {
	switch {
	case r.Bisect != nil && r.Bisect.Outcome == Tracked:
		return KindTrack
	case r.Bisect != nil:
		return KindBisect
	case r.Merged != nil:
		return KindMerge
	case len(r.Boots) == 0 && strings.HasPrefix(r.RunID, "build-"):
		return KindBuild
	}
	return KindRun
}

// upgradeFailures: before schemas, a failed boot had only its message.
func upgradeFailures(data []byte, r *Run) error {
	var old struct {
		Boots []struct {
			Error string `json:"error"`
		} `json:"boots"`
	}
	if err := json.Unmarshal(data, &old); err != nil {
		return err
	}
	for i, b := range old.Boots {
		if b.Error != "" && i < len(r.Boots) && r.Boots[i].Failure == nil {
			r.Boots[i].Failure = &Failure{Kind: FailUnknown, Message: b.Error}
		}
	}
	return nil
}

// upgradeV2 reads what schemas 0 to 2 wrote under other names.
func upgradeV2(data []byte, r *Run) error {
	var old struct {
		Matrix  matrixV2   `json:"matrix"`
		Claims  []claimV2  `json:"claims"`
		Kernels []kernelV2 `json:"kernels"`
		Boots   []struct {
			QEMU *struct {
				VCPUs []vcpuV2 `json:"vcpus"`
			} `json:"qemu"`
		} `json:"boots"`
		Bisect *struct {
			Steps []struct {
				Kernel *kernelV2 `json:"kernel"`
			} `json:"steps"`
		} `json:"bisect"`
	}
	if err := json.Unmarshal(data, &old); err != nil {
		return err
	}
	r.Matrix = old.Matrix.record()
	r.Claims = nil
	for _, c := range old.Claims {
		r.Claims = append(r.Claims, Claim(c))
	}
	for i := range r.Kernels {
		if i < len(old.Kernels) {
			r.Kernels[i].Info.Inputs = BuildInputs(old.Kernels[i].Build.Inputs)
		}
	}
	for i := range r.Boots {
		if i < len(old.Boots) && old.Boots[i].QEMU != nil && r.Boots[i].Outcome != nil {
			r.Boots[i].Outcome.VCPUs = nil
			for _, v := range old.Boots[i].QEMU.VCPUs {
				r.Boots[i].Outcome.VCPUs = append(r.Boots[i].Outcome.VCPUs, VCPU{Index: v.Index, ThreadID: v.ThreadID, Props: VCPUProps(v.Props), Target: v.Target})
			}
		}
	}
	if r.Bisect != nil && old.Bisect != nil {
		for i := range r.Bisect.Steps {
			if i < len(old.Bisect.Steps) && old.Bisect.Steps[i].Kernel != nil && r.Bisect.Steps[i].Kernel != nil {
				r.Bisect.Steps[i].Kernel.Info.Inputs = BuildInputs(old.Bisect.Steps[i].Kernel.Build.Inputs)
			}
		}
	}
	return nil
}

// matrixV2 is the lab file's matrix as schemas 0 to 2 wrote it: Go's field
// names, durations as objects.
type matrixV2 struct {
	Arch          []string         `json:"Arch"`
	CPUs          []int            `json:"CPUs"`
	Memory        string           `json:"Memory"`
	Benchmarks    []string         `json:"Benchmarks"`
	Producers     []int            `json:"Producers"`
	ClipProducers bool             `json:"ClipProducers"`
	Boots         int              `json:"Boots"`
	Duration      durationV2       `json:"Duration"`
	Warmup        durationV2       `json:"Warmup"`
	Measure       string           `json:"Measure"`
	Affinity      *bool            `json:"Affinity"`
	MaxActive     int              `json:"MaxActive"`
	Controls      *bool            `json:"Controls"`
	NUMA          []int            `json:"NUMA"`
	NUMALayout    *topology.Layout `json:"NUMALayout"`
	Sockets       int              `json:"Sockets"`
	Clusters      int              `json:"Clusters"`
	Cores         int              `json:"Cores"`
	Threads       int              `json:"Threads"`
	Pin           string           `json:"Pin"`
}

// durationV2 is a duration as schemas 0 to 2 wrote it: {"Duration": ns}.
type durationV2 struct {
	Duration time.Duration `json:"Duration"`
}

func (m matrixV2) record() Matrix {
	return Matrix{
		Arch: m.Arch, CPUs: m.CPUs, Memory: m.Memory, Benchmarks: m.Benchmarks, Producers: m.Producers,
		ClipProducers: m.ClipProducers, Boots: m.Boots, Duration: m.Duration.Duration, Warmup: m.Warmup.Duration,
		Measure: m.Measure, Affinity: m.Affinity, MaxActive: m.MaxActive, Controls: m.Controls,
		NUMA: m.NUMA, NUMALayout: m.NUMALayout, Sockets: m.Sockets, Clusters: m.Clusters, Cores: m.Cores,
		Threads: m.Threads, Pin: m.Pin,
	}
}

// claimV2 is a claim as schemas 0 to 2 wrote it.
type claimV2 struct {
	Benchmark string `json:"Benchmark"`
	Producers []int  `json:"Producers"`
	Direction string `json:"Direction"`
	Min       string `json:"Min"`
	Scaling   bool   `json:"Scaling"`
	Note      string `json:"Note"`
}

// kernelV2 is the part of a kernel that schemas 0 to 2 wrote with Go's
// field names: its build inputs (older files also have Mode, SeriesHash
// and Variant there, which no lab reads).
type kernelV2 struct {
	Build struct {
		Inputs struct {
			Tree      string   `json:"Tree"`
			Arch      string   `json:"Arch"`
			Fragments []string `json:"Fragments"`
			Compiler  string   `json:"Compiler"`
			SourceID  string   `json:"SourceID"`
			Commit    string   `json:"Commit"`
		} `json:"inputs"`
	} `json:"build"`
}

// vcpuV2 is a vCPU with QMP's names, as schemas 0 to 2 wrote it.
type vcpuV2 struct {
	Index    int `json:"cpu-index"`
	ThreadID int `json:"thread-id"`
	Props    struct {
		Socket  int `json:"socket-id"`
		Cluster int `json:"cluster-id"`
		Core    int `json:"core-id"`
		Thread  int `json:"thread-id"`
		Node    int `json:"node-id"`
	} `json:"props"`
	Target string `json:"target"`
}
