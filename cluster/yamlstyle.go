package cluster

import (
	"strconv"
	"strings"
	"time"
	"unicode"
)

// This file holds what yaml.v2 decides when it writes a string, for the
// strings this package writes itself: whether a string needs quotes, and
// the order of map keys. yaml_test.go checks both against yaml.v2 itself.

// scalar appends s as yaml.v2 writes a string in block context, or reports
// false when s has a character outside [A-Za-z0-9._/+:-] (or is a map key
// longer than 128 bytes, which yaml.v2 writes as a complex key): spaces,
// quotes, line breaks, '#', non-ASCII and the like are left to yaml.v2.
//
// With those characters only, yaml.v2 writes s plain unless s would read back
// as something other than a string (true, null, 1, 1.5, 0x1f, 1:30, a date),
// then in double quotes; plain text that YAML reads as an indicator (-, ---,
// ..., a trailing ':') goes in single quotes.
func (w *yamlWriter) scalar(out []byte, s string, key bool) ([]byte, bool) {
	if key && len(s) > 128 {
		return out, false
	}
	for i := 0; i < len(s); i++ {
		if !simpleByte(s[i]) {
			return out, false
		}
	}
	switch {
	case w.nonString(s) || isSexagesimal(s):
		out = append(out, '"')
		out = append(out, s...)
		return append(out, '"'), true
	case s == "-" || strings.HasPrefix(s, "---") || strings.HasPrefix(s, "...") || strings.HasSuffix(s, ":"):
		out = append(out, '\'')
		out = append(out, s...)
		return append(out, '\''), true
	}
	return append(out, s...), true
}

func simpleByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '.' || c == '_' || c == '/' || c == '+' || c == ':' || c == '-'
}

// yaml11Words are the plain words YAML 1.1 reads as booleans, null or
// special floats.
var yaml11Words = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`y Y yes Yes YES n N no No NO true True TRUE false False FALSE
		on On ON off Off OFF ~ null Null NULL .nan .NaN .NAN .inf .Inf .INF +.inf +.Inf +.INF -.inf -.Inf -.INF`) {
		yaml11Words[w] = true
	}
}

// nonString reports whether yaml.v2 reads the plain scalar s as something
// other than a string. Like yaml.v2, it guesses from the first character
// which kinds to try: a word, a float starting with '.', or a number or
// date starting with a digit or a sign.
func (w *yamlWriter) nonString(s string) bool {
	if s == "" || yaml11Words[s] {
		return true
	}
	switch c := s[0]; {
	case c == '.':
		_, err := strconv.ParseFloat(s, 64)
		return err == nil
	case c == '+' || c == '-' || c >= '0' && c <= '9':
		// Integers have no '.', floats and dates at most one: an IPv4
		// address is a string.
		if strings.Count(s, ".") > 1 {
			return false
		}
		// The same few numbers and dates come back on every node.
		if ns, ok := w.numeric[s]; ok {
			return ns
		}
		ns := isTimestamp(s) || isNumber(s)
		w.numeric[s] = ns
		return ns
	}
	return false
}

// isNumber reports whether yaml.v2 reads s, which starts with a digit or a
// sign, as an integer or a float.
func isNumber(s string) bool {
	n := strings.ReplaceAll(s, "_", "")
	if _, err := strconv.ParseInt(n, 0, 64); err == nil {
		return true
	}
	if _, err := strconv.ParseUint(n, 0, 64); err == nil {
		return true
	}
	if isYAMLFloat(n) {
		if _, err := strconv.ParseFloat(n, 64); err == nil {
			return true
		}
	}
	// Base 0 above takes 0b101; these also take a sign after the prefix
	// (0b-1), as yaml.v2 does.
	if b, ok := strings.CutPrefix(n, "0b"); ok {
		if _, err := strconv.ParseInt(b, 2, 64); err == nil {
			return true
		}
		_, err := strconv.ParseUint(b, 2, 64)
		return err == nil
	}
	if b, ok := strings.CutPrefix(n, "-0b"); ok {
		_, err := strconv.ParseInt("-"+b, 2, 64)
		return err == nil
	}
	return false
}

// timestampLayouts are the forms of YAML timestamp that yaml.v2 reads.
var timestampLayouts = []string{
	"2006-1-2T15:4:5.999999999Z07:00",
	"2006-1-2t15:4:5.999999999Z07:00",
	"2006-1-2 15:4:5.999999999",
	"2006-1-2",
}

// isTimestamp reports whether yaml.v2 reads s as a timestamp: four digits,
// a dash, then one of timestampLayouts.
func isTimestamp(s string) bool {
	if len(s) < 5 || s[4] != '-' {
		return false
	}
	for i := range 4 {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	for _, l := range timestampLayouts {
		if _, err := time.Parse(l, s); err == nil {
			return true
		}
	}
	return false
}

// isYAMLFloat reports whether s has the form of a YAML 1.1 float:
// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
func isYAMLFloat(s string) bool {
	i := 0
	digits := func() int {
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	} else {
		if digits() == 0 {
			return false
		}
		if i < len(s) && s[i] == '.' {
			i++
			digits()
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

// isSexagesimal reports whether s is a YAML 1.1 base 60 number (1:30,
// -2:10:05.5), which yaml.v2 quotes for other YAML 1.1 readers:
// [-+]?[0-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)?
func isSexagesimal(s string) bool {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	if i == len(s) || s[i] < '0' || s[i] > '9' {
		return false
	}
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '_') {
		i++
	}
	groups := 0
	for i < len(s) && s[i] == ':' {
		i++
		// One or two digits, the first of two at most 5.
		switch {
		case i+1 < len(s) && s[i] >= '0' && s[i] <= '5' && s[i+1] >= '0' && s[i+1] <= '9':
			i += 2
		case i < len(s) && s[i] >= '0' && s[i] <= '9':
			i++
		default:
			return false
		}
		groups++
	}
	if groups == 0 {
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '_') {
			i++
		}
	}
	return i == len(s)
}

// yamlKeyLess orders map keys as yaml.v2 does: character by character,
// letters after other characters, and runs of digits by their value
// (a2 < a10), a shorter run first when the values are equal.
func yamlKeyLess(a, b string) bool {
	var abuf, bbuf [64]rune
	return runesLess(appendRunes(abuf[:0], a), appendRunes(bbuf[:0], b))
}

func appendRunes(buf []rune, s string) []rune {
	for _, r := range s {
		buf = append(buf, r)
	}
	return buf
}

func runesLess(a, b []rune) bool {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] == b[i] {
			continue
		}
		al, bl := unicode.IsLetter(a[i]), unicode.IsLetter(b[i])
		if al && bl {
			return a[i] < b[i]
		}
		if al || bl {
			return bl
		}
		// Compare the runs of digits starting here as numbers. A '0' that
		// continues a run with a nonzero digit before it adds to that run's
		// value (both sides share the prefix).
		var an, bn int64
		if a[i] == '0' || b[i] == '0' {
			for j := i - 1; j >= 0 && unicode.IsDigit(a[j]); j-- {
				if a[j] != '0' {
					an, bn = 1, 1
					break
				}
			}
		}
		ai, bi := i, i
		for ; ai < len(a) && unicode.IsDigit(a[ai]); ai++ {
			an = an*10 + int64(a[ai]-'0')
		}
		for ; bi < len(b) && unicode.IsDigit(b[bi]); bi++ {
			bn = bn*10 + int64(b[bi]-'0')
		}
		if an != bn {
			return an < bn
		}
		if ai != bi {
			return ai < bi
		}
		return a[i] < b[i]
	}
	return len(a) < len(b)
}
