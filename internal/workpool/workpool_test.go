package workpool

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

func TestRun(t *testing.T) {
	fail := errors.New("fails")
	for _, tc := range []struct {
		name       string
		n, workers int
		failAt     int // -1: none
		wantStop   int
		wantRan    int // calls made, at most
	}{
		{name: "serial", n: 5, workers: 1, failAt: -1, wantStop: -1, wantRan: 5},
		{name: "two at once", n: 5, workers: 2, failAt: -1, wantStop: -1, wantRan: 5},
		{name: "more workers than calls", n: 2, workers: 8, failAt: -1, wantStop: -1, wantRan: 2},
		{name: "serial, stops at the third", n: 5, workers: 1, failAt: 2, wantStop: 2, wantRan: 3},
		{name: "two at once, stops at the first", n: 6, workers: 2, failAt: 0, wantStop: 0, wantRan: 2},
		{name: "none", n: 0, workers: 2, failAt: -1, wantStop: -1, wantRan: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			ran, running, most := 0, 0, 0
			errs, stop := Run(context.Background(), tc.n, tc.workers, func(ctx context.Context, i int) error {
				mu.Lock()
				ran++
				running++
				most = max(most, running)
				mu.Unlock()
				defer func() { mu.Lock(); running--; mu.Unlock() }()
				if i == tc.failAt {
					return fail
				}
				select {
				case <-time.After(2 * time.Millisecond):
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			}, func(error) bool { return true })
			if stop != tc.wantStop {
				t.Errorf("stop = %d, want %d (errs %v)", stop, tc.wantStop, errs)
			}
			if ran > tc.wantRan || (tc.failAt < 0 && ran != tc.wantRan) {
				t.Errorf("%d calls made, want %d", ran, tc.wantRan)
			}
			if most > max(tc.workers, 1) {
				t.Errorf("%d calls at once with %d workers", most, tc.workers)
			}
			if tc.failAt < 0 && tc.n >= tc.workers && most != tc.workers {
				t.Errorf("at most %d calls at once, want %d", most, tc.workers)
			}
			notStarted := 0
			for i, err := range errs {
				switch {
				case errors.Is(err, ErrNotStarted):
					notStarted++
				case tc.failAt < 0 && err != nil:
					t.Errorf("call %d: %v", i, err)
				}
			}
			if notStarted != tc.n-ran {
				t.Errorf("%d calls marked not started, %d of %d made", notStarted, ran, tc.n)
			}
		})
	}
}

// Only an error stops says so ends the batch; it cancels the calls still
// running, and the first stopping error is the one reported.
func TestStops(t *testing.T) {
	skip, fatal := errors.New("skip"), errors.New("fatal")
	errs, stop := Run(context.Background(), 6, 2, func(ctx context.Context, i int) error {
		switch i {
		case 0:
			return skip
		case 1:
			<-ctx.Done() // runs until the stopping error cancels it
			return ctx.Err()
		case 2:
			return fatal
		}
		return nil
	}, func(err error) bool { return errors.Is(err, fatal) })
	if stop != 2 || !errors.Is(errs[0], skip) || !errors.Is(errs[1], context.Canceled) {
		t.Errorf("stop %d, errs %v: want the fatal call's index, the skip kept, the running call cancelled", stop, errs)
	}
	for i := 3; i < len(errs); i++ {
		if !errors.Is(errs[i], ErrNotStarted) {
			t.Errorf("call %d after the stop: %v", i, errs[i])
		}
	}
}
