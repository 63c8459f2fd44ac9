// Command hostcpus measures how fast each host CPU runs a fixed user-space
// loop, alone and with every other CPU busy too, second by second. On a
// machine whose CPUs are shared with others (a cloud VM) their speeds differ
// and move, and so does the scaling rate(P)/rate(1) of anything measured on
// them: a wall-clock TCG guest's vCPU threads run on these CPUs.
//
//	go run ./bench/hostcpus [-rounds 10]
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// spin counts iterations of a loop that touches nothing shared, pinned to
// cpu, until stop is set.
func spin(cpu int, stop *atomic.Bool, n *atomic.Uint64) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("pin to CPU %d: %w", cpu, err)
	}
	x := uint64(1)
	for !stop.Load() {
		for i := 0; i < 1<<16; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
		n.Add(1 << 16)
	}
	if x == 0 {
		fmt.Print("") // keeps x alive
	}
	return nil
}

// rates runs the loop on cpus at once for d and returns each one's
// iterations per second (in millions).
func rates(cpus []int, d time.Duration) ([]float64, error) {
	var stop atomic.Bool
	counts := make([]atomic.Uint64, len(cpus))
	errs := make([]error, len(cpus))
	var wg sync.WaitGroup
	for i, c := range cpus {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = spin(c, &stop, &counts[i]) }()
	}
	start := time.Now()
	time.Sleep(d)
	stop.Store(true)
	wg.Wait()
	el := time.Since(start).Seconds()
	out := make([]float64, len(cpus))
	for i := range cpus {
		if errs[i] != nil {
			return nil, errs[i]
		}
		out[i] = float64(counts[i].Load()) / el / 1e6
	}
	return out, nil
}

func main() {
	rounds := flag.Int("rounds", 10, "rounds of: each CPU alone, then all at once")
	flag.Parse()
	n := runtime.NumCPU()
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	fmt.Printf("M loop iterations/s per host CPU (%d CPUs); 'all/sum(alone)' is 1.00 when CPUs do not slow each other\n", n)
	for r := 1; r <= *rounds; r++ {
		alone := make([]float64, n)
		sum := 0.0
		for c := 0; c < n; c++ {
			v, err := rates([]int{c}, time.Second)
			if err != nil {
				fmt.Fprintln(os.Stderr, "hostcpus:", err)
				os.Exit(1)
			}
			alone[c] = v[0]
			sum += v[0]
		}
		together, err := rates(all, time.Second)
		if err != nil {
			fmt.Fprintln(os.Stderr, "hostcpus:", err)
			os.Exit(1)
		}
		tot := 0.0
		for _, v := range together {
			tot += v
		}
		fmt.Printf("round %2d  alone %v  all %v  all/sum(alone) %.2f  fastest/slowest alone %.2f\n", r, fmtRates(alone), fmtRates(together), tot/sum, maxOf(alone)/minOf(alone))
	}
}

func fmtRates(v []float64) string {
	s := ""
	for i, x := range v {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%7.1f", x)
	}
	return "[" + s + "]"
}

func maxOf(v []float64) float64 {
	m := v[0]
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

func minOf(v []float64) float64 {
	m := v[0]
	for _, x := range v {
		m = min(m, x)
	}
	return m
}
