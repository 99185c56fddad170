// Package jsonscan reads JSON in one pass, without reflection, for the
// two large documents of a tick, sabakan's answer and the cluster
// (docs/design.md D18): a Scanner reads the plain shape ckegen's and
// sabakan's writers give them and reports false on anything else, and
// its caller then leaves the input to the library, whose reading and
// errors are the reference. It reports no errors and no positions.
package jsonscan

import "unicode/utf8"

// Scanner reads JSON from a byte slice. Every method reads after white
// space and reports false when the input is not what it reads; the
// caller then gives up.
type Scanner struct {
	b []byte
	p int
}

// New returns a Scanner of data from its start.
func New(data []byte) Scanner { return Scanner{b: data} }

// Offset is where the scanner is in its input.
func (s *Scanner) Offset() int { return s.p }

// Len is the length of the input.
func (s *Scanner) Len() int { return len(s.b) }

// Since is the input from start to where the scanner is.
func (s *Scanner) Since(start int) []byte { return s.b[start:s.p] }

// space marks JSON's white space: an indented document is mostly that.
var space = [256]bool{' ': true, '\t': true, '\n': true, '\r': true}

// IsSpace reports whether c is JSON's white space.
func IsSpace(c byte) bool { return space[c] }

// Space skips white space.
func (s *Scanner) Space() {
	b, p := s.b, s.p
	for p < len(b) && space[b[p]] {
		p++
	}
	s.p = p
}

// Peek is the byte after white space, or 0 at the end (0 is never valid
// there).
func (s *Scanner) Peek() byte {
	s.Space()
	if s.p < len(s.b) {
		return s.b[s.p]
	}
	return 0
}

// End reports whether only white space is left.
func (s *Scanner) End() bool {
	s.Space()
	return s.p == len(s.b)
}

// Delim reads c: '{', '}', '[', ']' or ':'.
func (s *Scanner) Delim(c byte) bool {
	if s.Peek() != c {
		return false
	}
	s.p++
	return true
}

// Literal reads word (true, false or null) if it comes.
func (s *Scanner) Literal(word string) bool {
	if s.Peek() != word[0] || len(s.b)-s.p < len(word) || string(s.b[s.p:s.p+len(word)]) != word {
		return false
	}
	s.p += len(word)
	return true
}

// Member reads the next member name of an object after its '{' (first)
// or after a value, and the colon; end reports the object's '}' instead.
func (s *Scanner) Member(first bool) (name []byte, end, ok bool) {
	c := s.Peek()
	if c == '}' {
		s.p++
		return nil, true, true
	}
	if !first {
		if c != ',' {
			return nil, false, false
		}
		s.p++
	}
	if name, ok = s.Str(); !ok || !s.Delim(':') {
		return nil, false, false
	}
	return name, false, true
}

// Element reads what comes before the next element of an array after its
// '[' (first) or after an element; end reports the array's ']' instead.
func (s *Scanner) Element(first bool) (end, ok bool) {
	c := s.Peek()
	if c == ']' {
		s.p++
		return true, true
	}
	if first {
		return false, true
	}
	if c != ',' {
		return false, false
	}
	s.p++
	return false, true
}

// Object reads an object, calling value with the name of each member
// whose value is not null, for value to read the value. A name that is
// not one of names, or that comes twice, gives up (see Once).
func (s *Scanner) Object(names []string, value func(name string) bool) bool {
	if !s.Delim('{') {
		return false
	}
	var seen uint64
	for first := true; ; first = false {
		key, end, ok := s.Member(first)
		if !ok || end {
			return ok
		}
		name := Once(names, key, &seen)
		if name == "" || !s.Literal("null") && !value(name) {
			return false
		}
	}
}

// Once is the one of names (at most 64) that name is, marked in seen, a
// bit for each of names: "" when name is none of them or seen has it
// already. A reader of an object's members gives up on "".
func Once(names []string, name []byte, seen *uint64) string {
	for i, n := range names {
		if n == string(name) && *seen&(1<<i) == 0 {
			*seen |= 1 << i
			return n
		}
	}
	return ""
}

// Array reads an array, calling elem for each element, for elem to read.
func (s *Scanner) Array(elem func() bool) bool {
	if !s.Delim('[') {
		return false
	}
	for first := true; ; first = false {
		end, ok := s.Element(first)
		if !ok || end {
			return ok
		}
		if !elem() {
			return false
		}
	}
}

// plain marks the bytes a string may hold as they are: not ", \, a
// control character or a byte of a multi-byte UTF-8 sequence.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// Str reads a string without escapes, which must be UTF-8, and returns
// its bytes (without the quotes), which point into the input.
func (s *Scanner) Str() ([]byte, bool) {
	if s.Peek() != '"' {
		return nil, false
	}
	b := s.b
	start := s.p + 1
	i := start
	for i < len(b) && plain[b[i]] {
		i++
	}
	if i < len(b) && b[i] == '"' {
		s.p = i + 1
		return b[start:i], true
	}
	// Not ASCII, or not a plain string.
	for ; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			if !utf8.Valid(b[start:i]) {
				return nil, false
			}
			s.p = i + 1
			return b[start:i], true
		case c == '\\' || c < 0x20:
			return nil, false
		}
	}
	return nil, false
}

// Number reads a JSON number and returns its bytes; integer reports
// whether it has neither a fraction nor an exponent.
func (s *Scanner) Number() (num []byte, integer, ok bool) {
	s.Space()
	b, p := s.b, s.p
	start := p
	if p < len(b) && b[p] == '-' {
		p++
	}
	switch {
	case p < len(b) && b[p] == '0':
		p++
	case p < len(b) && b[p] >= '1' && b[p] <= '9':
		for p < len(b) && b[p] >= '0' && b[p] <= '9' {
			p++
		}
	default:
		return nil, false, false
	}
	integer = true
	if p < len(b) && b[p] == '.' {
		integer = false
		p++
		if p >= len(b) || b[p] < '0' || b[p] > '9' {
			return nil, false, false
		}
		for p < len(b) && b[p] >= '0' && b[p] <= '9' {
			p++
		}
	}
	if p < len(b) && (b[p] == 'e' || b[p] == 'E') {
		integer = false
		p++
		if p < len(b) && (b[p] == '+' || b[p] == '-') {
			p++
		}
		if p >= len(b) || b[p] < '0' || b[p] > '9' {
			return nil, false, false
		}
		for p < len(b) && b[p] >= '0' && b[p] <= '9' {
			p++
		}
	}
	s.p = p
	return b[start:p], integer, true
}

// Skip skips a value without checking it: strings end at their first
// unescaped quote and brackets match, as in any valid JSON, so that what
// comes after it is found where it is. The caller has the value checked
// by the library.
func (s *Scanner) Skip() bool {
	var stack []byte
	for {
		switch c := s.Peek(); c {
		case 0:
			return false
		case '"':
			if !s.skipString() {
				return false
			}
		case '{', '[':
			stack = append(stack, c)
			s.p++
		case '}', ']':
			if len(stack) == 0 || stack[len(stack)-1] != c-2 { // '{'+2 == '}', '['+2 == ']'
				return false
			}
			stack = stack[:len(stack)-1]
			s.p++
		case ',', ':':
			if len(stack) == 0 {
				return false
			}
			s.p++
		default:
			for s.p < len(s.b) && !space[s.b[s.p]] && !isDelimiter(s.b[s.p]) {
				s.p++
			}
		}
		if len(stack) == 0 {
			return true
		}
	}
}

func isDelimiter(c byte) bool {
	return c == ',' || c == ':' || c == '{' || c == '}' || c == '[' || c == ']' || c == '"'
}

// skipString skips a string, escapes and all.
func (s *Scanner) skipString() bool {
	for i := s.p + 1; i < len(s.b); i++ {
		switch s.b[i] {
		case '\\':
			i++
		case '"':
			s.p = i + 1
			return true
		}
	}
	return false
}
