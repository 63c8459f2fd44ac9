package main

// sections count the measured samples lab's instruction profile sees: each
// sample is bracketed by a start and a stop marker (sectionStart,
// sectionStop: no-ops on a real CPU and in an unprofiled guest, in
// section_*.s), and the plugin numbers the sections as they end. A sample
// records its number (protocol.Sample.Section), which lab matches with the
// plugin's output.
type sections struct{ n int }

// marked is the guest's one sequence of sections: the plugin numbers every
// section the guest marks, whichever benchmark marks it, so the count is
// the process's, not a benchmark's.
var marked sections

// start opens a section and gives its number.
func (s *sections) start() int {
	s.n++
	sectionStart()
	return s.n
}

// stop closes the open section.
func (s *sections) stop() { sectionStop() }

func sectionStart()
func sectionStop()
