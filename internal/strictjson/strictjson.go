// Package strictjson decodes JSON strictly, on the json/v2 API
// (github.com/go-json-experiment/json, which Go 1.27 ships as
// encoding/json/v2): the input is exactly one JSON value, object member
// names are matched exactly (not ignoring case, as encoding/json does), a
// name given twice in one object is refused (encoding/json keeps the last),
// and so is a member that the Go struct it is decoded into does not have.
//
// Every failure is an *Error that says what is wrong, the path of the
// object or value it is in (nodes[0].labels) and the line and column.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/ckegen/ckegen/internal/suggest"
)

// Unmarshal decodes data, exactly one JSON value, into v: names matched
// exactly, a name given twice refused, a member v's structs do not have
// refused. Invalid UTF-8 in a string is read as U+FFFD, as encoding/json
// reads it.
func Unmarshal(data []byte, v any) error {
	return unmarshal(data, v, strict)
}

// UnmarshalIgnoringUnknown is Unmarshal that skips the members v's structs
// do not have, for documents of which only a few fields are read (a
// Kubernetes object). Names are still matched exactly and a name given
// twice is still refused.
func UnmarshalIgnoringUnknown(data []byte, v any) error {
	return unmarshal(data, v, lenient)
}

var (
	// utf8AsV1 keeps encoding/json's reading of invalid UTF-8, which every
	// input of ckegen has been read with.
	utf8AsV1 = jsontext.AllowInvalidUTF8(true)
	strict   = jsonv2.JoinOptions(jsonv2.RejectUnknownMembers(true), utf8AsV1)
	lenient  = jsonv2.JoinOptions(jsonv2.RejectUnknownMembers(false), utf8AsV1)
)

func unmarshal(data []byte, v any, opts jsonv2.Options) error {
	err := jsonv2.Unmarshal(data, v, opts)
	if err == nil {
		return nil
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
	return describe(data, err)
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
	// Unknown: an object has a member its Go struct does not have.
	Unknown
	// Type: a value the Go type cannot hold (a string for a number).
	Type
)

// Error is a problem with the input and where it is.
type Error struct {
	Kind Kind
	// Path is, for Duplicate and Unknown, the object holding Name and, for
	// Type, the value; nil for the top level and for Syntax and Trailing.
	Path Path
	// Name is the member name given twice (Duplicate) or not known
	// (Unknown).
	Name string
	// Value names the JSON value of a Type error as encoding/json does:
	// string, number (with its text when the number itself does not fit:
	// "number 1.5" for an int), object, array, bool or null.
	Value string
	// GoType is the Go type of a Type error, or the struct of an Unknown
	// member.
	GoType reflect.Type
	// Line and Column (1-based, in bytes) locate the problem in the input;
	// 0 when unknown. A caller that decoded a piece of a larger document
	// sets them to 0, as they would point into the piece.
	Line, Column int
	// Msg says what is wrong, without the path and the position; a caller
	// may word it its own way.
	Msg string
	// Err is json/v2's error.
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	if p := e.Path.String(); p != "" {
		b.WriteString(p)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	if e.Line > 0 {
		fmt.Fprintf(&b, " (line %d, column %d)", e.Line, e.Column)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// describe turns json/v2's error about data into an *Error.
func describe(data []byte, err error) error {
	var syn *jsontext.SyntacticError
	var sem *jsonv2.SemanticError
	switch {
	case errors.As(err, &syn):
		return syntactic(data, err, syn)
	case errors.As(err, &sem):
		return semantic(data, err, sem)
	}
	return err // not about the input (an unsupported Go type)
}

func syntactic(data []byte, err error, syn *jsontext.SyntacticError) *Error {
	off := int(syn.ByteOffset)
	e := &Error{Err: err}
	e.Line, e.Column = position(data, off)
	switch {
	case errors.Is(syn.Err, jsontext.ErrDuplicateName):
		e.Kind, e.Path, e.Name = Duplicate, resolve(data, syn.ByteOffset, syn.JSONPointer.Parent()), syn.JSONPointer.LastToken()
		e.Msg = fmt.Sprintf("duplicate key %q", e.Name)
	case len(bytes.TrimSpace(data)) == 0:
		e.Kind, e.Msg, e.Line, e.Column = Syntax, "no JSON value", 0, 0
	case off > 0 && off <= len(data) && syn.JSONPointer == "" && jsontext.Value(data[:off]).IsValid(utf8AsV1):
		e.Kind, e.Msg = Trailing, "trailing data after the JSON value"
	default:
		e.Kind, e.Msg = Syntax, syntaxText(data, syn)
	}
	return e
}

// syntaxText says what breaks the syntax in encoding/json's words, which
// ckegen's messages have always used (json/v2 words them differently);
// json/v2's own text when encoding/json finds nothing wrong.
func syntaxText(data []byte, syn *jsontext.SyntacticError) string {
	var v json.RawMessage
	err := json.NewDecoder(bytes.NewReader(data)).Decode(&v)
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return strings.TrimPrefix(se.Error(), "json: ")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "unexpected EOF"
	}
	return syn.Err.Error()
}

func semantic(data []byte, err error, sem *jsonv2.SemanticError) *Error {
	e := &Error{Err: err, GoType: sem.GoType}
	e.Line, e.Column = position(data, int(sem.ByteOffset))
	if errors.Is(sem.Err, jsonv2.ErrUnknownName) {
		e.Kind, e.Path, e.Name = Unknown, resolve(data, sem.ByteOffset, sem.JSONPointer.Parent()), sem.JSONPointer.LastToken()
		e.Msg = fmt.Sprintf("unknown field %q", e.Name)
		if s, ok := suggest.Closest(e.Name, FieldNames(sem.GoType)); ok {
			e.Msg += fmt.Sprintf("; did you mean %s?", s)
		}
		return e
	}
	e.Kind, e.Path = Type, resolve(data, sem.ByteOffset, sem.JSONPointer)
	e.Value = kindName(sem.JSONKind)
	if e.Value == "number" && len(sem.JSONValue) > 0 {
		e.Value += " " + string(sem.JSONValue)
	}
	e.Msg = fmt.Sprintf("cannot unmarshal %s into Go value of type %v", e.Value, sem.GoType)
	return e
}

// kindName names a JSON kind as encoding/json's type errors do.
func kindName(k jsontext.Kind) string {
	switch k {
	case '"':
		return "string"
	case '0':
		return "number"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	}
	return "value"
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

// position turns a byte offset into a 1-based line and column.
func position(data []byte, off int) (line, col int) {
	off = min(max(off, 0), len(data))
	line = 1 + bytes.Count(data[:off], []byte{'\n'})
	return line, off - bytes.LastIndexByte(data[:off], '\n')
}

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
