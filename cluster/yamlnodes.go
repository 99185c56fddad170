package cluster

import (
	"bytes"
	"strings"

	"github.com/ckegen/ckegen/internal/jsonscan"
)

// parseFastYAML reads a YAML cluster.yml in the block layout yaml.v2
// (sigs.k8s.io/yaml, which ckegen's writer matches) gives it: top-level
// keys at column 0, the nodes a sequence at column 0 under "nodes:", each
// node a mapping of the node's fields at column 2, annotations and labels
// mappings at column 4, taints a sequence at column 2 of mappings, every
// scalar on its line, in the styles the writer uses (plain where YAML 1.1
// reads it as that string, else in quotes).
//
// Every line outside the nodes must be one that opens nothing that could
// go on past its end (a quoted scalar, a flow collection, a block scalar,
// an alias, a tag, a comment): then the lines at column 0 are the
// document's top-level keys, and the nodes are the lines under "nodes:"
// up to the next of them. The rest of the document, with "nodes: []" in
// place of the nodes, is read by the strict path.
func parseFastYAML(data []byte) (*Cluster, bool) {
	if len(data) == 0 || !isTopKeyByte(data[0], true) ||
		bytes.IndexByte(data, '\t') >= 0 || bytes.IndexByte(data, '\r') >= 0 {
		return nil, false
	}
	r := yamlIn{b: data, w: newYAMLWriter()}
	start, end := -1, -1
	var nodes []*Node
	for r.p < len(r.b) {
		line, next := r.line()
		if len(line) == 0 {
			return nil, false
		}
		if line[0] == ' ' || line[0] == '-' {
			// A line of a top-level value.
			if !safeLine(line) {
				return nil, false
			}
			r.p = next
			continue
		}
		if string(line) != "nodes:" {
			if !safeTopLine(line) {
				return nil, false
			}
			r.p = next
			continue
		}
		if start >= 0 {
			return nil, false // twice: the strict path says so
		}
		start = r.p
		r.p = next
		var ok bool
		if nodes, ok = r.nodes(); !ok {
			return nil, false
		}
		end = r.p
		// What follows is the next top-level key, or nothing.
		if end < len(r.b) && !isTopKeyByte(r.b[end], true) {
			return nil, false
		}
	}
	if start < 0 {
		return nil, false
	}
	c, err := parseStrict(withoutNodes(data, start, end, "nodes: []\n"))
	if err != nil || len(c.Nodes) != 0 {
		return nil, false
	}
	c.Nodes = nodes
	return c, true
}

// isTopKeyByte reports whether c may be in a top-level key (first: start
// it): cluster.yml's keys are snake_case.
func isTopKeyByte(c byte, first bool) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || !first && c >= '0' && c <= '9'
}

// safeTopLine reports whether line is a top-level key, "key:" or
// "key: scalar" with a scalar that ends on the line.
func safeTopLine(line []byte) bool {
	i := 0
	for i < len(line) && isTopKeyByte(line[i], i == 0) {
		i++
	}
	if i == 0 || i == len(line) || line[i] != ':' {
		return false
	}
	return safeAfterKey(line[i+1:])
}

// safeAfterKey reports whether what follows a key's colon is nothing, or
// one space and a scalar that ends on the line.
func safeAfterKey(after []byte) bool {
	if len(after) == 0 {
		return true
	}
	return after[0] == ' ' && safeScalar(after[1:])
}

// safeLine reports whether a line of a top-level value (indented, or an
// element of a sequence at column 0) opens nothing that goes on past its
// end: it is "key:" or "key: scalar", after any "- ", or "- scalar".
func safeLine(line []byte) bool {
	i := 0
	for i < len(line) && line[i] == ' ' {
		i++
	}
	dashes := 0
	for i+1 < len(line) && line[i] == '-' && line[i+1] == ' ' {
		i += 2
		dashes++
	}
	rest := line[i:]
	if k := keyEnd(rest); k > 0 {
		return safeAfterKey(rest[k+1:])
	}
	return dashes > 0 && safeScalar(rest)
}

// keyEnd returns the index of the colon after a key that starts rest: a
// plain key of letters, digits and ._/- (not first), or a double-quoted
// one without escapes; 0 when rest does not start with one.
func keyEnd(rest []byte) int {
	if len(rest) > 0 && rest[0] == '"' {
		q := bytes.IndexByte(rest[1:], '"')
		if q < 0 || bytes.IndexByte(rest[1:1+q], '\\') >= 0 || 2+q >= len(rest) || rest[2+q] != ':' {
			return 0
		}
		return 2 + q
	}
	i := 0
	for i < len(rest) && (isTopKeyByte(rest[i], false) || i > 0 && (rest[i] == '.' || rest[i] == '/' || rest[i] == '-')) {
		i++
	}
	if i == 0 || i == len(rest) || rest[i] != ':' {
		return 0
	}
	return i
}

// safeScalar reports whether s is a scalar that ends where s does: a
// quoted scalar closed at the end, [] or {}, or a plain scalar that
// starts with no indicator (but a '-' before another character) and
// holds no ": " and no " #".
func safeScalar(s []byte) bool {
	if len(s) == 0 {
		return false
	}
	switch s[0] {
	case '"':
		for i := 1; i < len(s); i++ {
			switch s[i] {
			case '\\':
				i++
			case '"':
				return i == len(s)-1
			}
		}
		return false
	case '\'':
		for i := 1; i < len(s); i++ {
			if s[i] != '\'' {
				continue
			}
			if i+1 < len(s) && s[i+1] == '\'' {
				i++
				continue
			}
			return i == len(s)-1
		}
		return false
	case '[', '{':
		return string(s) == "[]" || string(s) == "{}"
	case '-':
		// Plain when a character other than a space follows (--flag).
		if len(s) == 1 || s[1] == ' ' {
			return false
		}
	case ']', '}', ',', '#', '&', '*', '!', '|', '>', '%', '@', '`', '?', ':', ' ':
		return false
	}
	return !bytes.Contains(s, []byte(": ")) && !bytes.Contains(s, []byte(" #")) &&
		s[len(s)-1] != ':' && s[len(s)-1] != ' '
}

// yamlIn reads the nodes of a YAML cluster.yml, line by line from p.
type yamlIn struct {
	b []byte
	p int
	interner
	// w says which plain scalars YAML 1.1 reads as something other than
	// a string, as the writer does; plain keeps plainString's answers.
	w     *yamlWriter
	plain map[string]bool
	// entries are the mapping entries read, by their text; labels and
	// annotations are the sizes of the last node's.
	entries             map[string]entryOf
	labels, annotations int
}

// line returns the line at p, without its newline, and where the next
// one starts.
func (r *yamlIn) line() (line []byte, next int) {
	if r.p >= len(r.b) {
		return nil, r.p
	}
	nl := bytes.IndexByte(r.b[r.p:], '\n')
	if nl < 0 {
		return r.b[r.p:], len(r.b)
	}
	return r.b[r.p : r.p+nl], r.p + nl + 1
}

// nodes reads the nodes after "nodes:": a non-empty sequence at column 0.
func (r *yamlIn) nodes() ([]*Node, bool) {
	var nodes []*Node
	var block []Node
	for {
		line, next := r.line()
		if len(line) < 2 || line[0] != '-' || line[1] != ' ' {
			return nodes, len(nodes) > 0
		}
		start := r.p
		r.p = next
		if len(block) == 0 {
			block = make([]Node, 256)
		}
		n := &block[0]
		block = block[1:]
		var seen uint64
		if !r.field(n, line[2:], &seen) {
			return nil, false
		}
		// The node's other fields, at column 2.
		for {
			line, next := r.line()
			if len(line) < 3 || line[0] != ' ' || line[1] != ' ' || line[2] == ' ' || line[2] == '-' {
				break
			}
			r.p = next
			if !r.field(n, line[2:], &seen) {
				return nil, false
			}
		}
		if nodes == nil {
			// Nodes are alike: the first one's size tells how many the
			// rest of the input holds.
			nodes = make([]*Node, 0, (len(r.b)-start)/max(r.p-start, 64)*9/8+1)
		}
		nodes = append(nodes, n)
	}
}

// splitKey splits "key:" or "key: value" (value without its space); a
// value is nil after "key:". A key of the writer's characters has no ": "
// (it ends with ':' only in quotes), so the first ": " ends it.
func splitKey(text []byte) (key, value []byte, ok bool) {
	if c := bytes.Index(text, []byte(": ")); c > 0 {
		value = text[c+2:]
		if len(value) == 0 || value[0] == ' ' {
			return nil, nil, false
		}
		return text[:c], value, true
	}
	if len(text) > 1 && text[len(text)-1] == ':' {
		return text[:len(text)-1], nil, true
	}
	return nil, nil, false
}

// field reads a field of a node, text being its line from the key on;
// the mappings and the taints read their lines below it.
func (r *yamlIn) field(n *Node, text []byte, seen *uint64) bool {
	key, value, ok := splitKey(text)
	if !ok {
		return false
	}
	name := jsonscan.Once(nodeNames, key, seen)
	switch name {
	case "":
		return false
	case "annotations", "labels", "taints":
		if value != nil {
			return false // a flow collection or a null: the strict path
		}
		switch name {
		case "annotations":
			n.Annotations, ok = r.stringMap(&r.annotations)
		case "labels":
			n.Labels, ok = r.stringMap(&r.labels)
		default:
			n.Taints, ok = r.taints()
		}
		return ok
	}
	if value == nil {
		return false // null
	}
	switch name {
	case "control_plane":
		switch string(value) {
		case "true":
			n.ControlPlane = true
		case "false":
		default:
			return false
		}
	case "address":
		n.Address, ok = r.scalar(value, false, false)
	case "hostname":
		n.Hostname, ok = r.scalar(value, false, false)
	case "user":
		n.User, ok = r.scalar(value, false, true)
	}
	return ok
}

// stringMap reads a non-empty mapping of strings at column 4; size is
// the size of the last one read into the same field, the hint of this
// one's.
func (r *yamlIn) stringMap(size *int) (map[string]string, bool) {
	var m map[string]string
	for {
		line, next := r.line()
		if len(line) < 6 || string(line[:4]) != "    " || line[4] == ' ' || line[4] == '-' && line[5] == ' ' {
			if m != nil {
				*size = len(m)
			}
			return m, m != nil
		}
		r.p = next
		e, ok := r.entry(line[4:])
		if !ok {
			return nil, false
		}
		if m == nil {
			m = make(map[string]string, *size)
		}
		n := len(m)
		if m[e.k] = e.v; len(m) == n {
			return nil, false // a key twice
		}
	}
}

// entryOf is a mapping entry as read.
type entryOf struct{ k, v string }

// entry reads "key: value" of strings. Most entries repeat from node to
// node (a role label, a month): each text is read once.
func (r *yamlIn) entry(text []byte) (entryOf, bool) {
	if e, ok := r.entries[string(text)]; ok {
		return e, true
	}
	key, value, ok := splitKey(text)
	if !ok || value == nil {
		return entryOf{}, false
	}
	var e entryOf
	if e.k, ok = r.scalar(key, true, true); !ok {
		return entryOf{}, false
	}
	if e.v, ok = r.scalar(value, false, true); !ok {
		return entryOf{}, false
	}
	if r.entries == nil {
		r.entries = make(map[string]entryOf, 256)
	}
	if len(r.entries) < maxInternedCount {
		r.entries[string(text)] = e
	}
	return e, true
}

// taints reads a non-empty sequence of taints at column 2: "  - field"
// then "    field" lines.
func (r *yamlIn) taints() ([]Taint, bool) {
	var ts []Taint
	for {
		line, next := r.line()
		if len(line) < 5 || string(line[:4]) != "  - " {
			return ts, ts != nil
		}
		r.p = next
		var t Taint
		var seen uint64
		if !r.taintField(&t, line[4:], &seen) {
			return nil, false
		}
		for {
			line, next := r.line()
			if len(line) < 5 || string(line[:4]) != "    " || line[4] == ' ' || line[4] == '-' {
				break
			}
			r.p = next
			if !r.taintField(&t, line[4:], &seen) {
				return nil, false
			}
		}
		ts = append(ts, t)
	}
}

func (r *yamlIn) taintField(t *Taint, text []byte, seen *uint64) bool {
	key, value, ok := splitKey(text)
	if !ok || value == nil {
		return false
	}
	name := jsonscan.Once(taintNames, key, seen)
	if name == "" {
		return false
	}
	s, ok := r.scalar(value, false, true)
	if !ok {
		return false
	}
	switch name {
	case "key":
		t.Key = s
	case "value":
		t.Value = s
	default:
		t.Effect = s
	}
	return true
}

// scalar reads a string as the writer writes it (yamlWriter.scalar): of
// the characters [A-Za-z0-9._/+:-] only, plain where yaml.v2 reads it as
// that string, else in double or single quotes; a key at most 128 bytes.
// Anything else is left to the strict path. intern shares the string
// with its equals.
func (r *yamlIn) scalar(s []byte, key, intern bool) (string, bool) {
	if key && len(s) > 128 || len(s) == 0 {
		return "", false
	}
	plain := true
	if q := s[0]; q == '"' || q == '\'' {
		if len(s) < 2 || s[len(s)-1] != q {
			return "", false
		}
		s, plain = s[1:len(s)-1], false
	}
	for _, c := range s {
		if !simpleByte(c) {
			return "", false
		}
	}
	if plain && !r.plainString(s) {
		return "", false
	}
	if intern {
		return r.string(s), true
	}
	return string(s), true
}

// plainString reports whether yaml.v2 reads the plain scalar s, of the
// writer's characters, as the string s: whether the writer writes s plain.
func (r *yamlIn) plainString(s []byte) bool {
	switch c := s[0]; {
	case s[len(s)-1] == ':':
		return false
	case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '/':
		// Only the YAML 1.1 words read as something else: yes, no,
		// true, false, on, off, null in their cases, y and n.
		switch c | 0x20 {
		case 'y', 'n', 't', 'f', 'o':
			return len(s) > 5 || !yaml11Words[string(s)]
		}
		return true
	case c >= '0' && c <= '9' && bytes.Count(s, []byte(".")) > 1 && bytes.IndexByte(s, ':') < 0:
		// An IPv4 address, a version: neither a number, a date nor a
		// base 60 number.
		return true
	}
	if v, ok := r.plain[string(s)]; ok {
		return v
	}
	str := string(s)
	v := !(r.w.nonString(str) || isSexagesimal(str) || str == "-" ||
		strings.HasPrefix(str, "---") || strings.HasPrefix(str, "..."))
	if r.plain == nil {
		r.plain = map[string]bool{}
	}
	if len(r.plain) < maxInternedCount {
		r.plain[str] = v
	}
	return v
}
