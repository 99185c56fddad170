package cluster

// The fast path of a JSON cluster.yml on jsontext's Decoder (token by
// token, no reflection), the candidate parseFastJSON is measured against
// (BenchmarkParse's impl=jsontext, docs/design.md D18): it reads what
// parseFastJSON reads and gives up where it gives up.

import (
	"bytes"
	"io"
	"reflect"
	"testing"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/ckegen/ckegen/internal/jsonscan"
	"pgregory.net/rapid"
)

// parseFastText is parseFast's JSON path on jsontext.
func parseFastText(data []byte) (*Cluster, bool) {
	r := textIn{dec: jsontext.NewDecoder(bytes.NewBuffer(data), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)), n: len(data)}
	if !r.open('{') {
		return nil, false
	}
	start, end := -1, -1
	var nodes []*Node
	for {
		key, last, ok := r.member()
		if !ok {
			return nil, false
		}
		if last {
			break
		}
		if string(key) != "nodes" {
			if r.dec.SkipValue() != nil {
				return nil, false
			}
			continue
		}
		if start >= 0 {
			return nil, false
		}
		start = valueStart(data, int(r.dec.InputOffset()))
		if nodes, ok = r.nodes(); !ok {
			return nil, false
		}
		end = int(r.dec.InputOffset())
	}
	if _, err := r.dec.ReadToken(); err != io.EOF || start < 0 {
		return nil, false
	}
	c, err := decode(withoutNodes(data, start, end, "[]"))
	if err != nil || len(c.Nodes) != 0 {
		return nil, false
	}
	c.Nodes = nodes
	return c, true
}

// valueStart is the offset of the value after a member name that ends
// at off: past white space and the colon.
func valueStart(data []byte, off int) int {
	for off < len(data) && (jsonscan.IsSpace(data[off]) || data[off] == ':') {
		off++
	}
	return off
}

type textIn struct {
	dec *jsontext.Decoder
	n   int
	interner
	labels, annotations int
}

func (r *textIn) open(c byte) bool {
	if r.dec.PeekKind() != jsontext.Kind(c) {
		return false
	}
	_, err := r.dec.ReadToken()
	return err == nil
}

func (r *textIn) literal(word string) bool {
	k := r.dec.PeekKind()
	if k != jsontext.Kind(word[0]) {
		return false
	}
	_, err := r.dec.ReadToken()
	return err == nil
}

// member reads the next member name of an object, or its end.
func (r *textIn) member() (key []byte, last, ok bool) {
	if r.dec.PeekKind() == '}' {
		return nil, true, r.open('}')
	}
	key, ok = r.str()
	return key, false, ok
}

// str reads a string without escapes, which must be UTF-8 (the values
// skipped may hold invalid UTF-8, as the strict path reads it).
func (r *textIn) str() ([]byte, bool) {
	if r.dec.PeekKind() != '"' {
		return nil, false
	}
	v, err := r.dec.ReadValue()
	if err != nil || bytes.IndexByte(v, '\\') >= 0 || !utf8.Valid(v) {
		return nil, false
	}
	return v[1 : len(v)-1], true
}

func (r *textIn) nodes() ([]*Node, bool) {
	if !r.open('[') || r.dec.PeekKind() == ']' {
		return nil, false
	}
	var nodes []*Node
	var block []Node
	for first := true; ; first = false {
		if r.dec.PeekKind() == ']' {
			return nodes, r.open(']')
		}
		start := int(r.dec.InputOffset())
		if len(block) == 0 {
			block = make([]Node, 256)
		}
		n := &block[0]
		block = block[1:]
		if !r.node(n) {
			return nil, false
		}
		if first {
			nodes = make([]*Node, 0, (r.n-start)/max(int(r.dec.InputOffset())-start, 64)*9/8+1)
		}
		nodes = append(nodes, n)
	}
}

func (r *textIn) members(names []string, value func(name string) bool) bool {
	if !r.open('{') {
		return false
	}
	var seen uint64
	for {
		key, last, ok := r.member()
		if !ok || last {
			return ok
		}
		name := jsonscan.Once(names, key, &seen)
		if name == "" || !r.literal("null") && !value(name) {
			return false
		}
	}
}

func (r *textIn) node(n *Node) bool {
	return r.members(nodeNames, func(name string) bool {
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
			case r.literal("true"):
				n.ControlPlane, ok = true, true
			case r.literal("false"):
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

func (r *textIn) string() (string, bool) {
	s, ok := r.str()
	return string(s), ok
}

func (r *textIn) interned() (string, bool) {
	s, ok := r.str()
	if !ok {
		return "", false
	}
	return r.interner.string(s), true
}

// stringMap reads an object of strings, each name and value interned.
func (r *textIn) stringMap(size *int) (map[string]string, bool) {
	if !r.open('{') {
		return nil, false
	}
	m := make(map[string]string, *size)
	for {
		key, last, ok := r.member()
		if !ok {
			return nil, false
		}
		if last {
			*size = len(m)
			return m, true
		}
		k := r.interner.string(key)
		v, ok := r.interned()
		if !ok {
			return nil, false
		}
		n := len(m)
		if m[k] = v; len(m) == n {
			return nil, false
		}
	}
}

func (r *textIn) taints() ([]Taint, bool) {
	if !r.open('[') {
		return nil, false
	}
	ts := []Taint{}
	for {
		if r.dec.PeekKind() == ']' {
			return ts, r.open(']')
		}
		var t Taint
		ok := r.members(taintNames, func(name string) bool {
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
		if !ok {
			return nil, false
		}
		ts = append(ts, t)
	}
}

// TestParseFastTextMatches: on the documents TestParseFastMatchesStrict
// draws, JSON ones, the candidate reads what parseFastJSON reads and
// gives up where it gives up.
func TestParseFastTextMatches(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var c *Cluster
		if rapid.IntRange(0, 3).Draw(t, "tricky") == 0 {
			c = drawCluster(t)
		} else {
			c = drawPlainCluster(t)
		}
		w := rapid.SampledFrom(writings).Draw(t, "writing")
		data, err := w.write(c)
		if err != nil {
			t.Skip(err)
		}
		if rapid.IntRange(0, 2).Draw(t, "mutated") > 0 {
			data = mutate(t, data)
		}
		if !startsObject(data) {
			return
		}
		want, wantOK := parseFastJSON(data)
		got, ok := parseFastText(data)
		if ok != wantOK || !reflect.DeepEqual(got, want) {
			t.Fatalf("jsontext: %v %s\nparseFastJSON: %v %s\nfrom\n%s", ok, dump(got), wantOK, dump(want), data)
		}
	})
}
