package strictjson

import (
	"strconv"
	"strings"
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

// String writes p the way a document's author reads it:
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
