package cluster

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
)

// AppendJSON appends c as json.Marshal writes it, byte for byte
// (TestJSONWriterMatchesEncodingJSON), without reflection: the nodes are
// most of a cluster, and encoding/json spends most of its time on their
// maps (sorting each one's keys through reflect values).
func (c *Cluster) AppendJSON(b []byte) ([]byte, error) {
	w := jsonWriter{b: b}
	if err := w.cluster(c); err != nil {
		return b, err
	}
	return w.b, nil
}

// MarshalIndentJSON returns c as indented JSON ending with a newline:
// json.MarshalIndent(c, "", "  "), byte for byte.
func (c *Cluster) MarshalIndentJSON() ([]byte, error) {
	w := jsonWriter{indent: true}
	if err := w.cluster(c); err != nil {
		return nil, err
	}
	return append(w.b, '\n'), nil
}

// jsonWriter writes a cluster as encoding/json does, compact or indented
// as json.MarshalIndent(v, "", "  ") does.
type jsonWriter struct {
	b      []byte
	indent bool
	depth  int
	// first reports whether the object or array being written has no
	// member yet.
	first bool
	// labels and annotations sort the nodes' maps' keys.
	labels, annotations keyOrder
}

func (w *jsonWriter) newline() {
	w.b = append(w.b, '\n')
	for range w.depth {
		w.b = append(w.b, ' ', ' ')
	}
}

// open starts an object or an array that has members.
func (w *jsonWriter) open(c byte) {
	w.b = append(w.b, c)
	w.depth++
	w.first = true
}

func (w *jsonWriter) close(c byte) {
	w.depth--
	if w.indent {
		w.newline()
	}
	w.b = append(w.b, c)
	w.first = false
}

// next starts an element of an array.
func (w *jsonWriter) next() {
	if !w.first {
		w.b = append(w.b, ',')
	}
	w.first = false
	if w.indent {
		w.newline()
	}
}

// key starts a member of an object; name needs no escaping.
func (w *jsonWriter) key(name string) {
	w.next()
	w.b = append(w.b, '"')
	w.b = append(w.b, name...)
	w.b = append(w.b, '"', ':')
	if w.indent {
		w.b = append(w.b, ' ')
	}
}

// mapKey starts a member of a map.
func (w *jsonWriter) mapKey(k string) {
	w.next()
	w.b = appendJSONString(w.b, k)
	w.b = append(w.b, ':')
	if w.indent {
		w.b = append(w.b, ' ')
	}
}

func (w *jsonWriter) string(s string) { w.b = appendJSONString(w.b, s) }

// member writes a member whose value is a string.
func (w *jsonWriter) member(name, s string) {
	w.key(name)
	w.string(s)
}

// omitEmpty writes a member whose value is a string, unless it is "".
func (w *jsonWriter) omitEmpty(name, s string) {
	if s != "" {
		w.member(name, s)
	}
}

func (w *jsonWriter) bool(v bool) { w.b = strconv.AppendBool(w.b, v) }

// raw writes a field carried as JSON as encoding/json does: compacted,
// with <, > and & escaped, and indented at this depth when indenting.
func (w *jsonWriter) raw(m json.RawMessage) error {
	js, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if !w.indent {
		w.b = append(w.b, js...)
		return nil
	}
	buf := bytes.NewBuffer(w.b)
	prefix := string(bytes.Repeat([]byte("  "), w.depth))
	if err := json.Indent(buf, js, prefix, "  "); err != nil {
		return err
	}
	w.b = buf.Bytes()
	return nil
}

func (w *jsonWriter) strings(s []string) {
	if len(s) == 0 {
		w.b = append(w.b, "[]"...)
		return
	}
	w.open('[')
	for _, v := range s {
		w.next()
		w.string(v)
	}
	w.close(']')
}

func (w *jsonWriter) cluster(c *Cluster) error {
	if c == nil {
		w.b = append(w.b, "null"...)
		return nil
	}
	w.open('{')
	w.member("name", c.Name)
	w.key("nodes")
	switch {
	case c.Nodes == nil:
		w.b = append(w.b, "null"...)
	case len(c.Nodes) == 0:
		w.b = append(w.b, "[]"...)
	default:
		w.open('[')
		for i, n := range c.Nodes {
			w.next()
			if i == 1 {
				// Nodes are alike: make room for the rest at once.
				w.b = slices.Grow(w.b, len(w.b)*(len(c.Nodes)-1)*9/8+1024)
			}
			w.node(n)
		}
		w.close(']')
	}
	if c.TaintControlPlane {
		w.key("taint_control_plane")
		w.bool(true)
	}
	if len(c.ControlPlaneTolerations) > 0 {
		w.key("control_plane_tolerations")
		w.strings(c.ControlPlaneTolerations)
	}
	w.member("service_subnet", c.ServiceSubnet)
	if len(c.DNSServers) > 0 {
		w.key("dns_servers")
		w.strings(c.DNSServers)
	}
	w.omitEmpty("dns_service", c.DNSService)
	for _, f := range []struct {
		name string
		raw  json.RawMessage
	}{{"reboot", c.Reboot}, {"repair", c.Repair}, {"sabakan", c.Sabakan}, {"trusted_rest_mappings", c.TrustedRESTMappings}, {"options", c.Options}} {
		if len(f.raw) == 0 {
			continue
		}
		w.key(f.name)
		if err := w.raw(f.raw); err != nil {
			return err
		}
	}
	w.close('}')
	return nil
}

func (w *jsonWriter) node(n *Node) {
	if n == nil {
		w.b = append(w.b, "null"...)
		return
	}
	w.open('{')
	w.member("address", n.Address)
	w.omitEmpty("hostname", n.Hostname)
	w.member("user", n.User)
	w.key("control_plane")
	w.bool(n.ControlPlane)
	if len(n.Annotations) > 0 {
		w.key("annotations")
		w.stringMap(n.Annotations, &w.annotations)
	}
	if len(n.Labels) > 0 {
		w.key("labels")
		w.stringMap(n.Labels, &w.labels)
	}
	if len(n.Taints) > 0 {
		w.key("taints")
		w.open('[')
		for _, t := range n.Taints {
			w.next()
			w.open('{')
			w.member("key", t.Key)
			w.omitEmpty("value", t.Value)
			w.member("effect", t.Effect)
			w.close('}')
		}
		w.close(']')
	}
	w.close('}')
}

// stringMap writes a map that has entries, its keys in order.
func (w *jsonWriter) stringMap(m map[string]string, order *keyOrder) {
	order.byteOrder = true
	keys, vals := order.sorted(m)
	w.open('{')
	for i, k := range keys {
		w.mapKey(k)
		w.string(vals[i])
	}
	w.close('}')
}

// appendJSONString appends s quoted as encoding/json quotes it: a string
// of printable ASCII other than ", \, <, > and & as it is, any other
// through encoding/json.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			js, _ := json.Marshal(s) // a string always marshals
			return append(b, js...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
