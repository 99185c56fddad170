// Package nodefile reads the taints of Kubernetes Nodes from a file, for
// the offline generator (ckecli sabakan generate --k8s-nodes). It links no
// Kubernetes client: a program that reads only files imports it rather
// than kubenodes, whose API client costs a binary several megabytes.
package nodefile

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/internal/strictjson"
	"github.com/ckegen/ckegen/taints"
)

// wantShape names the formats Parse accepts, for its errors.
const wantShape = `want [{"name": ADDRESS, "taints": [...]}], or Nodes as "kubectl get nodes -o json" writes them`

// Parse reads the taints of Kubernetes Nodes from a file, in either of two
// JSON formats:
//
//   - ckegen's own: [{"name": ADDRESS, "taints": [{"key", "value", "effect"}]}],
//     field names strict;
//   - Kubernetes': what "kubectl get nodes -o json" writes (kind List of
//     Nodes), a NodeList as the API returns it, or one Node (kind Node);
//     fields other than the Node's name and taints are ignored.
//
// It returns the taints by Node name, as kubenodes.Reader.List does. A Node named
// twice, a taint that is not valid, trailing data and any other shape are
// errors naming where the problem is.
func Parse(data []byte) (map[string][]cluster.Taint, error) {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) == 0 {
		return nil, fmt.Errorf("empty file: %s", wantShape)
	}
	switch trimmed[0] {
	case '[':
		return parseNodesArray(data)
	case '{':
		return parseKubernetes(data)
	}
	return nil, fmt.Errorf("not a JSON array or object: %s", wantShape)
}

// decodeError words an error of strictjson for a Node file.
func decodeError(err error) error {
	var se *strictjson.Error
	if errors.As(err, &se) && se.Kind == strictjson.Trailing {
		return fmt.Errorf("trailing data after the JSON document: one document per file (line %d, column %d)", se.Line, se.Column)
	}
	return fmt.Errorf("%s: %w", wantShape, err)
}

type namedNode struct {
	Name   string          `json:"name"`
	Taints []cluster.Taint `json:"taints"`
}

func parseNodesArray(data []byte) (map[string][]cluster.Taint, error) {
	var nodes []namedNode
	if err := strictjson.Unmarshal(data, &nodes); err != nil {
		return nil, decodeError(err)
	}
	b := newBuilder(len(nodes))
	for i, n := range nodes {
		where := fmt.Sprintf("[%d]", i)
		if err := b.add(where+".name", n.Name, where+".taints", n.Taints); err != nil {
			return nil, err
		}
	}
	return b.out, nil
}

// kubeObject is the part of a Kubernetes Node, NodeList or List that Parse
// reads.
type kubeObject struct {
	kubeItem
	Items []kubeItem `json:"items"`
}

type kubeItem struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Taints []cluster.Taint `json:"taints"`
	} `json:"spec"`
}

func parseKubernetes(data []byte) (map[string][]cluster.Taint, error) {
	var obj kubeObject
	if err := strictjson.UnmarshalIgnoringUnknown(data, &obj); err != nil {
		return nil, decodeError(err)
	}
	switch obj.Kind {
	case "Node", "List", "NodeList":
	case "":
		return nil, fmt.Errorf("kind: missing (%s)", wantShape)
	default:
		return nil, fmt.Errorf("kind: want List, NodeList or Node, got %q", obj.Kind)
	}
	if obj.APIVersion != "v1" {
		return nil, fmt.Errorf("apiVersion: want v1, got %q", obj.APIVersion)
	}
	if obj.Kind == "Node" {
		b := newBuilder(1)
		if err := b.add("metadata.name", obj.Metadata.Name, "spec.taints", obj.Spec.Taints); err != nil {
			return nil, err
		}
		return b.out, nil
	}
	b := newBuilder(len(obj.Items))
	for i, it := range obj.Items {
		where := fmt.Sprintf("items[%d]", i)
		// kubectl's List names each item's kind and apiVersion; a NodeList
		// from the API may leave them out.
		if it.Kind != "Node" && (obj.Kind == "List" || it.Kind != "") {
			return nil, fmt.Errorf("%s.kind: want Node, got %q", where, it.Kind)
		}
		if it.APIVersion != "v1" && (obj.Kind == "List" || it.APIVersion != "") {
			return nil, fmt.Errorf("%s.apiVersion: want v1, got %q", where, it.APIVersion)
		}
		if err := b.add(where+".metadata.name", it.Metadata.Name, where+".spec.taints", it.Spec.Taints); err != nil {
			return nil, err
		}
	}
	return b.out, nil
}

// builder collects Nodes' taints, refusing bad names and taints.
type builder struct {
	out   map[string][]cluster.Taint
	where map[string]string
}

func newBuilder(n int) *builder {
	return &builder{out: make(map[string][]cluster.Taint, n), where: make(map[string]string, n)}
}

// add adds one Node; nameAt and taintsAt say where its name and taints are
// in the file.
func (b *builder) add(nameAt, name, taintsAt string, ts []cluster.Taint) error {
	if name == "" {
		return fmt.Errorf("%s: must not be empty", nameAt)
	}
	if prev, ok := b.where[name]; ok {
		return fmt.Errorf("%s: Node %q is named at %s too: each Node once", nameAt, name, prev)
	}
	for j, t := range ts {
		if err := taints.Validate(t); err != nil {
			return fmt.Errorf("%s[%d]: %w", taintsAt, j, err)
		}
	}
	b.where[name] = nameAt
	if len(ts) == 0 {
		ts = nil
	}
	b.out[name] = ts
	return nil
}
