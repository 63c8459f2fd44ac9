package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	"lab/initramfs/protocol"
)

const tracefs = "/sys/kernel/tracing"

// tracefsKretprobe measures the loop's call rate with a tracefs kretprobe event
// ("r[MAXACTIVE]:lab/NAME SYMBOL") enabled, as the objpool series' flock test
// did with a kretprobe module, and records kprobe_profile's hits and misses
// (a miss: no free return instance, the freelist/objpool's job).
func tracefsKretprobe(res *protocol.Result, symbol string, p int, job protocol.Job, loop string) error {
	pf, err := probeFree(p, job, loop)
	if err != nil {
		return err
	}
	res.ProbeFree = pf
	event := "labflock"
	def := "r"
	if job.MaxActive > 0 {
		def = fmt.Sprintf("r%d", job.MaxActive)
	}
	def += ":lab/" + event + " " + symbol
	res.Attach = "tracefs " + def
	if err := appendFile(tracefs+"/kprobe_events", def); err != nil {
		return fmt.Errorf("add %q: %w", def, err)
	}
	defer appendFile(tracefs+"/kprobe_events", "-:lab/"+event)
	enable := tracefs + "/events/lab/" + event + "/enable"
	if err := os.WriteFile(enable, []byte("1"), 0); err != nil {
		return fmt.Errorf("enable %s: %w", event, err)
	}
	err = measure(res, p, job, nil, loop)
	os.WriteFile(enable, []byte("0"), 0)
	if hits, misses, perr := profile("lab/" + event); perr == nil {
		res.Counters = map[string]uint64{"kprobe_profile_hits": hits, "kprobe_profile_misses": misses}
	}
	return err
}

func appendFile(path, line string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(line + "\n"); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// profile reads an event's hit and miss counts from kprobe_profile.
func profile(event string) (hits, misses uint64, err error) {
	f, err := os.Open(tracefs + "/kprobe_profile")
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 3 && (fields[0] == event || strings.HasSuffix(event, "/"+fields[0])) {
			fmt.Sscan(fields[1], &hits)
			fmt.Sscan(fields[2], &misses)
			return hits, misses, nil
		}
	}
	return 0, 0, fmt.Errorf("%s not in kprobe_profile", event)
}
