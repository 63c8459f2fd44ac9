package watch

import (
	"path/filepath"
	"strings"
	"testing"

	"lab/internal/listseries"
	"lab/internal/spec"
)

// The shipped labs split a list between them by the paths they measure:
// an mm patch goes to mm-fault, never to the probe labs; a futex patch to
// futex; a patch none of them measures to none.
func TestShippedLabsPickTheirSeries(t *testing.T) {
	var c Config
	for _, name := range []string{"watch-probes", "mm-fault", "futex", "sched-pipe"} {
		lab, err := spec.Load(filepath.Join("..", "..", "labs", name+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if len(lab.Watch.Paths) == 0 {
			t.Fatalf("labs/%s.yaml has no watch: paths:", name)
		}
		c.Labs = append(c.Labs, Lab{Spec: lab, Paths: lab.Watch.Paths})
	}
	for _, tc := range []struct {
		files []string
		want  string
	}{
		{[]string{"mm/memory.c"}, "mm-fault"},
		{[]string{"mm/mmap.c", "include/linux/mm.h"}, "mm-fault"},
		{[]string{"arch/x86/mm/fault.c"}, "mm-fault"},
		{[]string{"kernel/futex/core.c", "kernel/futex/futex.h"}, "futex"},
		{[]string{"kernel/sched/fair.c"}, "sched-pipe"},
		{[]string{"kernel/events/uprobes.c"}, "watch-probes"},
		{[]string{"fs/ext4/inode.c"}, ""},
	} {
		p := &listseries.Posting{Patches: []*listseries.Message{{Subject: "[PATCH] a change", Files: tc.files}}}
		lab, why := c.match(p)
		got := ""
		if lab != nil {
			got = lab.Spec.Name
		}
		if got != tc.want {
			t.Errorf("a patch to %s: lab %q (%s), want %q", strings.Join(tc.files, ", "), got, why, tc.want)
		}
	}
}
