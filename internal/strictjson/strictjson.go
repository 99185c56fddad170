// Package strictjson decodes JSON strictly, on the json/v2 API
// (github.com/go-json-experiment/json, which Go 1.27 ships as
// encoding/json/v2): the input is exactly one JSON value, object member
// names are matched exactly (not ignoring case, as encoding/json does), a
// name given twice in one object is refused (encoding/json keeps the last),
// and so is a member that the Go struct it is decoded into does not have.
//
// Every problem with an input, found by the decoder or by its caller, is an
// *Error: what is wrong in JSON's words (an object, a string, never a Go
// type), the path of the value in the document (nodes[0].labels) and the
// line and column. Callers wrap it ("template: %w") and do not reword it.
package strictjson

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/ckegen/ckegen/internal/suggest"
)

// Unmarshal decodes data, exactly one JSON value, into v: names matched
// exactly, a name given twice refused, a member v's structs do not have
// refused. Invalid UTF-8 in a string is read as U+FFFD, as encoding/json
// reads it.
func Unmarshal(data []byte, v any, opts ...Option) error {
	return unmarshal(data, v, strict, opts)
}

// UnmarshalIgnoringUnknown is Unmarshal that skips the members v's structs
// do not have, for documents of which only a few fields are read (a
// Kubernetes object). Names are still matched exactly and a name given
// twice is still refused.
func UnmarshalIgnoringUnknown(data []byte, v any, opts ...Option) error {
	return unmarshal(data, v, lenient, opts)
}

// An Option changes how errors are worded. It costs nothing when the input
// is decoded without an error.
type Option struct {
	document string
}

// Document names what the whole input is ("a cluster.yml document"), for a
// top-level value of the wrong kind: want an object (a cluster.yml
// document), got an array.
func Document(what string) Option {
	return Option{document: what}
}

// Check reports what keeps data from being exactly one JSON value without
// a name given twice in an object, as an *Error; nil when nothing does.
func Check(data []byte) error {
	if err := jsonv2.Unmarshal(data, new(jsontext.Value), utf8AsV1); err != nil {
		return describe(data, err, Option{})
	}
	return nil
}

var (
	// utf8AsV1 keeps encoding/json's reading of invalid UTF-8, which every
	// input of ckegen has been read with.
	utf8AsV1 = jsontext.AllowInvalidUTF8(true)
	strict   = jsonv2.JoinOptions(jsonv2.RejectUnknownMembers(true), utf8AsV1)
	lenient  = jsonv2.JoinOptions(jsonv2.RejectUnknownMembers(false), utf8AsV1)
)

func unmarshal(data []byte, v any, jopts jsonv2.Options, opts []Option) error {
	err := jsonv2.Unmarshal(data, v, jopts)
	if err == nil {
		return nil
	}
	var cfg Option
	for _, o := range opts {
		if o.document != "" {
			cfg.document = o.document
		}
	}
	var syn *jsontext.SyntacticError
	if !errors.As(err, &syn) {
		// What the input is comes before what it means: input that is not
		// one JSON value without a repeated name is reported as such, not
		// by the first value's type ("name": x is YAML, not a string).
		if verr := jsonv2.Unmarshal(data, new(jsontext.Value), utf8AsV1); verr != nil {
			err = verr
		}
	}
	return describe(data, err, cfg)
}

// Kind says what is wrong with the input.
type Kind int

const (
	// Syntax: the input is not a JSON value.
	Syntax Kind = iota + 1
	// Trailing: a JSON value is followed by more data.
	Trailing
	// Duplicate: an object has the same name twice.
	Duplicate
	// Unknown: an object has a member that is not known there.
	Unknown
	// Type: a value of the wrong kind (a string for a number), or a value
	// of the right kind that its type cannot hold (1.5 for an integer).
	Type
	// Invalid: a value that is well formed but not valid, as its caller
	// says.
	Invalid
)

// Error is a problem with the input, and where it is.
type Error struct {
	Kind Kind
	// Path is, for Duplicate and Unknown, the object holding Name and,
	// otherwise, the value; nil for the top level, and for Syntax and
	// Trailing.
	Path Path
	// Name is the member name given twice (Duplicate) or not known
	// (Unknown).
	Name string
	// Known are the names an Unknown member could have had; the closest is
	// suggested.
	Known []string
	// Want and Got are, for Type, what the value must be and what it is,
	// in JSON's words: "an array of strings", "the number 1.5".
	Want, Got string
	// Msg says what is wrong for Syntax, Trailing and Invalid; for Type, it
	// adds to Want and Got why the value does not fit ("out of range").
	Msg string
	// Line and Column (1-based; the column counts characters) locate the
	// problem in the input: the name of a Duplicate or Unknown member, else
	// the value. 0 when not known.
	Line, Column int
	// FirstLine and FirstColumn locate, for Duplicate, the name's first
	// occurrence; 0 when not known.
	FirstLine, FirstColumn int
	// GoType is the Go type of a Type error, or the struct of an Unknown
	// member; nil when the caller found the problem. It is never printed.
	GoType reflect.Type
	// Err is json/v2's error, or nil.
	Err error
}

// Error writes the position, the path and what is wrong:
//
//	line 3, column 12: nodes[0].labels: want an object, got an array
func (e *Error) Error() string {
	var b strings.Builder
	switch {
	case e.Line > 0 && e.Column > 0:
		fmt.Fprintf(&b, "line %d, column %d: ", e.Line, e.Column)
	case e.Line > 0:
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if p := e.Path.String(); p != "" {
		b.WriteString(p)
		b.WriteString(": ")
	}
	b.WriteString(e.What())
	return b.String()
}

// What says what is wrong, without the position and the path.
func (e *Error) What() string {
	switch e.Kind {
	case Duplicate:
		s := fmt.Sprintf("duplicate key %q", e.Name)
		if e.FirstLine > 0 {
			s += fmt.Sprintf(" (first at line %d, column %d)", e.FirstLine, e.FirstColumn)
		}
		return s
	case Unknown:
		s := fmt.Sprintf("unknown field %q", e.Name)
		if m, ok := suggest.Closest(e.Name, e.Known); ok {
			return s + "; did you mean " + m + "?"
		}
		if len(e.Known) > 0 {
			return s + " (known fields: " + strings.Join(e.Known, ", ") + ")"
		}
		return s
	case Type:
		var s string
		switch {
		case e.Want != "" && e.Got != "":
			s = "want " + e.Want + ", got " + e.Got
		case e.Want != "":
			s = "want " + e.Want
		default:
			s = "cannot use " + cmp.Or(e.Got, "this value") + " here"
		}
		if e.Msg != "" {
			s += ": " + e.Msg
		}
		return s
	}
	return e.Msg
}

func (e *Error) Unwrap() error { return e.Err }

// WrongKind is the error of a value at p that is not what the caller
// wants: want in JSON's words ("an object"), raw the value as written.
func WrongKind(p Path, want string, raw []byte) *Error {
	return &Error{Kind: Type, Path: p, Want: want, Got: What(raw)}
}

// UnknownField is the error of a member name in the object at p that is
// not one of known.
func UnknownField(p Path, name string, known []string) *Error {
	return &Error{Kind: Unknown, Path: p, Name: name, Known: known}
}

// Invalidf is the error of the value at p, well formed but not valid.
func Invalidf(p Path, format string, args ...any) *Error {
	return &Error{Kind: Invalid, Path: p, Msg: fmt.Sprintf(format, args...)}
}

// Wants is the error an UnmarshalJSON method returns for a value it cannot
// hold: what it wants, in JSON's words ("a duration such as 10s"). Unmarshal
// reports it as a Type error at the value.
func Wants(what string) error { return wantError(what) }

type wantError string

func (w wantError) Error() string { return "want " + string(w) }

// describe turns json/v2's error about data into an *Error.
func describe(data []byte, err error, cfg Option) error {
	var syn *jsontext.SyntacticError
	var sem *jsonv2.SemanticError
	switch {
	case errors.As(err, &syn):
		return syntactic(data, err, syn)
	case errors.As(err, &sem):
		return semantic(data, err, sem, cfg)
	}
	return err // not about the input (an unsupported Go type)
}

func syntactic(data []byte, err error, syn *jsontext.SyntacticError) *Error {
	off := int(syn.ByteOffset)
	e := &Error{Err: err}
	e.Line, e.Column = Position(data, off)
	switch {
	case errors.Is(syn.Err, jsontext.ErrDuplicateName):
		e.Kind, e.Path, e.Name = Duplicate, resolve(data, syn.ByteOffset, syn.JSONPointer.Parent()), syn.JSONPointer.LastToken()
		if first, ok := locate(data, e.Path, e.Name, 0); ok && first < off {
			e.FirstLine, e.FirstColumn = Position(data, first)
		}
	case len(bytes.TrimSpace(data)) == 0:
		e.Kind, e.Msg, e.Line, e.Column = Syntax, "no JSON value", 0, 0
	case off > 0 && off <= len(data) && syn.JSONPointer == "" && jsontext.Value(data[:off]).IsValid(utf8AsV1):
		e.Kind, e.Msg = Trailing, "trailing data after the JSON value"
	case errors.Is(syn.Err, io.ErrUnexpectedEOF):
		e.Kind, e.Msg = Syntax, "unexpected end of input: the JSON value is not complete"
	default:
		// json/v2's own words: invalid character '}' at start of value.
		e.Kind, e.Msg = Syntax, syn.Err.Error()
	}
	return e
}

func semantic(data []byte, err error, sem *jsonv2.SemanticError, cfg Option) *Error {
	e := &Error{Err: err, GoType: sem.GoType}
	off := int(sem.ByteOffset)
	e.Line, e.Column = Position(data, off)
	if errors.Is(sem.Err, jsonv2.ErrUnknownName) {
		e.Kind, e.Path, e.Name = Unknown, resolve(data, sem.ByteOffset, sem.JSONPointer.Parent()), sem.JSONPointer.LastToken()
		e.Known = FieldNames(sem.GoType)
		return e
	}
	e.Kind, e.Path = Type, resolve(data, sem.ByteOffset, sem.JSONPointer)
	if off >= 0 && off <= len(data) {
		e.Got = What(data[off:])
	}
	var want wantError
	switch {
	case errors.As(sem.Err, &want):
		e.Want = string(want)
	default:
		e.Want = WantOf(sem.GoType)
		e.Msg = detail(sem.Err)
	}
	if len(e.Path) == 0 && cfg.document != "" && e.Want != "" {
		e.Want += " (" + cfg.document + ")"
	}
	return e
}

// detail says why a value of the right kind does not fit, from json/v2's
// underlying error; "" when the kinds say it all, or when the error would
// name Go types.
func detail(err error) string {
	switch {
	case err == nil, errors.Is(err, strconv.ErrSyntax):
		return ""
	case errors.Is(err, strconv.ErrRange):
		return "out of range"
	}
	var pe *time.ParseError
	if errors.As(err, &pe) {
		// What the layout says is in the want; a value out of range is not.
		return strings.TrimPrefix(pe.Message, ": ")
	}
	if s := err.Error(); !strings.HasPrefix(s, "json: ") {
		return s
	}
	return "" // encoding/json's words, with Go types

}

// WantOf says what a value of Go type t is in JSON's words: an object, an
// array of strings, an integer, true or false.
func WantOf(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return ""
	}
	switch t.PkgPath() + "." + t.Name() {
	case "time.Time":
		return "a time such as 2006-01-02T15:04:05Z (RFC 3339)"
	case "time.Duration":
		return "a duration"
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 && t.Kind() == reflect.Slice {
			return "a base64 string"
		}
		if elem := plural(WantOf(t.Elem())); elem != "" {
			return "an array of " + elem
		}
		return "an array"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "an integer >= 0"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Interface:
		return "a JSON value"
	}
	return "a value of another kind"
}

// plural turns "an object" into "objects"; "" for what has no plural here.
func plural(what string) string {
	for _, p := range []struct{ one, many string }{
		{"an object", "objects"}, {"a string", "strings"}, {"an integer", "integers"},
		{"a number", "numbers"}, {"true or false", "true or false values"},
		{"an array", "arrays"},
	} {
		if what == p.one || strings.HasPrefix(what, p.one+" of ") {
			return p.many
		}
	}
	return ""
}

// What names the JSON value that raw starts with (after white space), for
// errors: the string "x", the number 1.5, an object, an array, true, false,
// null. A long string or number is cut short.
func What(raw []byte) string {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't':
		return "true"
	case 'f':
		return "false"
	case 'n':
		return "null"
	case '"':
		tok, err := jsontext.NewDecoder(bytes.NewReader(raw), utf8AsV1).ReadToken()
		if err != nil {
			return "a string"
		}
		s := tok.String()
		if utf8.RuneCountInString(s) > 40 {
			s = string([]rune(s)[:40]) + "..."
		}
		return "the string " + strconv.Quote(s)
	}
	tok, err := jsontext.NewDecoder(bytes.NewReader(raw)).ReadToken()
	if err != nil || tok.Kind() != '0' {
		return "a number"
	}
	n := tok.String()
	if len(n) > 40 {
		n = n[:40] + "..."
	}
	return "the number " + n
}

// FieldNames lists the JSON member names of struct type t (or of the struct
// t points to), as json/v2 matches them: a field's tag name, else its Go
// name; embedded structs without a tag contribute their fields. It is nil
// for any other type.
func FieldNames(t reflect.Type) []string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag, hasTag := f.Tag.Lookup("json")
		name, _, _ := strings.Cut(tag, ",")
		switch {
		case name == "-" && tag == "-":
			continue
		case f.Anonymous && name == "":
			names = append(names, FieldNames(f.Type)...)
			continue
		case !f.IsExported():
			continue
		case !hasTag || name == "":
			name = f.Name
		}
		names = append(names, name)
	}
	return names
}

// resolve turns ptr, the JSON pointer of a problem at byte off, into a
// Path. A pointer writes an array index and an object name alike ("/1"), so
// data is read up to off, where the decoder knows which of the levels
// holding the problem are arrays.
func resolve(data []byte, off int64, ptr jsontext.Pointer) Path {
	dec := jsontext.NewDecoder(bytes.NewReader(data), jsontext.AllowDuplicateNames(true), utf8AsV1)
	for dec.InputOffset() < off {
		if _, err := dec.ReadToken(); err != nil {
			break
		}
	}
	var p Path
	level, depth := 0, dec.StackDepth()
	for tok := range ptr.Tokens() {
		level++
		if i, err := strconv.Atoi(tok); err == nil && level <= depth {
			if kind, _ := dec.StackIndex(level); kind == '[' {
				p = p.Index(i)
				continue
			}
		}
		p = p.Key(tok)
	}
	return p
}

// Position turns a byte offset in data into a 1-based line and column, the
// column counted in characters (an invalid UTF-8 byte counts as one).
func Position(data []byte, off int) (line, col int) {
	off = min(max(off, 0), len(data))
	line = 1 + bytes.Count(data[:off], []byte{'\n'})
	start := bytes.LastIndexByte(data[:off], '\n') + 1
	return line, 1 + utf8.RuneCount(data[start:off])
}
