package spec

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"

	"lab/internal/flagval"
)

// A lab file is read in three steps, each with its own messages: the text
// (checkText: not binary, no tab indents, not empty), the YAML syntax
// (goccy/go-yaml's parser, which reports the line where the mistake is),
// then decode, which fills the Lab from the syntax tree itself instead of
// leaving it to the library: the library's type errors name Go types
// ("cannot unmarshal !!str into []string") and it truncates 1.5 to 1 in an
// int. decode also records which keys the file gave, and on which line, so
// that a key set to 0 is a value and not "unset".

// doc is what decode learnt of a lab file: the line of every key and list
// item it gave, by path ("matrix.producers.1").
type doc struct {
	file    string
	data    []byte // the text, for the lines of values that span several
	lines   map[string]int
	anchors map[string]ast.Node
}

// given reports whether the file gave the key at path.
func (d *doc) given(path string) bool {
	if d == nil {
		return false
	}
	_, ok := d.lines[path]
	return ok
}

// line is the line of the deepest part of path the file gave, 0 without a
// document (a value that came from the command line).
func (d *doc) line(path ...string) int {
	if d == nil {
		return 0
	}
	for i := len(path); i > 0; i-- {
		if l, ok := d.lines[strings.Join(path[:i], ".")]; ok {
			return l
		}
	}
	return 0
}

// at is the line of an error about path: line's, or, when the file gave
// no part of path (a missing key: name:, a default that does not fit), the
// first key's line, where a key to add would go. Every error of a lab
// file read from a file then has a line; 0 without a document.
func (d *doc) at(path ...string) int {
	if l := d.line(path...); l > 0 || d == nil {
		return l
	}
	first := 0
	for p, l := range d.lines {
		if !strings.Contains(p, ".") && (first == 0 || l < first) {
			first = l
		}
	}
	return max(first, 1)
}

// emptyOK are the lists that may be empty: the rest need an item, since an
// empty list would either run nothing or be replaced by a default.
var emptyOK = map[string]bool{"claims": true, "console_expect": true, "tools": true}

// parseYAML checks data and decodes it into lab.
func parseYAML(file string, data []byte, lab *Lab) (*doc, error) {
	if err := checkText(file, data); err != nil {
		return nil, err
	}
	data = bytes.TrimPrefix(data, []byte("\uFEFF")) // an editor's byte-order mark is not a key
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, syntaxError(file, data, err)
	}
	var bodies []*ast.DocumentNode
	for _, dn := range f.Docs {
		if dn.Body != nil {
			bodies = append(bodies, dn)
		}
	}
	switch {
	case len(bodies) == 0:
		return nil, &Error{File: file, Msg: "empty lab file: it needs at least name: and series: (see labs/uprobe-srcu.yaml)"}
	case len(bodies) > 1:
		at := bodies[1].Body.GetToken().Position.Line
		if bodies[1].Start != nil {
			at = bodies[1].Start.Position.Line
		}
		return nil, &Error{File: file, Line: at, Msg: "a second YAML document starts here (---): a lab file is one document; remove the --- and what follows, or move it to a lab file of its own"}
	}
	d := &doc{file: file, data: data, lines: map[string]int{}, anchors: map[string]ast.Node{}}
	body := bodies[0].Body
	if k := body.Type(); k != ast.MappingType && k != ast.MappingValueType {
		return nil, &Error{File: file, Line: body.GetToken().Position.Line,
			Msg: fmt.Sprintf("a lab file is a set of keys (name: ..., series: ..., matrix: ...), not %s", describe(body))}
	}
	return d, d.decode(body, reflect.ValueOf(lab).Elem(), "")
}

// checkText rejects what is not a YAML text before parsing: binary files
// (the parser takes most bytes for a string), and tabs in indentation,
// which YAML forbids but the parser sometimes reads without a word.
func checkText(file string, data []byte) error {
	text := strings.TrimPrefix(string(data), "\uFEFF")
	block := -1 // indentation of the key that opened a block scalar (| or >), -1 outside one
	for i, l := range strings.Split(text, "\n") {
		at := func(msg string) error { return &Error{File: file, Line: i + 1, Msg: msg} }
		if !utf8.ValidString(l) {
			return at("not a text file (bytes that are not UTF-8): a lab file is YAML text, e.g. labs/uprobe-srcu.yaml")
		}
		for _, r := range strings.TrimSuffix(l, "\r") {
			if r != '\t' && (r < ' ' || r == 0x7f) {
				return at(fmt.Sprintf("not a text file (control character %U): a lab file is YAML text, e.g. labs/uprobe-srcu.yaml", r))
			}
		}
		indent := len(l) - len(strings.TrimLeft(l, " \t"))
		if block >= 0 && (strings.TrimSpace(l) == "" || indent > block) {
			continue // a block scalar's text may hold tabs
		}
		block = -1
		if strings.Contains(l[:indent], "\t") {
			return at("a tab in the indentation: YAML indents with spaces only; replace the tab with spaces")
		}
		if blockStart.MatchString(l) {
			block = indent
		}
	}
	return nil
}

// blockStart is a line whose value is a block scalar: "description: |".
var blockStart = regexp.MustCompile(`:\s+[|>][-+0-9]*\s*(#.*)?\r?$`)

// syntaxRewrites say the parser's messages in a lab file's terms.
var syntaxRewrites = []struct{ has, say string }{
	{"that cannot start any token", "a character YAML does not allow here"},
	{"',' or ']' must be specified", "a [ list is not closed: write lists as [a, b] on one line, or one \"- item\" per line"},
	{"could not find flow mapping end token", "a { is not closed: write {key: value, key: value} on one line"},
	{"',' or '}' must be specified", "a { is not closed: write {key: value, key: value} on one line"},
	{"sequence end token ']' not found", "a [ list is not closed: write lists as [a, b] on one line, or one \"- item\" per line"},
	{"could not find end character of double-quoted text", "a \" is not closed: end the quoted text on the same line"},
	{"could not find end character of single-quoted text", "a ' is not closed: end the quoted text on the same line"},
	{"mapping value is not allowed in this context", "a second \": \" on one line: put text that holds \": \" in quotes"},
	{"value is not allowed in this context", "this line's indentation does not fit: keys of one block start in the same column, two spaces in from their parent"},
	{"unexpected key name", "this line is not key: value: put a colon and a space after the key"},
	{"non-map value is specified", "this line is not key: value: put a colon and a space after the key"},
	{"is a reserved character", "a value cannot start with @ or `: put it in quotes"},
	{"found an invalid key for this map", "a key must be a name: a list or a set of keys cannot be one"},
}

// syntaxError makes the parser's error one line at file:line.
func syntaxError(file string, data []byte, err error) error {
	var ye yaml.Error
	if !errors.As(err, &ye) || ye.GetToken() == nil {
		return &Error{File: file, Msg: "not YAML: " + strings.SplitN(err.Error(), "\n", 2)[0]}
	}
	msg, line := ye.GetMessage(), ye.GetToken().Position.Line
	if dup := duplicateKey.FindStringSubmatch(msg); dup != nil {
		return &Error{File: file, Line: line, Msg: fmt.Sprintf("key %q is given twice (first at line %s): keep one", dup[1], dup[2])}
	}
	if v := ye.GetToken(); strings.Contains(msg, "mapping value is not allowed") && strings.Contains(strings.TrimSpace(v.Origin), "\n") {
		// A key indented deeper than the one above it: YAML reads it as
		// the rest of that key's value, then finds its ": ". The mistake
		// is the key's line, the value's last.
		line = lastLine(data, v)
		return &Error{File: file, Line: line, Msg: "this line is indented deeper than the key above it, so YAML reads it as the rest of that key's value: start it in the same column as the key above (YAML: " + msg + ")"}
	}
	if strings.Contains(msg, "value is not allowed in this context") && !strings.Contains(msg, "mapping value") {
		if odd, before := oddLineOut(data, line); odd > 0 {
			return &Error{File: file, Line: odd, Msg: fmt.Sprintf("this line is indented less than the keys around it (lines %d and %d), which ends their block: indent it as they are (YAML: %s)", before, line, msg)}
		}
	}
	if unclosedFlow(msg) {
		// The parser notices an unclosed [ or { where the text stops
		// fitting, often lines below it: the mistake is the bracket.
		line = unclosedOpener(data, ye.GetToken().Position)
	}
	for _, r := range syntaxRewrites {
		if strings.Contains(msg, r.has) {
			msg = r.say + " (YAML: " + msg + ")"
			break
		}
	}
	return &Error{File: file, Line: line, Msg: msg}
}

// oddLineOut finds the key line before line (where the parser found an
// indentation that does not fit) that is the mistake: one indented less
// than the lines on both sides of it, which agree ("  arch: ...",
// "cpus: [2]", "  benchmarks: ..."): YAML ends the block at it and trips on
// the line after. It returns that line and the key line above it, 0 when
// there is no such line.
func oddLineOut(data []byte, line int) (odd, before int) {
	lines := strings.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n")
	if line < 3 || line > len(lines) {
		return 0, 0
	}
	indent := func(l string) int { return len(l) - len(strings.TrimLeft(l, " ")) }
	blank := func(l string) bool { t := strings.TrimSpace(l); return t == "" || strings.HasPrefix(t, "#") }
	// The two key lines above line, skipping blanks and comments.
	var above []int
	for i := line - 2; i >= 0 && len(above) < 2; i-- {
		if !blank(lines[i]) {
			above = append(above, i)
		}
	}
	if len(above) < 2 {
		return 0, 0
	}
	prev, prior, at := lines[above[0]], lines[above[1]], indent(lines[line-1])
	// prev must hold a whole key: value: a "key:" alone opens a block,
	// and the deeper line after it is right.
	k, v, ok := strings.Cut(strings.TrimSpace(prev), ": ")
	if !ok || k == "" || strings.TrimSpace(v) == "" || strings.HasPrefix(k, "-") {
		return 0, 0
	}
	if fields, _ := yamlFields(reflect.TypeOf(Lab{})); indent(prev) == 0 {
		if _, top := fields[k]; top {
			return 0, 0 // a top-level key in the first column is right: the line after is the odd one
		}
	}
	if indent(prev) < at && indent(prior) == at && !strings.HasSuffix(strings.TrimSpace(prior), ":") {
		return above[0] + 1, above[1] + 1
	}
	return 0, 0
}

// unclosedFlow reports whether the parser's message is about a [ or { that
// is never closed.
func unclosedFlow(msg string) bool {
	for _, m := range []string{"',' or ']' must be specified", "',' or '}' must be specified",
		"could not find flow mapping end token", "sequence end token ']' not found"} {
		if strings.Contains(msg, m) {
			return true
		}
	}
	return false
}

// unclosedOpener is the line of the last [ or { at or before where the
// parser gave up (at) that no bracket closes, found by matching the
// brackets of the whole text; at's own line when every one is closed.
func unclosedOpener(data []byte, at *token.Position) int {
	var open, unclosed []*token.Token
	for _, tk := range lexer.Tokenize(string(data)) {
		switch tk.Type {
		case token.SequenceStartType, token.MappingStartType:
			open = append(open, tk)
		case token.SequenceEndType, token.MappingEndType:
			want := token.SequenceStartType
			if tk.Type == token.MappingEndType {
				want = token.MappingStartType
			}
			// A closer of the other kind closes the bracket it
			// matches: the ones above that are unclosed.
			for i := len(open) - 1; i >= 0; i-- {
				if open[i].Type == want {
					unclosed = append(unclosed, open[i+1:]...)
					open = open[:i]
					break
				}
			}
		}
	}
	unclosed = append(unclosed, open...)
	line := 0
	for _, tk := range unclosed {
		p := tk.Position
		if (p.Line < at.Line || p.Line == at.Line && p.Column <= at.Column) && p.Line > line {
			line = p.Line
		}
	}
	if line == 0 {
		return at.Line
	}
	return line
}

var duplicateKey = regexp.MustCompile(`mapping key "([^"]*)" already defined at \[(\d+):`)

var durationType = reflect.TypeOf(Duration{})

// wholeNumber is a number as a lab file writes a count.
var wholeNumber = regexp.MustCompile(`^[-+]?[0-9]+$`)

// decode fills v from n; path names n for lines and messages.
func (d *doc) decode(n ast.Node, v reflect.Value, path string) error {
	n, err := d.resolve(n)
	if err != nil {
		return err
	}
	if n.Type() == ast.NullType {
		if t := v.Type(); t.Kind() == reflect.Struct || t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct {
			return d.errAt(n, "%s has nothing under it: indent its keys by two spaces under %s:", subject(path), key(path))
		}
		return d.errAt(n, "%s has no value: give one, or remove the line for the default", subject(path))
	}
	if err := d.runsOn(n, path); err != nil {
		return err
	}
	switch t := v.Type(); {
	case t == durationType:
		return d.duration(n, v, path)
	case t.Kind() == reflect.Pointer:
		v.Set(reflect.New(t.Elem()))
		return d.decode(n, v.Elem(), path)
	case t.Kind() == reflect.Struct:
		return d.mapping(n, v, path)
	case t.Kind() == reflect.Slice:
		return d.list(n, v, path)
	case t.Kind() == reflect.String:
		s, ok := scalar(n)
		if !ok {
			return d.errAt(n, "%s takes one value, not %s: write e.g. %s: %s", subject(path), describe(n), key(path), example(path))
		}
		v.SetString(s)
		return nil
	case t.Kind() == reflect.Int:
		return d.integer(n, v, path)
	case t.Kind() == reflect.Bool:
		b, ok := n.(*ast.BoolNode)
		if _, isScalar := scalar(n); !ok && !isScalar {
			return d.errAt(n, "%s takes true or false, not %s", subject(path), describe(n))
		}
		if !ok {
			return d.errAt(n, "%s: %s: write true or false", show(path), text(n))
		}
		v.SetBool(b.Value)
		return nil
	}
	return fmt.Errorf("spec: no YAML decoding for %s (a bug in lab)", v.Type())
}

// freeText are the keys whose value is prose, which may run on over lines.
var freeText = map[string]bool{"description": true, "note": true}

// runsOn rejects a plain value that runs on to a further line, which in a
// lab file is a line indented deeper than the one above it ("- 2" then
// "   - 4" is the one item "2 - 4"): at that line, not at the value's first.
func (d *doc) runsOn(n ast.Node, path string) error {
	s, ok := n.(*ast.StringNode)
	if !ok || freeText[key(path)] || s.GetToken().Type != token.StringType {
		return nil
	}
	origin := strings.TrimSpace(s.GetToken().Origin)
	if !strings.Contains(origin, "\n") {
		return nil
	}
	return &Error{File: d.file, Line: lastLine(d.data, s.GetToken()),
		Msg: fmt.Sprintf("this line is indented deeper than the line above it, so YAML reads it as the rest of %s (%q): start it in the same column as the line above", subject(path), s.Value)}
}

// lastLine is the line of the last text of a token that spans lines. The
// parser's position of such a token is sometimes its first line and
// sometimes a later one, so the token's text is looked for in data, the
// occurrence nearest the position's offset winning.
func lastLine(data []byte, tk *token.Token) int {
	text := strings.TrimSpace(tk.Origin)
	best := -1
	for from := 0; ; {
		i := bytes.Index(data[from:], []byte(text))
		if i < 0 {
			break
		}
		i += from
		if best < 0 || abs(i-tk.Position.Offset) < abs(best-tk.Position.Offset) {
			best = i
		}
		from = i + 1
	}
	if best < 0 {
		return tk.Position.Line + strings.Count(text, "\n")
	}
	return 1 + bytes.Count(data[:best+len(text)], []byte("\n"))
}

func abs(x int) int { return max(x, -x) }

// resolve looks through tags, anchors and aliases to the value.
func (d *doc) resolve(n ast.Node) (ast.Node, error) {
	for {
		switch x := n.(type) {
		case *ast.TagNode:
			n = x.Value
		case *ast.AnchorNode:
			if x.Name != nil {
				d.anchors[x.Name.GetToken().Value] = x.Value
			}
			n = x.Value
		case *ast.AliasNode:
			name := x.Value.GetToken().Value
			target, ok := d.anchors[name]
			if !ok {
				return nil, d.errAt(x, "*%s: no &%s anchor above it", name, name)
			}
			n = target
		default:
			if n == nil {
				return nil, fmt.Errorf("spec: empty YAML node (a bug in lab)")
			}
			return n, nil
		}
	}
}

// mapping fills the struct v from the keys of n, rejecting keys that no
// field takes with the keys that would have been accepted.
func (d *doc) mapping(n ast.Node, v reflect.Value, path string) error {
	fields, names := yamlFields(v.Type())
	var pairs []*ast.MappingValueNode
	switch m := n.(type) {
	case *ast.MappingNode:
		pairs = m.Values
	case *ast.MappingValueNode:
		pairs = []*ast.MappingValueNode{m}
	default:
		return d.errAt(n, "%s takes keys under it (%s), not %s", subject(path), strings.Join(names, ", "), describe(n))
	}
	for _, p := range pairs {
		if _, merge := p.Key.(*ast.MergeKeyNode); merge {
			return d.errAt(p.Key, "<<: a lab file does not merge keys from elsewhere: write the keys out")
		}
		kn, err := d.resolve(p.Key)
		if err != nil {
			return err
		}
		k, ok := scalar(kn)
		switch {
		case kn.Type() == ast.NullType || ok && k == "":
			return d.errAt(p.Key, "a key must be a name: this one is empty")
		case !ok:
			return d.errAt(p.Key, "a key must be a name, not %s", describe(kn))
		}
		i, ok := fields[k]
		if !ok {
			in := ""
			if path != "" {
				in = " in " + show(path)
			}
			if hint := elsewhere(k, path); hint != "" {
				return d.errAt(p.Key, "unknown key %q%s: it is %s", k, in, hint)
			}
			return d.errAt(p.Key, "unknown key %q%s (known: %s)", k, in, strings.Join(names, ", "))
		}
		sub := join(path, k)
		d.lines[sub] = p.Key.GetToken().Position.Line
		if err := d.decode(p.Value, v.Field(i), sub); err != nil {
			return err
		}
	}
	return nil
}

// elsewhere says where in a lab file key k belongs when it is not a key at
// path: a key at the wrong indentation is a key of another level ("cpus"
// at the top is matrix's, "series" under matrix is the top level's).
func elsewhere(k, path string) string {
	var at []string
	keyPaths(reflect.TypeOf(Lab{}), "", func(p string) {
		if key(p) == k && p != join(show(path), k) {
			at = append(at, p)
		}
	})
	// The shallowest places are the likeliest: a key is more often one
	// level off than three.
	var parents []string
	depth := func(p string) int { return strings.Count(p, ".") }
	for _, p := range at {
		i := strings.LastIndex(p, ".")
		if i < 0 {
			return "a top-level key: start it in the first column"
		}
		switch {
		case len(parents) > 0 && depth(p[:i]) > depth(parents[0]):
		case len(parents) > 0 && depth(p[:i]) < depth(parents[0]):
			parents = []string{p[:i]}
		case !slices.Contains(parents, p[:i]):
			parents = append(parents, p[:i])
		}
	}
	switch len(parents) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("a key of %s: indent it under %s:", parents[0], key(parents[0]))
	}
	return fmt.Sprintf("a key of %s: indent it under the one it belongs to", strings.Join(parents, " or of "))
}

// keyPaths calls f with the path of every key a lab file can give under t,
// outermost first.
func keyPaths(t reflect.Type, path string, f func(string)) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t == durationType {
		return
	}
	_, names := yamlFields(t)
	for _, k := range names {
		f(join(path, k))
	}
	fields, _ := yamlFields(t)
	for _, k := range names {
		keyPaths(t.Field(fields[k]).Type, join(path, k), f)
	}
}

// yamlFields maps a struct's YAML keys to field indexes, with the keys sorted.
func yamlFields(t reflect.Type) (map[string]int, []string) {
	fields := map[string]int{}
	var names []string
	for i := 0; i < t.NumField(); i++ {
		tag := strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]
		if tag == "" || tag == "-" {
			continue
		}
		fields[tag] = i
		names = append(names, tag)
	}
	sort.Strings(names)
	return fields, names
}

// list fills the slice v from the items of n.
func (d *doc) list(n ast.Node, v reflect.Value, path string) error {
	seq, ok := n.(*ast.SequenceNode)
	if !ok {
		if s, isScalar := scalar(n); isScalar && !isItem(path) && v.Type().Elem().Kind() != reflect.Slice {
			return d.errAt(n, "%s takes a list, even of one: write %s: [%s]", show(path), key(path), s)
		}
		if _, isScalar := scalar(n); isScalar || isItem(path) {
			return d.errAt(n, "%s takes a list, not %s: write e.g. %s: %s", subject(path), describe(n), key(path), example(path))
		}
		return d.errAt(n, "%s takes a list, not %s: start each item with \"- \" or write [a, b]", show(path), describe(n))
	}
	if len(seq.Values) == 0 && !emptyOK[path] {
		return d.errAt(n, "%s is an empty list: give at least one item, or remove the line for the default", show(path))
	}
	out := reflect.MakeSlice(v.Type(), len(seq.Values), len(seq.Values))
	for i, item := range seq.Values {
		sub := join(path, strconv.Itoa(i))
		d.lines[sub] = item.GetToken().Position.Line
		if err := d.decode(item, out.Index(i), sub); err != nil {
			return err
		}
	}
	v.Set(out)
	return nil
}

// integer reads a whole number: 1.5 is an error, not 1.
func (d *doc) integer(n ast.Node, v reflect.Value, path string) error {
	in, ok := n.(*ast.IntegerNode)
	if !ok {
		if s, isScalar := scalar(n); isScalar {
			if _, err := strconv.Atoi(s); err == nil {
				return d.errAt(n, "%s: %q is quoted text: write the number without quotes", show(path), s)
			}
			if _, isString := n.(*ast.StringNode); isString && n.GetToken().Type == token.StringType && wholeNumber.MatchString(s) {
				// The parser takes digits too many for an int64 for text.
				return d.errAt(n, "%s: %s is %s", show(path), s, flagval.OutOfRange(s))
			}
			return d.errAt(n, "%s: %s is not a whole number: write e.g. %s: %s", show(path), text(n), key(path), example(path))
		}
		return d.errAt(n, "%s takes a whole number, not %s: write e.g. %s: %s", subject(path), describe(n), key(path), example(path))
	}
	var x int64
	switch val := in.Value.(type) {
	case int64:
		x = val
	case uint64:
		if val > math.MaxInt64 {
			return d.errAt(n, "%s: %s is %s", show(path), text(n), flagval.OutOfRange(text(n)))
		}
		x = int64(val)
	}
	if x > flagval.MaxCount || x < -flagval.MaxCount {
		return d.errAt(n, "%s: %s is %s", show(path), text(n), flagval.OutOfRange(text(n)))
	}
	v.SetInt(x)
	return nil
}

// duration reads Go duration syntax (5s, 500ms, 1m30s), or a bare number
// of seconds (0 is no time at all).
func (d *doc) duration(n ast.Node, v reflect.Value, path string) error {
	s, ok := scalar(n)
	if !ok {
		return d.errAt(n, "%s takes one duration, not %s: write e.g. %s: 5s", subject(path), describe(n), key(path))
	}
	dur, err := flagval.ParseDuration(s)
	if err != nil {
		secs, perr := strconv.ParseFloat(s, 64)
		if perr == nil && math.Abs(secs) > 1e9 || errors.Is(perr, strconv.ErrRange) {
			return d.errAt(n, "%s: %s seconds is too large: at most 1000000000 (about 31 years)", show(path), s)
		}
		if perr != nil && strings.Contains(err.Error(), "too large") {
			return d.errAt(n, "%s: %v", show(path), err)
		}
		if perr != nil || math.IsNaN(secs) || math.IsInf(secs, 0) {
			return d.errAt(n, "%s: %q is not a duration: write e.g. 5s or 500ms", show(path), s)
		}
		dur = time.Duration(secs * float64(time.Second))
	}
	v.Set(reflect.ValueOf(Duration{dur}))
	return nil
}

func (d *doc) errAt(n ast.Node, format string, args ...any) error {
	return &Error{File: d.file, Line: n.GetToken().Position.Line, Msg: fmt.Sprintf(format, args...)}
}

// scalar is the text of a one-value node: a string, number or boolean.
func scalar(n ast.Node) (string, bool) {
	switch x := n.(type) {
	case *ast.StringNode:
		return x.Value, true
	case *ast.LiteralNode:
		return x.Value.Value, true
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		return x.GetToken().Value, true
	}
	return "", false
}

// text is n as the user wrote it, for messages.
func text(n ast.Node) string {
	if s, ok := scalar(n); ok {
		if _, isString := n.(*ast.StringNode); isString {
			return strconv.Quote(s)
		}
		return s
	}
	return describe(n)
}

// describe names what n is, in a lab file's terms.
func describe(n ast.Node) string {
	switch n.Type() {
	case ast.MappingType, ast.MappingValueType:
		return "a set of keys"
	case ast.SequenceType:
		return "a list"
	case ast.NullType:
		return "nothing"
	}
	if s, ok := scalar(n); ok {
		return fmt.Sprintf("the value %q", s)
	}
	return "that"
}

// examples are what the messages suggest writing, by path (without list
// indexes) or by key.
var examples = map[string]string{
	"name": "uprobe-srcu", "description": "what the series does", "series": "uprobe-srcu", "mode": "revert",
	"tarball": DefaultTarball, "package": DefaultPackage, "git": "/path/to/linux", "base": "v6.12",
	"config": "[common.config]", "console_expect": "['ok 1 kprobes_test']", "tools": "[bpf-bench]",
	"memory": "1G", "boots": "5", "maxactive": "32", "sockets": "2", "clusters": "2", "cores": "4", "threads": "1",
	"measure": "auto", "pin": "auto", "benchmark": "uprobe-nop", "direction": "faster", "min": "2%", "note": "the author's figures",
	"matrix.cpus": "[2]", "matrix.producers": "[1, 2]", "matrix.numa": "[1, 2]", "matrix.arch": "[x86_64]",
	"matrix.benchmarks": "[uprobe-nop]", "claims.producers": "[1]",
	"matrix.numa_layout.nodes.cpus": "0-3", "matrix.numa_layout.distances": "[[10, 20], [20, 10]]",
}

func example(path string) string {
	if e, ok := examples[show(path)]; ok {
		return e
	}
	if e, ok := examples[key(path)]; ok {
		return e
	}
	return "VALUE"
}

// key is the last name in path ("producers" for "claims.0.producers").
func key(path string) string {
	parts := strings.Split(show(path), ".")
	return parts[len(parts)-1]
}

// show is path without list indexes: "claims.producers".
func show(path string) string {
	var keep []string
	for _, p := range strings.Split(path, ".") {
		if _, err := strconv.Atoi(p); err != nil {
			keep = append(keep, p)
		}
	}
	if len(keep) == 0 {
		return "the lab file"
	}
	return strings.Join(keep, ".")
}

// subject names path as the subject of a message: a key ("matrix.cpus"),
// or an item of a list ("item 2 of matrix.cpus").
func subject(path string) string {
	if !isItem(path) {
		return show(path)
	}
	i := strings.LastIndex(path, ".")
	n, _ := strconv.Atoi(path[i+1:])
	return fmt.Sprintf("item %d of %s", n+1, show(path[:i]))
}

// isItem reports whether path is an item of a list ("matrix.cpus.0").
func isItem(path string) bool {
	i := strings.LastIndex(path, ".")
	_, err := strconv.Atoi(path[i+1:])
	return i >= 0 && err == nil
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}
