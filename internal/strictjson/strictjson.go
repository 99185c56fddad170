// Package strictjson refuses what encoding/json accepts silently: a key given
// twice in one object (encoding/json keeps the last) and data after the
// first value (a json.Decoder stops before it). It also shows a caller every
// object key with its path, so that a caller can refuse unknown fields by
// their exact name (encoding/json matches field names case-insensitively).
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Step is one step of a Path: an object key, or an array index.
type Step struct {
	Key     string
	Index   int
	IsIndex bool
}

// Path locates a value from the document's root.
type Path []Step

// Key returns p extended by an object key.
func (p Path) Key(k string) Path { return append(p[:len(p):len(p)], Step{Key: k}) }

// Index returns p extended by an array index.
func (p Path) Index(i int) Path { return append(p[:len(p):len(p)], Step{Index: i, IsIndex: true}) }

// String writes p the way a cluster.yml author reads it:
// nodes[0].labels["cke.cybozu.com/role"]. It is "" for the root.
func (p Path) String() string {
	var b strings.Builder
	for i, s := range p {
		switch {
		case s.IsIndex:
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(s.Index))
			b.WriteByte(']')
		case plainKey(s.Key):
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.Key)
		default:
			b.WriteByte('[')
			b.WriteString(strconv.Quote(s.Key))
			b.WriteByte(']')
		}
	}
	return b.String()
}

// plainKey reports whether k can be written in a path without quotes.
func plainKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Kind says what is wrong with the input.
type Kind int

const (
	// Syntax: the input does not start with a JSON value.
	Syntax Kind = iota + 1
	// Trailing: a JSON value is followed by more data.
	Trailing
	// Duplicate: an object has the same key twice.
	Duplicate
	// Refused: the caller's visit function refused a key.
	Refused
)

// Error is a problem with the input and where it is.
type Error struct {
	Kind Kind
	// Path is the object the problem is in (nil for the top level, and for
	// Syntax and Trailing).
	Path Path
	// Line and Column (1-based, in bytes) locate the problem in the input;
	// 0 when unknown.
	Line, Column int
	Err          error
}

func (e *Error) Error() string {
	var b strings.Builder
	if p := e.Path.String(); p != "" {
		b.WriteString(p)
		b.WriteString(": ")
	}
	b.WriteString(e.Err.Error())
	if e.Line > 0 {
		fmt.Fprintf(&b, " (line %d, column %d)", e.Line, e.Column)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Check returns an *Error when data is not exactly one JSON value or when an
// object in it has a key twice.
func Check(data []byte) error {
	return Walk(data, nil)
}

// Walk is Check that also calls visit, when it is not nil, with every object
// key in document order and the path of the object holding it. An error from
// visit stops the walk and is returned as an *Error of Kind Refused.
func Walk(data []byte, visit func(obj Path, key string) error) error {
	if !json.Valid(data) {
		return invalid(data)
	}
	w := walker{data: data, visit: visit, keys: map[string]string{}}
	return w.value()
}

// invalid explains why data is not one JSON value.
func invalid(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	var v json.RawMessage
	err := dec.Decode(&v)
	if err == nil {
		off := int(dec.InputOffset())
		for off < len(data) && isSpace(data[off]) {
			off++
		}
		line, col := position(data, off)
		return &Error{Kind: Trailing, Line: line, Column: col, Err: errors.New("trailing data after the JSON value")}
	}
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		// Offset counts the offending byte.
		line, col := position(data, max(int(se.Offset)-1, 0))
		return &Error{Kind: Syntax, Line: line, Column: col, Err: errors.New(strings.TrimPrefix(se.Error(), "json: "))}
	case errors.Is(err, io.EOF):
		return &Error{Kind: Syntax, Err: errors.New("no JSON value")}
	case errors.Is(err, io.ErrUnexpectedEOF):
		line, col := position(data, len(data))
		return &Error{Kind: Syntax, Line: line, Column: col, Err: errors.New("unexpected end of JSON input")}
	}
	return &Error{Kind: Syntax, Err: err}
}

// position turns a byte offset into a 1-based line and column.
func position(data []byte, off int) (line, col int) {
	off = min(off, len(data))
	line = 1 + bytes.Count(data[:off], []byte{'\n'})
	return line, off - bytes.LastIndexByte(data[:off], '\n')
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// walker scans JSON that json.Valid accepted, so it does not check syntax.
type walker struct {
	data  []byte
	pos   int
	path  Path
	visit func(Path, string) error
	keys  map[string]string
}

// maxInterned bounds the keys a walker keeps.
const maxInterned = 4096

func (w *walker) space() {
	for w.pos < len(w.data) && isSpace(w.data[w.pos]) {
		w.pos++
	}
}

func (w *walker) value() error {
	w.space()
	switch w.data[w.pos] {
	case '{':
		return w.object()
	case '[':
		return w.array()
	case '"':
		w.pos = w.stringEnd(w.pos)
	default: // number, true, false, null
		for w.pos < len(w.data) && !isDelimiter(w.data[w.pos]) {
			w.pos++
		}
	}
	return nil
}

func isDelimiter(c byte) bool {
	return c == ',' || c == ']' || c == '}' || isSpace(c)
}

// stringEnd returns the offset after the string starting at i.
func (w *walker) stringEnd(i int) int {
	for i++; ; i++ {
		switch w.data[i] {
		case '"':
			return i + 1
		case '\\':
			i++
		}
	}
}

// smallObject is the number of keys up to which an object's keys are
// compared one by one rather than put in a set.
const smallObject = 16

func (w *walker) object() error {
	w.pos++ // {
	var small [smallObject]string
	keys := small[:0]
	var set map[string]struct{}
	for {
		w.space()
		switch w.data[w.pos] {
		case '}':
			w.pos++
			return nil
		case ',':
			w.pos++
			w.space()
		}
		start := w.pos
		end := w.stringEnd(start)
		key, err := w.key(start, end)
		if err != nil {
			return err
		}
		w.pos = end
		dup := false
		if set != nil {
			_, dup = set[key]
			set[key] = struct{}{}
		} else {
			for _, k := range keys {
				if k == key {
					dup = true
					break
				}
			}
			if keys = append(keys, key); len(keys) > smallObject {
				set = make(map[string]struct{}, 2*smallObject)
				for _, k := range keys {
					set[k] = struct{}{}
				}
			}
		}
		if dup {
			return w.errorAt(start, Duplicate, fmt.Errorf("duplicate key %q", key))
		}
		if w.visit != nil {
			if err := w.visit(w.path, key); err != nil {
				return w.errorAt(start, Refused, err)
			}
		}
		w.space()
		w.pos++ // :
		w.path = append(w.path, Step{Key: key})
		if err := w.value(); err != nil {
			return err
		}
		w.path = w.path[:len(w.path)-1]
	}
}

func (w *walker) array() error {
	w.pos++ // [
	for i := 0; ; i++ {
		w.space()
		switch w.data[w.pos] {
		case ']':
			w.pos++
			return nil
		case ',':
			w.pos++
		}
		w.path = append(w.path, Step{Index: i, IsIndex: true})
		if err := w.value(); err != nil {
			return err
		}
		w.path = w.path[:len(w.path)-1]
	}
}

// key returns the key whose quoted form is data[start:end], as
// encoding/json decodes it: escapes resolved, invalid UTF-8 replaced.
func (w *walker) key(start, end int) (string, error) {
	raw := w.data[start+1 : end-1]
	plain := true
	for _, c := range raw {
		if c == '\\' || c >= utf8.RuneSelf {
			plain = false
			break
		}
	}
	if plain {
		// Documents repeat their keys (every node has "labels"): keep one
		// copy of each instead of allocating one per occurrence.
		if k, ok := w.keys[string(raw)]; ok {
			return k, nil
		}
		k := string(raw)
		if len(w.keys) < maxInterned {
			w.keys[k] = k
		}
		return k, nil
	}
	var k string
	if err := json.Unmarshal(w.data[start:end], &k); err != nil {
		return "", w.errorAt(start, Syntax, err)
	}
	return k, nil
}

func (w *walker) errorAt(off int, kind Kind, err error) *Error {
	line, col := position(w.data, off)
	return &Error{Kind: kind, Path: append(Path(nil), w.path...), Line: line, Column: col, Err: err}
}
