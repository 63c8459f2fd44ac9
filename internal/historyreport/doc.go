// Package historyreport writes what people and other tools read of lab's
// history, as package lines analyses it: tables of every line, one offline
// HTML page, a regression mail in the form of the kernel test robot's
// (LKP), and exports to Apache Otava's CSV and Bencher's BMF JSON. Each is
// rendered to cells once, which every format lays out.
package historyreport

import (
	"context"

	"lab/internal/history"
	"lab/internal/lines"
)

// History is the history as package lines analysed it, with its writers.
type History struct{ *lines.History }

// Load reads the history and analyses it (lines.Load) for the writers.
func Load(ctx context.Context, s *history.Store, opt lines.Options) (*History, error) {
	h, err := lines.Load(ctx, s, opt)
	if err != nil {
		return nil, err
	}
	return &History{h}, nil
}
