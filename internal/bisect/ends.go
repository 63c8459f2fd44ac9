package bisect

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// endsCache is what lab bisect --run keeps of the ends between the steps
// of one git bisect: under icount their figures repeat, so the ends are
// booted once for the whole bisect, not once per step.
type endsCache struct {
	Good []Obs `json:"good"`
	Bad  []Obs `json:"bad"`
}

// endsPath is the ends' cache file: keyed by both ends' kernel images, the
// shape and the job (the figure and its controls).
func (b *bisector) endsPath() string {
	h := sha256.New()
	job, _ := b.plan.Job.Encode()
	fmt.Fprintf(h, "good=%s\nbad=%s\narch=%s\nshape=%s\naccel=%s\nclock=%s\njob=%s\nfigure=%s\n",
		b.steps[0].Kernel.Info.ImageSHA256, b.steps[len(b.steps)-1].Kernel.Info.ImageSHA256,
		b.plan.Arch.Name, b.plan.Shape, b.plan.Accel.Name, b.plan.Clock, job, b.fig)
	return filepath.Join(b.opt.CacheDir, "bisect-ends", hex.EncodeToString(h.Sum(nil))[:24]+".json")
}

func (b *bisector) loadEnds() {
	b.ends = &endsCache{}
	data, err := os.ReadFile(b.endsPath())
	if err != nil || json.Unmarshal(data, b.ends) != nil {
		b.ends = &endsCache{}
		return
	}
	from := "an earlier lab bisect --run of the same ends (" + b.endsPath() + ")"
	b.give(0, b.ends.Good, from)
	b.give(len(b.steps)-1, b.ends.Bad, from)
}

func (b *bisector) saveEnd(k int, o Obs) {
	if k == 0 {
		b.ends.Good = append(b.ends.Good, o)
	} else {
		b.ends.Bad = append(b.ends.Bad, o)
	}
	path := b.endsPath()
	data, _ := json.MarshalIndent(b.ends, "", "  ")
	if os.MkdirAll(filepath.Dir(path), 0o755) == nil && os.WriteFile(path+".tmp", data, 0o644) == nil {
		os.Rename(path+".tmp", path)
	}
}
