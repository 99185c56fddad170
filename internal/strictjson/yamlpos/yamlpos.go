// Package yamlpos points errors about a YAML document at the user's YAML.
//
// ckegen reads YAML by converting it to JSON (as sigs.k8s.io/yaml does,
// over go.yaml.in/yaml/v2: YAML 1.1 scalars, keys turned into strings) and
// decoding the JSON strictly (internal/strictjson). An error found in the
// JSON has a path, but its line and column point into the converted JSON,
// which the user never saw: Place finds the path in the YAML instead.
// Errors turns yaml.v2's own errors (a syntax error, a key given twice)
// into *strictjson.Error with their line, and, for a repeated key, its path
// and column. Both parse the YAML again with go.yaml.in/yaml/v3, whose
// nodes know their positions, and only on the way out with an error: the
// success path does not pay for them. yaml.v2 gives a syntax error its
// line only; github.com/goccy/go-yaml's parser, asked on that path too,
// gives its column.
package yamlpos

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	goccy "github.com/goccy/go-yaml"
	goccyparser "github.com/goccy/go-yaml/parser"
	yamlv2 "go.yaml.in/yaml/v2"
	yamlv3 "go.yaml.in/yaml/v3"

	"github.com/ckegen/ckegen/internal/strictjson"
)

// Place sets the line and column of every *strictjson.Error in err that is
// about a value or a member (not Syntax or Trailing) to where, in src, that
// value or member is written: src is the YAML the errors' JSON was
// converted from, and their positions, if any, point into that JSON. An
// error whose path src does not have gets the position of the nearest
// value holding it; when src cannot be read, it gets none. It returns err.
//
// Place an error before wrapping it with fmt.Errorf, which writes the text
// of what it wraps when it is called.
func Place(err error, src []byte) error {
	var root *yamlv3.Node
	parsed := false
	strictjson.Each(err, func(e *strictjson.Error) {
		if e.Kind == strictjson.Syntax || e.Kind == strictjson.Trailing {
			return
		}
		if !parsed {
			root, parsed = parse(src), true
		}
		e.Line, e.Column, e.FirstLine, e.FirstColumn = 0, 0, 0, 0
		if root == nil {
			return
		}
		switch e.Kind {
		case strictjson.Duplicate:
			if n, ok := find(root, e.Path, e.Name, 0); ok {
				e.FirstLine, e.FirstColumn = n.Line, n.Column
			}
			n, _ := find(root, e.Path, e.Name, 1)
			e.Line, e.Column = n.Line, n.Column
		case strictjson.Unknown:
			n, _ := find(root, e.Path, e.Name, 0)
			e.Line, e.Column = n.Line, n.Column
		default:
			n, _ := find(root, e.Path, "", 0)
			e.Line, e.Column = n.Line, n.Column
		}
	})
	return err
}

// parse reads the first document of src, nil when yaml.v3 cannot.
func parse(src []byte) *yamlv3.Node {
	var doc yamlv3.Node
	if yamlv3.Unmarshal(src, &doc) != nil || doc.Kind != yamlv3.DocumentNode || len(doc.Content) == 0 {
		return nil
	}
	return doc.Content[0]
}

// find finds the node of the value at p or, when name is not "", the nth
// (from 0) key called name of the mapping at p, and whether it did. When
// it did not, the node is the deepest value on the way that it found.
func find(root *yamlv3.Node, p strictjson.Path, name string, nth int) (*yamlv3.Node, bool) {
	cur := root
	for _, s := range p {
		next := child(deref(cur), s)
		if next == nil {
			return cur, false
		}
		cur = next
	}
	if name == "" {
		return cur, true
	}
	var keys []*yamlv3.Node
	for _, kv := range pairs(deref(cur)) {
		if k, ok := jsonKey(kv[0]); ok && k == name {
			keys = append(keys, kv[0])
		}
	}
	// In the order written, wherever merges put them.
	slices.SortStableFunc(keys, func(a, b *yamlv3.Node) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
	if nth < len(keys) {
		return keys[nth], true
	}
	return cur, false
}

// child is the node at step s of n, or nil.
func child(n *yamlv3.Node, s strictjson.Step) *yamlv3.Node {
	switch {
	case n.Kind == yamlv3.SequenceNode && s.IsIndex:
		if s.Index < len(n.Content) {
			return n.Content[s.Index]
		}
	case n.Kind == yamlv3.MappingNode && !s.IsIndex:
		for _, kv := range pairs(n) {
			if k, ok := jsonKey(kv[0]); ok && k == s.Key {
				return kv[1]
			}
		}
	}
	return nil
}

// pairs are the keys and values of mapping n, its own first and then those
// it merges (<<), earlier merged mappings before later ones, as yaml.v2
// gives them precedence; nil when n is not a mapping.
func pairs(n *yamlv3.Node) [][2]*yamlv3.Node {
	if n.Kind != yamlv3.MappingNode {
		return nil
	}
	var own, merged [][2]*yamlv3.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !isMerge(k) {
			own = append(own, [2]*yamlv3.Node{k, v})
			continue
		}
		v = deref(v)
		sources := []*yamlv3.Node{v}
		if v.Kind == yamlv3.SequenceNode {
			sources = v.Content
		}
		for _, src := range sources {
			merged = append(merged, pairs(deref(src))...)
		}
	}
	return append(own, merged...)
}

func isMerge(k *yamlv3.Node) bool {
	return k.Kind == yamlv3.ScalarNode && k.Value == "<<" && (k.Style == 0 || k.Tag == "!!merge")
}

// deref follows aliases to the node they name.
func deref(n *yamlv3.Node) *yamlv3.Node {
	for i := 0; n.Kind == yamlv3.AliasNode && n.Alias != nil && i < 100; i++ {
		n = n.Alias
	}
	return n
}

// v2Key is a scalar key as yaml.v2 reads it: a quoted or block scalar is a
// string; a plain or tagged one is resolved (yes is true, 1 is an int).
func v2Key(k *yamlv3.Node) (any, bool) {
	if k.Kind != yamlv3.ScalarNode {
		return nil, false
	}
	if k.Style&(yamlv3.DoubleQuotedStyle|yamlv3.SingleQuotedStyle|yamlv3.LiteralStyle|yamlv3.FoldedStyle) != 0 {
		return k.Value, true
	}
	text := k.Value
	if k.Style&yamlv3.TaggedStyle != 0 {
		text = k.Tag + " " + text
	}
	var v any
	if yamlv2.Unmarshal([]byte(text), &v) != nil {
		return k.Value, true
	}
	switch v.(type) {
	case map[any]any, []any:
		return k.Value, true
	}
	return v, true
}

// jsonKey is the JSON member name a YAML key becomes, as sigs.k8s.io/yaml
// writes it.
func jsonKey(k *yamlv3.Node) (string, bool) {
	v, ok := v2Key(deref(k))
	if !ok {
		return "", false
	}
	switch v := v.(type) {
	case string:
		return v, true
	case int:
		return strconv.Itoa(v), true
	case int64:
		return strconv.FormatInt(v, 10), true
	case uint64:
		return strconv.FormatUint(v, 10), true
	case float64:
		// As a float32: a larger number is written as an infinity.
		switch s := strconv.FormatFloat(v, 'g', -1, 32); s {
		case "+Inf":
			return ".inf", true
		case "-Inf":
			return "-.inf", true
		case "NaN":
			return ".nan", true
		default:
			return s, true
		}
	case bool:
		return strconv.FormatBool(v), true
	}
	return "", false
}

var (
	// lineMsg is yaml.v2's "yaml: line 3: did not find expected key".
	lineMsg = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)
	// alreadySet is yaml.v2's strict report of a key given twice, at the
	// line of its value: line 4: key "a" already set in map.
	alreadySet = regexp.MustCompile(`^line (\d+): key (.*) already set in map$`)
)

// Errors turns err, yaml.v2's error reading src, into *strictjson.Errors:
// each key given twice in a mapping (yaml.v2's strict mode) with its path,
// line and column and where it was first given; a YAML syntax error, with
// its line when yaml.v2 says it. Messages that would name Go types are
// worded in YAML's terms.
func Errors(err error, src []byte) error {
	var te *yamlv2.TypeError
	if !errors.As(err, &te) {
		return syntaxError(err, src)
	}
	var all []keyAt
	walk(parse(src), nil, &all)
	used := map[*yamlv3.Node]bool{}
	errs := make([]error, 0, len(te.Errors))
	for _, m := range te.Errors {
		sub := alreadySet.FindStringSubmatch(m)
		if sub == nil {
			errs = append(errs, syntaxError(errors.New(m), src))
			continue
		}
		line, _ := strconv.Atoi(sub[1])
		errs = append(errs, duplicate(all, used, line, sub[2]))
	}
	return errors.Join(errs...)
}

// keyAt is a key of a mapping, with the mapping's path and the key's value.
type keyAt struct {
	path     strictjson.Path
	key, val *yamlv3.Node
	mapping  *yamlv3.Node
}

// walk lists every key of every mapping under n, in document order,
// without following aliases (their mappings are listed where written).
func walk(n *yamlv3.Node, p strictjson.Path, out *[]keyAt) {
	if n == nil {
		return
	}
	switch n.Kind {
	case yamlv3.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			*out = append(*out, keyAt{p, k, v, n})
			name, _ := jsonKey(k)
			walk(v, p.Key(name), out)
		}
	case yamlv3.SequenceNode:
		for i, c := range n.Content {
			walk(c, p.Index(i), out)
		}
	}
}

// duplicate is the error of yaml.v2's report that the key written key
// (Go syntax: "a", 1, true) is set twice, at the line of its second value.
func duplicate(all []keyAt, used map[*yamlv3.Node]bool, line int, key string) error {
	for _, k := range all {
		v, ok := v2Key(deref(k.key))
		if !ok || k.val.Line != line || used[k.key] || fmt.Sprintf("%#v", v) != key {
			continue
		}
		// The first key of the mapping that yaml.v2 reads as the same.
		var first *yamlv3.Node
		for _, o := range all {
			if o.mapping != k.mapping || o.key == k.key {
				continue
			}
			if ov, ok := v2Key(deref(o.key)); ok && fmt.Sprintf("%#v", ov) == key && (o.key.Line < k.key.Line || o.key.Line == k.key.Line && o.key.Column < k.key.Column) {
				first = o.key
				break
			}
		}
		if first == nil {
			// Set by a merge (<<) before: where the merged mapping has it.
			for _, kv := range pairs(k.mapping) {
				if ov, ok := v2Key(deref(kv[0])); ok && kv[0] != k.key && kv[0].Line < k.key.Line && fmt.Sprintf("%#v", ov) == key {
					first = kv[0]
					break
				}
			}
		}
		if first == nil {
			continue // the first of the two: yaml.v2 names the second
		}
		used[k.key] = true
		name, _ := jsonKey(k.key)
		return &strictjson.Error{Kind: strictjson.Duplicate, Path: k.path, Name: name,
			Line: k.key.Line, Column: k.key.Column, FirstLine: first.Line, FirstColumn: first.Column}
	}
	name := key
	if s, err := strconv.Unquote(key); err == nil {
		name = s
	}
	return &strictjson.Error{Kind: strictjson.Duplicate, Name: name, Line: line}
}

// parserProblems are the problems yaml.v2's parser (not its scanner)
// reports, with the line before the problem's (counted from 0).
var parserProblems = map[string]bool{
	"did not find expected <stream-start>":   true,
	"did not find expected <document start>": true,
	"did not find expected node content":     true,
	"did not find expected '-' indicator":    true,
	"did not find expected key":              true,
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"found undefined tag handle":             true,
	"found duplicate %YAML directive":        true,
	"found incompatible YAML document":       true,
	"found duplicate %TAG directive":         true,
}

// syntaxError is a YAML syntax error, with its line. yaml.v2 leaves the
// line out on the first line, and counts it from 0 for its parser's
// problems; some problems have no position, which is found in src.
func syntaxError(err error, src []byte) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	e := &strictjson.Error{Kind: strictjson.Syntax, Err: err}
	line := 0
	if sub := lineMsg.FindStringSubmatch(msg); sub != nil {
		line, _ = strconv.Atoi(sub[1])
		msg = sub[2]
	}
	switch {
	case parserProblems[msg]:
		e.Line = line + 1
		msg = column(e, msg, src)
	case strings.HasPrefix(msg, "invalid map key"):
		// yaml.v2 writes the key as Go: []interface {}{"a"}.
		msg = "a mapping key must be a scalar (a string, a number, true or false), not a list or mapping"
		if k := complexKey(parse(src)); k != nil {
			e.Line, e.Column = k.Line, k.Column
		}
	case strings.HasPrefix(msg, "unsupported map key"):
		// sigs.k8s.io/yaml's conversion, naming the key's Go type.
		if k := BadKey(src); k != nil {
			return k
		}
		msg = "a key has no JSON form; quote it"
	case strings.HasPrefix(msg, "cannot unmarshal"):
		// yaml.v2 names the Go type it could not fill.
		msg = "a value of the wrong kind"
		e.Line = line
	case msg == "control characters are not allowed":
		e.Line, e.Column = at(src, firstControl(src))
	case strings.Contains(msg, "UTF-8") || msg == "invalid Unicode character":
		e.Line, e.Column = at(src, firstInvalidUTF8(src))
	case strings.HasPrefix(msg, "unknown anchor"):
		name := strings.TrimSuffix(strings.TrimPrefix(msg, "unknown anchor '"), "' referenced")
		e.Line, e.Column = at(src, aliasOffset(src, name))
	case strings.HasPrefix(msg, "map merge") || strings.HasPrefix(msg, "anchor ") ||
		strings.Contains(msg, "excessive aliasing") || strings.Contains(msg, "max depth"):
		e.Line = line // about the document, not a place in it
	default:
		// A scanner's problem: its line, left out on the first.
		e.Line = max(line, 1)
		msg = column(e, msg, src)
	}
	e.Msg = "not valid YAML: " + msg
	return e
}

// column adds the column to a syntax error yaml.v2 gives a line only:
// github.com/goccy/go-yaml's parser, asked again, points at a character.
// Where it points at yaml.v2's line, msg is kept with its column; where
// it points elsewhere (an unterminated quote: where it opens, not where
// the input ends), its place and its words are taken; where it finds no
// error, the line alone stays. It returns the message to give.
func column(e *strictjson.Error, msg string, src []byte) string {
	_, err := goccyparser.ParseBytes(src, 0)
	var se *goccy.SyntaxError
	if !errors.As(err, &se) || se.Token == nil || se.Token.Position == nil {
		return msg
	}
	p := se.Token.Position
	if p.Line < 1 || p.Column < 1 {
		return msg
	}
	if p.Line != e.Line {
		msg = strings.ReplaceAll(se.Message, "\t", `\t`)
	}
	e.Line, e.Column = p.Line, p.Column
	return msg
}

// at is the line and column of byte off of src, 0, 0 for off < 0.
func at(src []byte, off int) (int, int) {
	if off < 0 {
		return 0, 0
	}
	return strictjson.Position(src, off)
}

// firstControl is the offset of the first character that YAML does not
// allow (libyaml's printable set), or -1.
func firstControl(src []byte) int {
	for i, r := range string(src) {
		switch {
		case r == '\t' || r == '\n' || r == '\r' || r == 0x85:
		case r >= 0x20 && r <= 0x7e, r >= 0xa0 && r <= 0xd7ff, r >= 0xe000 && r <= 0xfffd && r != 0xfeff, r >= 0x10000 && r <= 0x10ffff:
		case r == 0xfeff && i == 0:
		case r == utf8.RuneError:
		default:
			return i
		}
	}
	return -1
}

// firstInvalidUTF8 is the offset of the first byte that is not UTF-8, or
// -1.
func firstInvalidUTF8(src []byte) int {
	for i := 0; i < len(src); {
		r, n := utf8.DecodeRune(src[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return -1
}

// aliasOffset is the offset of the first alias *name in src, or -1.
func aliasOffset(src []byte, name string) int {
	re := regexp.MustCompile(`\*` + regexp.QuoteMeta(name) + `(?:$|[\s,\]}])`)
	if loc := re.FindIndex(src); loc != nil {
		return loc[0]
	}
	return -1
}

// BadKey is the error for the first key of src that has no JSON form (null,
// a timestamp): at the key, in the mapping's path; nil when there is none.
func BadKey(src []byte) *strictjson.Error {
	var all []keyAt
	walk(parse(src), nil, &all)
	for _, k := range all {
		kn := deref(k.key)
		if _, ok := jsonKey(kn); ok || kn.Kind != yamlv3.ScalarNode {
			continue
		}
		msg := "this key has no JSON form; quote it"
		if v, _ := v2Key(kn); v == nil {
			msg = "a null key has no JSON form; quote it"
		}
		e := strictjson.Invalidf(k.path, "%s", msg)
		e.Line, e.Column = k.key.Line, k.key.Column
		return e
	}
	return nil
}

// complexKey finds the first key that is a sequence or a mapping.
func complexKey(n *yamlv3.Node) *yamlv3.Node {
	var all []keyAt
	walk(n, nil, &all)
	for _, k := range all {
		if kk := deref(k.key); kk.Kind == yamlv3.MappingNode || kk.Kind == yamlv3.SequenceNode {
			return k.key
		}
	}
	return nil
}

// SecondDocument is the error for src, a YAML stream, holding more than
// one document where one is read: at the second document.
func SecondDocument(src []byte, format string, args ...any) *strictjson.Error {
	e := strictjson.Invalidf(nil, format, args...)
	dec := yamlv3.NewDecoder(bytes.NewReader(src))
	var first, second yamlv3.Node
	if dec.Decode(&first) == nil && dec.Decode(&second) == nil {
		e.Line, e.Column = second.Line, second.Column
	}
	return e
}

// Unreadable is the error for src, which neither JSON nor YAML reads,
// given YAML's error yamlErr (from Errors). src that starts as JSON does
// ({ or [) was most likely meant as JSON: JSON's error, at its line and
// column, comes first.
func Unreadable(src []byte, yamlErr error) error {
	t := bytes.TrimLeft(src, " \t\r\n")
	if len(t) == 0 || t[0] != '{' && t[0] != '[' {
		return yamlErr
	}
	var je *strictjson.Error
	if !errors.As(strictjson.Check(src), &je) || je.Kind != strictjson.Syntax && je.Kind != strictjson.Trailing {
		return yamlErr
	}
	var ye *strictjson.Error
	if errors.As(yamlErr, &ye) {
		je.Msg += "; not YAML either: " + strings.TrimPrefix(ye.Msg, "not valid YAML: ")
		switch {
		case ye.Column > 0:
			je.Msg += fmt.Sprintf(" (line %d, column %d)", ye.Line, ye.Column)
		case ye.Line > 0:
			je.Msg += fmt.Sprintf(" (line %d)", ye.Line)
		}
	}
	return je
}
