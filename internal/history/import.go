package history

import (
	"context"
	"fmt"

	"lab/internal/runfolder"
)

// Saved is a run folder read as the history records it, and how many of
// its boots an import added (the others were there already).
type Saved struct {
	Dir   string
	Run   *Run
	Added int
}

// ReadSaved reads run folders (of lab run, merge, bisect or track) as the
// history's records, every one before any is added: a folder that is not
// a run fails the whole import.
func ReadSaved(dirs []string) ([]Saved, error) {
	var out []Saved
	for _, d := range dirs {
		_, r, err := runfolder.Load(d)
		if err != nil {
			return nil, fmt.Errorf("history import: %w", err)
		}
		h, err := FromRun(r)
		if err != nil {
			return nil, fmt.Errorf("history import %s: %w", d, err)
		}
		out = append(out, Saved{Dir: d, Run: h})
	}
	return out, nil
}

// Import adds the saved runs, in order, and says how many boots each
// added; adding a run twice adds nothing.
func (s *Store) Import(ctx context.Context, runs []Saved) error {
	for i := range runs {
		n, err := s.Add(ctx, runs[i].Run)
		if err != nil {
			return fmt.Errorf("history import %s: %w", runs[i].Dir, err)
		}
		runs[i].Added = n
	}
	return nil
}
