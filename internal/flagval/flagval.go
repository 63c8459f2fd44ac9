// Package flagval holds command-line flag values that remember whether
// they were given, so that 0 is a value and not "unset", and that refuse a
// flag given twice. Every lab command registers its flags with them.
package flagval

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// once refuses a flag given twice: which one was meant?
type once struct{ set bool }

// IsSet reports whether the flag was given.
func (o *once) IsSet() bool { return o.set }

func (o *once) mark() error {
	if o.set {
		return fmt.Errorf("given twice: give it once")
	}
	o.set = true
	return nil
}

// String is a string flag.
type String struct {
	once
	V string
}

func (s *String) String() string { return s.V }
func (s *String) Set(v string) error {
	if err := s.mark(); err != nil {
		return err
	}
	s.V = v
	return nil
}

// Bool is a boolean flag (-x or -x=false).
type Bool struct {
	once
	V bool
}

func (b *Bool) String() string   { return strconv.FormatBool(b.V) }
func (b *Bool) IsBoolFlag() bool { return true }
func (b *Bool) Set(v string) error {
	if err := b.mark(); err != nil {
		return err
	}
	x, err := strconv.ParseBool(v)
	if err != nil {
		return fmt.Errorf("want true or false")
	}
	b.V = x
	return nil
}

// Int is a whole-number flag: 1.5 or 1e3 is an error, not 1.
type Int struct {
	once
	V int
}

func (n *Int) String() string { return strconv.Itoa(n.V) }
func (n *Int) Set(v string) error {
	if err := n.mark(); err != nil {
		return err
	}
	x, err := parseCount(v)
	n.V = x
	return err
}

// Duration is a duration flag (5s, 500ms, or 0), never negative.
type Duration struct {
	once
	V time.Duration
}

func (d *Duration) String() string { return d.V.String() }
func (d *Duration) Set(v string) error {
	if err := d.mark(); err != nil {
		return err
	}
	x, err := ParseDuration(v)
	if err != nil {
		// A bare 0 is a duration; other bare numbers are ambiguous.
		if v == "0" {
			d.V = 0
			return nil
		}
		if durationText.MatchString(v) {
			return err
		}
		return fmt.Errorf("not a duration: write e.g. 5s or 500ms")
	}
	if x < 0 {
		return fmt.Errorf("negative")
	}
	d.V = x
	return nil
}

// Float is a number flag: a finite one (NaN and Inf are refused).
type Float struct {
	once
	V float64
}

func (f *Float) String() string { return strconv.FormatFloat(f.V, 'g', -1, 64) }
func (f *Float) Set(v string) error {
	if err := f.mark(); err != nil {
		return err
	}
	x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
		return fmt.Errorf("%q is not a number", v)
	}
	f.V = x
	return nil
}

// Strings is a comma-separated list flag without empty items.
type Strings struct {
	once
	V []string
}

func (s *Strings) String() string { return strings.Join(s.V, ",") }
func (s *Strings) Set(v string) error {
	if err := s.mark(); err != nil {
		return err
	}
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f == "" {
			return fmt.Errorf("an empty item in %q", v)
		}
		s.V = append(s.V, f)
	}
	return nil
}

// Ints is a comma-separated list of whole numbers.
type Ints struct {
	once
	V []int
}

func (l *Ints) String() string {
	var s []string
	for _, n := range l.V {
		s = append(s, strconv.Itoa(n))
	}
	return strings.Join(s, ",")
}

func (l *Ints) Set(v string) error {
	if err := l.mark(); err != nil {
		return err
	}
	for _, f := range strings.Split(v, ",") {
		n, err := parseCount(strings.TrimSpace(f))
		if err != nil {
			return err
		}
		l.V = append(l.V, n)
	}
	return nil
}

// MaxCount is the largest whole number a flag or a lab file takes: far
// above any count lab needs, and small enough that products of counts
// (boots × benchmarks × seconds) do not wrap.
const MaxCount = math.MaxInt32

// parseCount reads a whole number, saying what is wrong with anything else
// (1.5, 1e3, an empty item, a number past MaxCount) rather than truncating
// it.
func parseCount(s string) (int, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	switch {
	case errors.Is(err, strconv.ErrRange) || err == nil && (n > MaxCount || n < -MaxCount):
		return 0, fmt.Errorf("%q is %s", s, OutOfRange(s))
	case err != nil:
		return 0, fmt.Errorf("%q is not a whole number", s)
	}
	return int(n), nil
}

// OutOfRange says what is wrong with a whole number past MaxCount, with
// the limit: a number too long for an int is as wrong as one a digit
// shorter, and not "not a whole number".
func OutOfRange(s string) string {
	if strings.HasPrefix(strings.TrimSpace(s), "-") {
		return fmt.Sprintf("too small: at least %d", -MaxCount)
	}
	return fmt.Sprintf("too large: at most %d", MaxCount)
}

// durationText is text of the shape time.ParseDuration reads: when it is
// refused all the same, it is past the largest duration.
var durationText = regexp.MustCompile(`^[-+]?(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+$`)

// ParseDuration is time.ParseDuration, saying "too large" of a duration
// past its limit (about 292 years) instead of "not a duration".
func ParseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil && durationText.MatchString(s) {
		return 0, fmt.Errorf("%q is too large: a duration is at most %s", s, time.Duration(math.MaxInt64).Truncate(time.Hour))
	}
	return d, err
}

// Repeated is a flag that may be given more than once (lab run --series
// v1.mbx --series v2.mbx): each value in order, whole (a path may hold a
// comma).
type Repeated struct{ V []string }

func (s *Repeated) String() string { return strings.Join(s.V, ",") }
func (s *Repeated) Set(v string) error {
	s.V = append(s.V, v)
	return nil
}

// IsSet reports whether the flag was given.
func (s *Repeated) IsSet() bool { return len(s.V) > 0 }
