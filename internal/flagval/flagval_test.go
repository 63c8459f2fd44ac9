package flagval

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"
)

func TestValues(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var (
		n  Int
		d  Duration
		l  Ints
		s  Strings
		b  Bool
		st = String{V: "default"}
		f  Float
	)
	fs.Var(&n, "n", "")
	fs.Var(&d, "d", "")
	fs.Var(&l, "l", "")
	fs.Var(&s, "s", "")
	fs.Var(&b, "b", "")
	fs.Var(&st, "st", "")
	fs.Var(&f, "f", "")
	if err := fs.Parse([]string{"-n", "0", "-d", "0", "-l", "1,2", "-s", "a,b", "-b", "-f", "0.05"}); err != nil {
		t.Fatal(err)
	}
	if !f.IsSet() || f.V != 0.05 {
		t.Errorf("f %+v", f)
	}
	if !n.IsSet() || n.V != 0 || !d.IsSet() || d.V != 0 || len(l.V) != 2 || len(s.V) != 2 || !b.V || st.IsSet() || st.V != "default" {
		t.Errorf("n %+v d %+v l %+v s %+v b %+v st %+v", n, d, l, s, b, st)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-n", "1", "-n", "2"}, "given twice"},
		{[]string{"-n", "1.5"}, "not a whole number"},
		{[]string{"-d", "-1s"}, "negative"},
		{[]string{"-d", "3"}, "not a duration"},
		{[]string{"-l", "1,,2"}, "not a whole number"},
		// Out of range is too large, with the limit, not "not a whole number".
		{[]string{"-n", "99999999999999999999"}, `"99999999999999999999" is too large: at most 2147483647`},
		{[]string{"-n", "2147483648"}, `"2147483648" is too large: at most 2147483647`},
		{[]string{"-n", "-99999999999999999999"}, "is too small: at least -2147483647"},
		{[]string{"-l", "1,99999999999999999999"}, "is too large: at most 2147483647"},
		{[]string{"-d", "99999999999h"}, `"99999999999h" is too large: a duration is at most 2562047h0m0s`},
		{[]string{"-s", "a,"}, "empty item"},
		{[]string{"-f", "x"}, "not a number"},
		{[]string{"-f", "NaN"}, "not a number"},
		{[]string{"-f", "1", "-f", "2"}, "given twice"},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var n Int
		var d Duration
		var l Ints
		var s Strings
		var f Float
		fs.Var(&f, "f", "")
		fs.Var(&n, "n", "")
		fs.Var(&d, "d", "")
		fs.Var(&l, "l", "")
		fs.Var(&s, "s", "")
		if err := fs.Parse(tc.args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err %v, want %q", tc.args, err, tc.want)
		}
	}
	_ = time.Second
}

func TestRepeated(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	var s Repeated
	fs.Var(&s, "series", "")
	if s.IsSet() {
		t.Fatal("set before parsing")
	}
	if err := fs.Parse([]string{"--series", "a", "--series=b,c"}); err != nil {
		t.Fatal(err)
	}
	if !s.IsSet() || len(s.V) != 2 || s.V[0] != "a" || s.V[1] != "b,c" {
		t.Errorf("got %q", s.V)
	}
}
