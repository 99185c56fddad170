package policy

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The constraint languages (docs/design.md 12.2, 12.3) share one lexer: words,
// quoted values, comparison operators, parentheses and commas. Keywords
// (is, not, in, greater, than, ...) are words; the parsers give them their
// meaning by position, so a label may be called "in".

type tokenKind int

const (
	tokEOF    tokenKind = iota
	tokWord             // unquoted: label keys, values, keywords, numbers
	tokString           // "..." or '...': text is the value without quotes
	tokOp               // = == != < <= > >= => =<
	tokLParen
	tokRParen
	tokComma
)

type token struct {
	kind tokenKind
	text string
	col  int // 1-based, in characters
}

// describe names a token in an error message: what the parser got.
func (t token) describe() string {
	switch t.kind {
	case tokEOF:
		return "the end of the constraint"
	case tokString:
		return "the quoted value " + quoteValue(t.text)
	}
	return strconv.Quote(t.text)
}

// SyntaxError is a constraint that does not parse: where, and what was
// expected there.
type SyntaxError struct {
	Column int // 1-based, in characters
	Msg    string
}

// Error names the character of the constraint, not a column of the
// document it is in (which the policy's errors give before).
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("character %d of the constraint: %s", e.Column, e.Msg)
}

func errorAt(col int, format string, args ...any) error {
	return &SyntaxError{Column: col, Msg: fmt.Sprintf(format, args...)}
}

// special runes end an unquoted word.
func special(r rune) bool {
	switch r {
	case '(', ')', ',', '"', '\'', '=', '!', '<', '>':
		return true
	}
	return unicode.IsSpace(r)
}

func lex(s string) ([]token, error) {
	var toks []token
	col := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		col++
		start, startCol := i, col
		switch {
		case unicode.IsSpace(r):
			i += size
		case r == '(' || r == ')' || r == ',':
			kind := tokComma
			switch r {
			case '(':
				kind = tokLParen
			case ')':
				kind = tokRParen
			}
			toks = append(toks, token{kind, string(r), startCol})
			i += size
		case r == '"' || r == '\'':
			end := strings.IndexRune(s[i+size:], r)
			if end < 0 {
				return nil, errorAt(startCol, "unterminated quoted value: expected a closing %c", r)
			}
			text := s[i+size : i+size+end]
			toks = append(toks, token{tokString, text, startCol})
			col += utf8.RuneCountInString(text) + 1
			i += size + end + size
		case r == '=' || r == '!' || r == '<' || r == '>':
			op := string(r)
			if i+1 < len(s) {
				switch two := s[i : i+2]; two {
				case "==", "!=", "<=", ">=", "=>", "=<":
					op = two
				}
			}
			if op == "!" {
				return nil, errorAt(startCol, `expected "!=", got "!" alone`)
			}
			toks = append(toks, token{tokOp, op, startCol})
			col += len(op) - 1
			i += len(op)
		default:
			i += size
			for i < len(s) {
				r, size := utf8.DecodeRuneInString(s[i:])
				if special(r) {
					break
				}
				i += size
				col++
			}
			toks = append(toks, token{tokWord, s[start:i], startCol})
		}
	}
	toks = append(toks, token{tokEOF, "", col + 1})
	return toks, nil
}

// parser walks the tokens of one constraint.
type parser struct {
	toks []token
	pos  int
}

func (p *parser) peek() token { return p.toks[p.pos] }

func (p *parser) next() token {
	t := p.toks[p.pos]
	if t.kind != tokEOF {
		p.pos++
	}
	return t
}

// isWord reports whether t is the unquoted word w (a keyword).
func isWord(t token, w string) bool { return t.kind == tokWord && t.text == w }

// end checks that nothing follows a complete constraint.
func (p *parser) end() error {
	if t := p.next(); t.kind != tokEOF {
		return errorAt(t.col, "expected the end of the constraint, got %s", t.describe())
	}
	return nil
}

// quoteValue writes a value so that the lexer reads it back as one value:
// bare when it is a plain word that is no keyword, quoted otherwise.
func quoteValue(v string) string {
	bare := v != "" && !keywords[v]
	for _, r := range v {
		if special(r) {
			bare = false
			break
		}
	}
	if bare {
		return v
	}
	if strings.ContainsRune(v, '"') {
		return "'" + v + "'"
	}
	return `"` + v + `"`
}

// keywords are words that mean something after a label or metric name;
// values spelled like them are written quoted.
var keywords = map[string]bool{
	"is": true, "not": true, "in": true, "greater": true, "less": true, "than": true,
	"or": true, "equal": true, "gt": true, "gte": true, "lt": true, "lte": true,
}
