package cluster

import (
	"encoding/json"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sync"

	yamlv2 "go.yaml.in/yaml/v2"
)

// MarshalYAML returns c as YAML, byte for byte what sigs.k8s.io/yaml (the
// library CKE uses) writes for c's JSON: keys in go.yaml.in/yaml/v2's order,
// scalars quoted where YAML 1.1 would read them as something other than a
// string.
//
// Nodes are written directly; a node with a string this writer does not
// handle itself (see yamlWriter.scalar) and everything but the nodes (a few
// fields, and the fields carried as JSON) go through yaml.v2, with map keys
// put in order here so that the output does not depend on map order.
func (c *Cluster) MarshalYAML() ([]byte, error) {
	top := *c
	if c.Nodes != nil {
		top.Nodes = []*Node{}
	}
	js, err := json.Marshal(&top)
	if err != nil {
		return nil, err
	}
	items, err := yamlItems(js)
	if err != nil {
		return nil, err
	}
	var out []byte
	for _, item := range items {
		if item.Key == "nodes" && len(c.Nodes) > 0 {
			out = append(out, "nodes:\n"...)
			if out, err = appendYAMLNodes(out, c.Nodes); err != nil {
				return nil, err
			}
			continue
		}
		b, err := yamlv2.Marshal(yamlv2.MapSlice{item})
		if err != nil {
			return nil, fmt.Errorf("%v: %w", item.Key, err)
		}
		out = append(out, b...)
	}
	return out, nil
}

// appendYAMLNodes appends the entries of nodes. A node's YAML depends on
// the node alone: many nodes are written in two halves at once, each by a
// writer of its own, the second half into a buffer of its own.
func appendYAMLNodes(out []byte, nodes []*Node) ([]byte, error) {
	half := len(nodes)
	if len(nodes) >= parallelYAML && runtime.GOMAXPROCS(0) > 1 {
		half = len(nodes) / 2
	}
	var second []byte
	var secondErr error
	var wg sync.WaitGroup
	if half < len(nodes) {
		wg.Go(func() {
			second, secondErr = appendYAMLRange(nil, nodes, half, len(nodes))
		})
	}
	out, err := appendYAMLRange(out, nodes, 0, half)
	wg.Wait()
	if err != nil {
		return nil, err
	}
	if secondErr != nil {
		return nil, secondErr
	}
	return append(out, second...), nil
}

// parallelYAML is the number of nodes from which appendYAMLNodes writes
// in two halves at once.
const parallelYAML = 2048

// appendYAMLRange appends nodes[from:to] as entries of nodes.
func appendYAMLRange(out []byte, nodes []*Node, from, to int) ([]byte, error) {
	w := newYAMLWriter()
	var err error
	for j := from; j < to; j++ {
		start := len(out)
		if out, err = w.node(out, nodes[j]); err != nil {
			return nil, fmt.Errorf("nodes[%d]: %w", j, err)
		}
		if j == from {
			// Nodes are alike: make room for the rest at once (twice
			// that for the first half, which the second joins).
			rest := (len(out) - start) * (to - from - 1) * 9 / 8
			if from == 0 && to < len(nodes) {
				rest += (len(out) - start) * (len(nodes) - to) * 9 / 8
			}
			out = slices.Grow(out, rest+1024)
		}
	}
	return out, nil
}

// yamlItems returns the top-level entries of a JSON object as yaml.v2 reads
// them, in yaml.v2's order.
func yamlItems(js []byte) (yamlv2.MapSlice, error) {
	var v any
	if err := yamlv2.Unmarshal(js, &v); err != nil {
		return nil, err
	}
	o, err := ordered(v)
	if err != nil {
		return nil, err
	}
	ms, ok := o.(yamlv2.MapSlice)
	if !ok {
		return nil, fmt.Errorf("not an object: %s", js)
	}
	return ms, nil
}

// ordered turns the maps of a value decoded by yaml.v2 into MapSlices with
// the keys in yaml.v2's order, so that yaml.v2 writes what it would write
// for the maps, without depending on map order where that order is not
// total (see yamlKeyLess).
func ordered(v any) (any, error) {
	switch v := v.(type) {
	case map[any]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			s, ok := k.(string)
			if !ok {
				return nil, fmt.Errorf("non-string key %v", k)
			}
			keys = append(keys, s)
		}
		sortYAMLKeys(keys)
		ms := make(yamlv2.MapSlice, len(keys))
		for i, k := range keys {
			val, err := ordered(v[k])
			if err != nil {
				return nil, err
			}
			ms[i] = yamlv2.MapItem{Key: k, Value: val}
		}
		return ms, nil
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			var err error
			if out[i], err = ordered(e); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return v, nil
}

// yamlWriter writes nodes as yaml.v2 does, reusing what it has worked out
// from one node to the next.
type yamlWriter struct {
	labels, annotations keyOrder
	// numeric remembers which strings starting with a digit or a sign
	// read as a number or a date.
	numeric map[string]bool
}

func newYAMLWriter() *yamlWriter {
	return &yamlWriter{numeric: map[string]bool{}}
}

// node appends one entry of nodes. A node holding a string that scalar
// leaves to yaml.v2 is written by yaml.v2 whole.
func (w *yamlWriter) node(out []byte, n *Node) ([]byte, error) {
	if fast, ok := w.fastNode(out, n); ok {
		return fast, nil
	}
	// out still ends where the node starts.
	js, err := json.Marshal(n)
	if err != nil {
		return nil, err
	}
	var v any
	if err := yamlv2.Unmarshal(js, &v); err != nil {
		return nil, err
	}
	o, err := ordered(v)
	if err != nil {
		return nil, err
	}
	b, err := yamlv2.Marshal([]any{o})
	if err != nil {
		return nil, err
	}
	return append(out, b...), nil
}

// fastNode appends n in the layout yaml.v2 gives a node (keys in order:
// address, annotations, control_plane, hostname, labels, taints, user), or
// reports false when a string needs yaml.v2.
func (w *yamlWriter) fastNode(out []byte, n *Node) ([]byte, bool) {
	ok := true
	str := func(s string, key bool) {
		if !ok {
			return
		}
		var quick bool
		if out, quick = quickScalar(out, s, key); !quick {
			out, ok = w.scalar(out, s, key)
		}
	}
	smap := func(name string, m map[string]string, order *keyOrder) {
		if len(m) == 0 {
			return
		}
		out = append(out, "  "...)
		out = append(out, name...)
		out = append(out, ":\n"...)
		_, vals := order.sorted(m)
		keys, writable := order.yamlKeys(w)
		if !writable {
			ok = false
			return
		}
		for i, k := range keys {
			out = append(out, k...)
			str(vals[i], false)
			out = append(out, '\n')
		}
	}
	out = append(out, "- address: "...)
	str(n.Address, false)
	out = append(out, '\n')
	smap("annotations", n.Annotations, &w.annotations)
	if n.ControlPlane {
		out = append(out, "  control_plane: true\n"...)
	} else {
		out = append(out, "  control_plane: false\n"...)
	}
	if n.Hostname != "" {
		out = append(out, "  hostname: "...)
		str(n.Hostname, false)
		out = append(out, '\n')
	}
	smap("labels", n.Labels, &w.labels)
	if len(n.Taints) > 0 {
		out = append(out, "  taints:\n"...)
		for _, t := range n.Taints {
			out = append(out, "  - effect: "...)
			str(t.Effect, false)
			out = append(out, "\n    key: "...)
			str(t.Key, false)
			out = append(out, '\n')
			if t.Value != "" {
				out = append(out, "    value: "...)
				str(t.Value, false)
				out = append(out, '\n')
			}
		}
	}
	out = append(out, "  user: "...)
	str(n.User, false)
	out = append(out, '\n')
	return out, ok
}

// keyOrder sorts a map's keys in yaml.v2's order (or, with byteOrder, in
// byte order, as encoding/json does), and reuses the orders of the last
// maps when the next one has the same keys, as nodes' labels mostly do (a
// few sets of keys: one per role, a control plane's).
type keyOrder struct {
	byteOrder bool
	// orders are the last orders, the last used first.
	orders []*keyList
	// vals is the scratch list of the values in the keys' order.
	vals []string
}

// keyList is an order of keys and, once the YAML writer has asked, the
// keys as it writes them in a node's map: "    key: ".
type keyList struct {
	keys []string
	yaml [][]byte
	// written: yaml is set; writable: no key needs yaml.v2.
	written, writable bool
}

// maxKeyOrders is how many orders a keyOrder keeps.
const maxKeyOrders = 8

// sorted returns m's keys in yaml.v2's order, and their values in the
// same order (valid until the next call).
func (o *keyOrder) sorted(m map[string]string) (keys, vals []string) {
	for i, l := range o.orders {
		if len(l.keys) != len(m) || !o.values(m, l.keys) {
			continue
		}
		copy(o.orders[1:i+1], o.orders[:i])
		o.orders[0] = l
		return l.keys, o.vals
	}
	keys = slices.AppendSeq(make([]string, 0, len(m)), maps.Keys(m))
	if o.byteOrder {
		slices.Sort(keys)
	} else {
		sortYAMLKeys(keys)
	}
	if len(o.orders) < maxKeyOrders {
		o.orders = append(o.orders, nil)
	}
	copy(o.orders[1:], o.orders)
	o.orders[0] = &keyList{keys: keys}
	o.values(m, keys)
	return keys, o.vals
}

// yamlKeys returns the keys of the last order sorted returned as w writes
// them in a node's map ("    key: "), or false when one needs yaml.v2.
func (o *keyOrder) yamlKeys(w *yamlWriter) ([][]byte, bool) {
	l := o.orders[0]
	if !l.written {
		l.written, l.writable = true, true
		for _, k := range l.keys {
			b, ok := w.scalar([]byte("    "), k, true)
			if !ok {
				l.writable = false
				break
			}
			l.yaml = append(l.yaml, append(b, ':', ' '))
		}
	}
	return l.yaml, l.writable
}

// values sets vals to m's values for keys, or reports false when m lacks
// one of keys.
func (o *keyOrder) values(m map[string]string, keys []string) bool {
	o.vals = o.vals[:0]
	for _, k := range keys {
		v, ok := m[k]
		if !ok {
			return false
		}
		o.vals = append(o.vals, v)
	}
	return true
}

// sortYAMLKeys sorts keys in yaml.v2's order. That order is not transitive
// for some sets of keys (a3 < a20 < a2x < a3), where yaml.v2's own output
// depends on map order; sorting bytewise first makes the result the same on
// every run.
func sortYAMLKeys(keys []string) {
	slices.Sort(keys)
	slices.SortStableFunc(keys, func(a, b string) int {
		switch {
		case yamlKeyLess(a, b):
			return -1
		case yamlKeyLess(b, a):
			return 1
		}
		return 0
	})
}

// writerByte marks the characters scalar writes itself: [A-Za-z0-9._/+:-].
var writerByte = func() (t [256]bool) {
	for c := 0; c < 256; c++ {
		t[c] = simpleByte(byte(c))
	}
	return t
}()

// quickScalar appends s as scalar does, for the strings a node mostly
// holds, which it decides without looking a word up: a string starting
// with a letter, '_' or '/' that is no YAML 1.1 word (those start with
// y, n, t, f or o and are at most 5 bytes: TestPlainStringKnowsTheWords)
// is plain; digits alone are a number, in double quotes; digits and at
// least two dots without a colon (an IPv4 address) are plain. It reports
// false for any other string, which scalar decides (TestQuickScalarAsScalar).
func quickScalar(out []byte, s string, key bool) ([]byte, bool) {
	if len(s) == 0 || key && len(s) > 128 || s[len(s)-1] == ':' {
		return out, false
	}
	dots, digits, colon := 0, true, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !writerByte[c] {
			return out, false
		}
		switch {
		case c == '.':
			dots++
			digits = false
		case c == ':':
			colon = true
			digits = false
		case c < '0' || c > '9':
			digits = false
		}
	}
	switch c := s[0]; {
	case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '/':
		switch c | 0x20 {
		case 'y', 'n', 't', 'f', 'o':
			if len(s) <= 5 {
				return out, false
			}
		}
		return append(out, s...), true
	case c >= '0' && c <= '9':
		switch {
		case digits:
			out = append(out, '"')
			out = append(out, s...)
			return append(out, '"'), true
		case dots >= 2 && !colon:
			return append(out, s...), true
		}
	}
	return out, false
}
