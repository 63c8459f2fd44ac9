// Package workpool makes numbered calls side by side, a bounded number at a
// time: the boots lab run and lab bisect run at once under icount, where a
// boot's figures are guest instructions that another guest does not move.
package workpool

import (
	"context"
	"errors"
	"sync"
)

// ErrNotStarted marks a call Run did not make: an earlier one stopped the
// batch.
var ErrNotStarted = errors.New("not started: an earlier boot stopped the batch")

// Run calls do(ctx, i) for i = 0..n-1, up to workers at a time, starting
// them in the order of i, and returns each call's error. When stops says an
// error ends the batch, no further call starts and the running ones are
// cancelled (they fail as interrupted): stop is the index of that first
// stopping error, the one to report, -1 when none stopped. With one worker
// the calls run one after the other, and a stopping error ends the batch
// as a plain loop would.
func Run(ctx context.Context, n, workers int, do func(ctx context.Context, i int) error, stops func(error) bool) (errs []error, stop int) {
	errs, stop = make([]error, n), -1
	for i := range errs {
		errs[i] = ErrNotStarted
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu   sync.Mutex
		next int
		wg   sync.WaitGroup
	)
	take := func() (int, bool) {
		mu.Lock()
		defer mu.Unlock()
		if stop >= 0 || next >= n {
			return 0, false
		}
		next++
		return next - 1, true
	}
	for w := 0; w < min(max(workers, 1), n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i, ok := take()
				if !ok {
					return
				}
				err := do(ctx, i)
				mu.Lock()
				errs[i] = err
				if err != nil && stop < 0 && stops(err) {
					stop = i
					cancel()
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errs, stop
}
