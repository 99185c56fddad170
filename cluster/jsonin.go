package cluster

import (
	"unicode/utf8"
)

// parseFast reads data as Parse does, in one pass over the nodes, when
// data is a cluster.yml in the plain shape ckegen's and CKE's writers give
// it: JSON (jsonNodes) or YAML (yamlNodes) whose nodes use no more of the
// syntax than those writers do. It reports false for anything else, and
// Parse's strict path then reads data: the fast path decides nothing.
//
// The nodes are read here; the rest of the document (the name, the
// subnets, the fields carried as JSON: a few hundred bytes) is read by the
// strict path with an empty list in place of the nodes, so that every
// check of the document but the nodes' is the strict path's own. On what
// parseFast accepts, the strict path reads the same cluster
// (TestParseFastMatchesStrict, FuzzParse).
func parseFast(data []byte) (*Cluster, bool) {
	i := 0
	for i < len(data) && isJSONSpace(data[i]) {
		i++
	}
	if i < len(data) && data[i] == '{' {
		return parseFastJSON(data)
	}
	return parseFastYAML(data)
}

// withoutNodes is data with its nodes, data[start:end], replaced by
// placeholder.
func withoutNodes(data []byte, start, end int, placeholder string) []byte {
	rest := make([]byte, 0, len(data)-(end-start)+len(placeholder))
	rest = append(rest, data[:start]...)
	rest = append(rest, placeholder...)
	return append(rest, data[end:]...)
}

// interner shares one copy of the short strings that repeat from node to
// node: label and annotation keys, and most of their values.
type interner struct {
	m map[string]string
}

// The bounds of interner: strings up to maxInterned bytes, at most
// maxInternedCount of them (a cluster has a few dozen keys and a few
// thousand repeated values; a document of unique strings does not fill
// memory).
const (
	maxInterned      = 64
	maxInternedCount = 8192
)

func (in *interner) string(b []byte) string {
	if len(b) > maxInterned {
		return string(b)
	}
	if s, ok := in.m[string(b)]; ok {
		return s
	}
	s := string(b)
	if in.m == nil {
		in.m = make(map[string]string, 256)
	}
	if len(in.m) < maxInternedCount {
		in.m[s] = s
	}
	return s
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// parseFastJSON reads a JSON cluster.yml: its top-level members are
// skipped (skipValue) but the nodes, read by jsonNodes; the document
// without the nodes is then decoded strictly (decode), and must be valid
// JSON whatever its YAML reading would be.
func parseFastJSON(data []byte) (*Cluster, bool) {
	r := jsonIn{b: data}
	if !r.open('{') {
		return nil, false
	}
	start, end := -1, -1
	var nodes []*Node
	for first := true; ; first = false {
		key, last, ok := r.member(first)
		if !ok {
			return nil, false
		}
		if last {
			break
		}
		if string(key) != "nodes" {
			if !r.skipValue() {
				return nil, false
			}
			continue
		}
		if start >= 0 {
			return nil, false // twice: the strict path says so
		}
		r.ws()
		start = r.p
		if nodes, ok = r.nodes(); !ok {
			return nil, false
		}
		end = r.p
	}
	r.ws()
	if r.p != len(r.b) || start < 0 {
		return nil, false
	}
	c, err := decode(withoutNodes(data, start, end, "[]"))
	if err != nil || len(c.Nodes) != 0 {
		return nil, false
	}
	c.Nodes = nodes
	return c, true
}

// jsonIn reads JSON from b at p. Every method reports false when the
// input is not what it reads.
type jsonIn struct {
	b []byte
	p int
	interner
	// entries are the members of labels and annotations read, by their
	// text (from the comma before them, if any); labels and annotations are
	// the sizes of the last node's.
	entries             map[string]entryOf
	labels, annotations int
}

func (r *jsonIn) ws() {
	for r.p < len(r.b) && isJSONSpace(r.b[r.p]) {
		r.p++
	}
}

// at is the byte at p after white space, or 0 at the end.
func (r *jsonIn) at() byte {
	r.ws()
	if r.p < len(r.b) {
		return r.b[r.p]
	}
	return 0
}

// open reads c.
func (r *jsonIn) open(c byte) bool {
	if r.at() != c {
		return false
	}
	r.p++
	return true
}

// literal reads word (true, false, null) if it comes.
func (r *jsonIn) literal(word string) bool {
	if r.at() != word[0] || len(r.b)-r.p < len(word) || string(r.b[r.p:r.p+len(word)]) != word {
		return false
	}
	r.p += len(word)
	return true
}

// member reads the next member key of an object after its '{' (first) or
// after a value, and the colon; last reports the object's '}' instead.
func (r *jsonIn) member(first bool) (key []byte, last, ok bool) {
	c := r.at()
	if c == '}' {
		r.p++
		return nil, true, true
	}
	if !first {
		if c != ',' {
			return nil, false, false
		}
		r.p++
	}
	if key, ok = r.str(); !ok || !r.open(':') {
		return nil, false, false
	}
	return key, false, true
}

// element reads what comes before an element of an array after its '['
// (first) or after an element; last reports the array's ']' instead.
func (r *jsonIn) element(first bool) (last, ok bool) {
	c := r.at()
	if c == ']' {
		r.p++
		return true, true
	}
	if first {
		return false, true
	}
	if c != ',' {
		return false, false
	}
	r.p++
	return false, true
}

// plainJSONByte marks the bytes a string may hold as they are: not ", \,
// a control character or a byte of a multi-byte UTF-8 sequence.
var plainJSONByte = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// str reads a string without escapes, which must be UTF-8, and returns
// its bytes.
func (r *jsonIn) str() ([]byte, bool) {
	if r.at() != '"' {
		return nil, false
	}
	start := r.p + 1
	i := start
	for i < len(r.b) && plainJSONByte[r.b[i]] {
		i++
	}
	if i < len(r.b) && r.b[i] == '"' {
		r.p = i + 1
		return r.b[start:i], true
	}
	for ; i < len(r.b); i++ {
		switch c := r.b[i]; {
		case c == '"':
			if !utf8.Valid(r.b[start:i]) {
				return nil, false
			}
			r.p = i + 1
			return r.b[start:i], true
		case c == '\\' || c < 0x20:
			return nil, false
		}
	}
	return nil, false
}

// skipValue skips a value outside the nodes, which the strict decoding of
// the rest of the document checks: strings end at their first unescaped
// quote and brackets match, as in any valid JSON, so that the nodes found
// after it are the document's.
func (r *jsonIn) skipValue() bool {
	var stack []byte
	for {
		switch c := r.at(); c {
		case 0:
			return false
		case '"':
			if !r.skipString() {
				return false
			}
		case '{', '[':
			stack = append(stack, c)
			r.p++
		case '}', ']':
			if len(stack) == 0 || stack[len(stack)-1] != c-2 { // '{'+2 == '}', '['+2 == ']'
				return false
			}
			stack = stack[:len(stack)-1]
			r.p++
		case ',', ':':
			if len(stack) == 0 {
				return false
			}
			r.p++
		default:
			for r.p < len(r.b) && !isJSONSpace(r.b[r.p]) && !isJSONDelimiter(r.b[r.p]) {
				r.p++
			}
		}
		if len(stack) == 0 {
			return true
		}
	}
}

func isJSONDelimiter(c byte) bool {
	return c == ',' || c == ':' || c == '{' || c == '}' || c == '[' || c == ']' || c == '"'
}

// skipString skips a string, escapes and all.
func (r *jsonIn) skipString() bool {
	for i := r.p + 1; i < len(r.b); i++ {
		switch r.b[i] {
		case '\\':
			i++
		case '"':
			r.p = i + 1
			return true
		}
	}
	return false
}

// nodes reads a non-empty array of nodes (an empty one is left to the
// strict path, which reads the placeholder of the nodes too).
func (r *jsonIn) nodes() ([]*Node, bool) {
	if !r.open('[') || r.at() == ']' {
		return nil, false
	}
	var nodes []*Node
	// The nodes, allocated in blocks.
	var block []Node
	for first := true; ; first = false {
		last, ok := r.element(first)
		if !ok {
			return nil, false
		}
		if last {
			return nodes, true
		}
		start := r.p
		if len(block) == 0 {
			block = make([]Node, 256)
		}
		n := &block[0]
		block = block[1:]
		if !r.node(n) {
			return nil, false
		}
		if first {
			// Nodes are alike: the first one's size tells how many the
			// rest of the input holds.
			nodes = make([]*Node, 0, (len(r.b)-start)/max(r.p-start, 64)*9/8+1)
		}
		nodes = append(nodes, n)
	}
}

// The members of a node and of a taint, as bits: a name twice or a name
// that is none of them (0) gives up, as the strict path refuses both.
const (
	nAddress = 1 << iota
	nHostname
	nUser
	nControlPlane
	nAnnotations
	nLabels
	nTaints
)

func nodeField(key []byte) int {
	switch string(key) {
	case "address":
		return nAddress
	case "hostname":
		return nHostname
	case "user":
		return nUser
	case "control_plane":
		return nControlPlane
	case "annotations":
		return nAnnotations
	case "labels":
		return nLabels
	case "taints":
		return nTaints
	}
	return 0
}

const (
	tKey = 1 << iota
	tValue
	tEffect
)

func taintField(key []byte) int {
	switch string(key) {
	case "key":
		return tKey
	case "value":
		return tValue
	case "effect":
		return tEffect
	}
	return 0
}

// members reads an object, calling value for each member with the
// member's bit (field gives it), or null for a member whose value is
// null, which leaves the field at its zero value as the strict path does
// (each field is read once).
func (r *jsonIn) members(field func([]byte) int, value func(bit int) bool) bool {
	if !r.open('{') {
		return false
	}
	seen := 0
	for first := true; ; first = false {
		key, last, ok := r.member(first)
		if !ok || last {
			return ok
		}
		bit := field(key)
		if bit == 0 || seen&bit != 0 {
			return false
		}
		seen |= bit
		if !r.literal("null") && !value(bit) {
			return false
		}
	}
}

func (r *jsonIn) node(n *Node) bool {
	return r.members(nodeField, func(bit int) bool {
		var ok bool
		switch bit {
		case nAddress:
			n.Address, ok = r.string()
		case nHostname:
			n.Hostname, ok = r.string()
		case nUser:
			n.User, ok = r.interned()
		case nControlPlane:
			switch {
			case r.literal("true"):
				n.ControlPlane, ok = true, true
			case r.literal("false"):
				ok = true
			}
		case nAnnotations:
			n.Annotations, ok = r.stringMap(&r.annotations)
		case nLabels:
			n.Labels, ok = r.stringMap(&r.labels)
		case nTaints:
			n.Taints, ok = r.taints()
		}
		return ok
	})
}

// string reads a string into a new string.
func (r *jsonIn) string() (string, bool) {
	s, ok := r.str()
	return string(s), ok
}

// interned reads a string, shared with its equals when short.
func (r *jsonIn) interned() (string, bool) {
	s, ok := r.str()
	if !ok {
		return "", false
	}
	return r.interner.string(s), true
}

// stringMap reads an object of strings; {} is an empty map, as the strict
// path reads it. size is the size of the last one read into the same
// field, the hint of this one's.
func (r *jsonIn) stringMap(size *int) (map[string]string, bool) {
	if !r.open('{') {
		return nil, false
	}
	m := make(map[string]string, *size)
	for first := true; ; first = false {
		r.ws()
		start := r.p
		key, last, ok := r.member(first)
		if !ok {
			return nil, false
		}
		if last {
			*size = len(m)
			return m, true
		}
		value, ok := r.str()
		if !ok {
			return nil, false
		}
		// Most members repeat from node to node (a role label, a
		// month): each text is read once.
		text := r.b[start:r.p]
		e, known := r.entries[string(text)]
		if !known {
			e = entryOf{r.interner.string(key), r.interner.string(value)}
			if r.entries == nil {
				r.entries = make(map[string]entryOf, 256)
			}
			if len(r.entries) < maxInternedCount {
				r.entries[string(text)] = e
			}
		}
		n := len(m)
		if m[e.k] = e.v; len(m) == n {
			return nil, false // a key twice
		}
	}
}

// taints reads an array of taints; [] is an empty list, as the strict
// path reads it, and a null taint is left to the strict path.
func (r *jsonIn) taints() ([]Taint, bool) {
	if !r.open('[') {
		return nil, false
	}
	ts := []Taint{}
	for first := true; ; first = false {
		last, ok := r.element(first)
		if !ok {
			return nil, false
		}
		if last {
			return ts, true
		}
		var t Taint
		ok = r.members(taintField, func(bit int) bool {
			var ok bool
			switch bit {
			case tKey:
				t.Key, ok = r.interned()
			case tValue:
				t.Value, ok = r.interned()
			case tEffect:
				t.Effect, ok = r.interned()
			}
			return ok
		})
		if !ok {
			return nil, false
		}
		ts = append(ts, t)
	}
}
