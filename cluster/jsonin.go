package cluster

import (
	"github.com/ckegen/ckegen/internal/jsonscan"
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
	for i < len(data) && jsonscan.IsSpace(data[i]) {
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

// parseFastJSON reads a JSON cluster.yml: its top-level members are
// skipped (jsonscan.Scanner.Skip) but the nodes, read by nodes; the
// document without the nodes is then decoded strictly (decode), and must
// be valid JSON whatever its YAML reading would be.
func parseFastJSON(data []byte) (*Cluster, bool) {
	r := jsonIn{Scanner: jsonscan.New(data)}
	if !r.Delim('{') {
		return nil, false
	}
	start, end := -1, -1
	var nodes []*Node
	for first := true; ; first = false {
		key, last, ok := r.Member(first)
		if !ok {
			return nil, false
		}
		if last {
			break
		}
		if string(key) != "nodes" {
			// The strict decoding of the rest of the document checks it.
			if !r.Skip() {
				return nil, false
			}
			continue
		}
		if start >= 0 {
			return nil, false // twice: the strict path says so
		}
		r.Space()
		start = r.Offset()
		if nodes, ok = r.nodes(); !ok {
			return nil, false
		}
		end = r.Offset()
	}
	if !r.End() || start < 0 {
		return nil, false
	}
	c, err := decode(withoutNodes(data, start, end, "[]"))
	if err != nil || len(c.Nodes) != 0 {
		return nil, false
	}
	c.Nodes = nodes
	return c, true
}

// jsonIn reads a cluster's nodes with a scanner. Every method reports
// false when the input is not what it reads.
type jsonIn struct {
	jsonscan.Scanner
	interner
	// entries are the members of labels and annotations read, by their
	// text (from the comma before them, if any); labels and annotations are
	// the sizes of the last node's.
	entries             map[string]entryOf
	labels, annotations int
}

// nodes reads a non-empty array of nodes (an empty one is left to the
// strict path, which reads the placeholder of the nodes too).
func (r *jsonIn) nodes() ([]*Node, bool) {
	var nodes []*Node
	// The nodes, allocated in blocks.
	var block []Node
	ok := r.Array(func() bool {
		start := r.Offset()
		if len(block) == 0 {
			block = make([]Node, 256)
		}
		n := &block[0]
		block = block[1:]
		if !r.node(n) {
			return false
		}
		if nodes == nil {
			// Nodes are alike: the first one's size tells how many the
			// rest of the input holds.
			nodes = make([]*Node, 0, (r.Len()-start)/max(r.Offset()-start, 64)*9/8+1)
		}
		nodes = append(nodes, n)
		return true
	})
	return nodes, ok && nodes != nil
}

// The member names of a node and of a taint: a name twice or a name that
// is none of them gives up, as the strict path refuses both. A null value
// leaves the field at its zero value, as the strict path does.
var (
	nodeNames  = []string{"address", "hostname", "user", "control_plane", "annotations", "labels", "taints"}
	taintNames = []string{"key", "value", "effect"}
)

func (r *jsonIn) node(n *Node) bool {
	return r.Object(nodeNames, func(name string) bool {
		var ok bool
		switch name {
		case "address":
			n.Address, ok = r.string()
		case "hostname":
			n.Hostname, ok = r.string()
		case "user":
			n.User, ok = r.interned()
		case "control_plane":
			switch {
			case r.Literal("true"):
				n.ControlPlane, ok = true, true
			case r.Literal("false"):
				ok = true
			}
		case "annotations":
			n.Annotations, ok = r.stringMap(&r.annotations)
		case "labels":
			n.Labels, ok = r.stringMap(&r.labels)
		case "taints":
			n.Taints, ok = r.taints()
		}
		return ok
	})
}

// string reads a string into a new string.
func (r *jsonIn) string() (string, bool) {
	s, ok := r.Str()
	return string(s), ok
}

// interned reads a string, shared with its equals when short.
func (r *jsonIn) interned() (string, bool) {
	s, ok := r.Str()
	if !ok {
		return "", false
	}
	return r.interner.string(s), true
}

// stringMap reads an object of strings; {} is an empty map, as the strict
// path reads it. size is the size of the last one read into the same
// field, the hint of this one's.
func (r *jsonIn) stringMap(size *int) (map[string]string, bool) {
	if !r.Delim('{') {
		return nil, false
	}
	m := make(map[string]string, *size)
	for first := true; ; first = false {
		r.Space()
		start := r.Offset()
		key, last, ok := r.Member(first)
		if !ok {
			return nil, false
		}
		if last {
			*size = len(m)
			return m, true
		}
		value, ok := r.Str()
		if !ok {
			return nil, false
		}
		// Most members repeat from node to node (a role label, a
		// month): each text is read once.
		text := r.Since(start)
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
	ts := []Taint{}
	ok := r.Array(func() bool {
		var t Taint
		ok := r.Object(taintNames, func(name string) bool {
			var ok bool
			switch name {
			case "key":
				t.Key, ok = r.interned()
			case "value":
				t.Value, ok = r.interned()
			case "effect":
				t.Effect, ok = r.interned()
			}
			return ok
		})
		ts = append(ts, t)
		return ok
	})
	if !ok {
		return nil, false
	}
	return ts, true
}
