package strictjson

import (
	"bytes"

	"github.com/go-json-experiment/json/jsontext"
)

// Each calls f for every *Error in err, through the errors that wrap it
// (fmt.Errorf's %w) or join it with others (errors.Join).
func Each(err error, f func(*Error)) {
	switch x := err.(type) {
	case nil:
	case *Error:
		f(x)
	case interface{ Unwrap() []error }:
		for _, e := range x.Unwrap() {
			Each(e, f)
		}
	case interface{ Unwrap() error }:
		Each(x.Unwrap(), f)
	}
}

// Within makes the errors in err, found in a piece of a larger document
// decoded on its own, errors about that document: their paths start with
// at, where the piece is, and their positions, which point into the piece,
// are dropped for Place to find. It returns err.
func Within(err error, at Path) error {
	Each(err, func(e *Error) {
		e.Path = append(at[:len(at):len(at)], e.Path...)
		e.Line, e.Column, e.FirstLine, e.FirstColumn = 0, 0, 0, 0
	})
	return err
}

// Place gives every *Error in err that has no position the line and
// column, in src, of what it is about: the name of a Duplicate member (its
// second occurrence) or of an Unknown one, else the value at its Path (or,
// when src has no such value, the nearest value holding it). src is the
// JSON document, as written, that the errors' paths are paths in. It
// returns err.
//
// Place an error before wrapping it with fmt.Errorf, which writes the text
// of what it wraps when it is called (errors.Join writes it when asked).
func Place(err error, src []byte) error {
	Each(err, func(e *Error) {
		if e.Line > 0 || e.Kind == Syntax || e.Kind == Trailing {
			return
		}
		switch e.Kind {
		case Duplicate:
			if off, ok := locate(src, e.Path, e.Name, 0); ok {
				e.FirstLine, e.FirstColumn = Position(src, off)
			}
			off, _ := locate(src, e.Path, e.Name, 1)
			e.Line, e.Column = Position(src, off)
		case Unknown:
			off, _ := locate(src, e.Path, e.Name, 0)
			e.Line, e.Column = Position(src, off)
		default:
			off, _ := locate(src, e.Path, "", 0)
			e.Line, e.Column = Position(src, off)
		}
	})
	return err
}

// locate finds in src the value at p or, when name is not "", the nth
// (from 0) member called name of the object at p: the byte offset where it
// starts, and whether it was found. When it was not, the offset is that of
// the deepest value on the way that was.
func locate(src []byte, p Path, name string, nth int) (int, bool) {
	dec := jsontext.NewDecoder(bytes.NewReader(src), jsontext.AllowDuplicateNames(true), utf8AsV1)
	at := skipSpace(src, 0)
	for _, s := range p {
		if !enter(dec, s) {
			return at, false
		}
		at = skipSpace(src, int(dec.InputOffset()))
	}
	if name == "" {
		return at, true
	}
	if dec.PeekKind() != '{' {
		return at, false
	}
	if _, err := dec.ReadToken(); err != nil {
		return at, false
	}
	for dec.PeekKind() == '"' {
		before := int(dec.InputOffset())
		tok, err := dec.ReadToken()
		if err != nil {
			break
		}
		if tok.String() == name {
			if nth == 0 {
				return skipSpace(src, before), true
			}
			nth--
		}
		if dec.SkipValue() != nil {
			break
		}
	}
	return at, false
}

// enter moves dec, before a value, to before the value at step s in it.
func enter(dec *jsontext.Decoder, s Step) bool {
	switch dec.PeekKind() {
	case '{':
		if s.IsIndex {
			return false
		}
		if _, err := dec.ReadToken(); err != nil {
			return false
		}
		for dec.PeekKind() == '"' {
			tok, err := dec.ReadToken()
			if err != nil {
				return false
			}
			if tok.String() == s.Key {
				return true
			}
			if dec.SkipValue() != nil {
				return false
			}
		}
	case '[':
		if !s.IsIndex {
			return false
		}
		if _, err := dec.ReadToken(); err != nil {
			return false
		}
		for i := 0; i < s.Index; i++ {
			if dec.PeekKind() == ']' || dec.SkipValue() != nil {
				return false
			}
		}
		return dec.PeekKind() != ']'
	}
	return false
}

// skipSpace returns the offset of the first byte at or after off that is
// not white space or the separator before a value.
func skipSpace(src []byte, off int) int {
	for off < len(src) {
		switch src[off] {
		case ' ', '\t', '\r', '\n', ',', ':':
			off++
		default:
			return off
		}
	}
	return off
}
