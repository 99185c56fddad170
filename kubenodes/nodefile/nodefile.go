// Package nodefile reads the taints of Kubernetes Nodes from a file, for
// the offline generator (ckegenctl sabakan generate --k8s-nodes). It links no
// Kubernetes client: a program that reads only files imports it rather
// than kubenodes, whose API client costs a binary several megabytes.
package nodefile

import (
	"bytes"
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
// errors naming where the problem is: the path, the line and the column.
func Parse(data []byte) (map[string][]cluster.Taint, error) {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) == 0 {
		return nil, fmt.Errorf("empty file: %s", wantShape)
	}
	var out map[string][]cluster.Taint
	var err error
	switch trimmed[0] {
	case '[':
		out, err = parseNodesArray(data)
	case '{':
		out, err = parseKubernetes(data)
	default:
		err = strictjson.Invalidf(nil, "not a JSON array or object: %s", wantShape)
	}
	if err != nil {
		return nil, strictjson.Place(err, data)
	}
	return out, nil
}

type namedNode struct {
	Name   string          `json:"name"`
	Taints []cluster.Taint `json:"taints"`
}

func parseNodesArray(data []byte) (map[string][]cluster.Taint, error) {
	var nodes []namedNode
	if err := strictjson.Unmarshal(data, &nodes); err != nil {
		return nil, err
	}
	b := newBuilder(len(nodes))
	for i, n := range nodes {
		at := strictjson.Path(nil).Index(i)
		if err := b.add(at.Key("name"), n.Name, at.Key("taints"), n.Taints); err != nil {
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
		return nil, err
	}
	var root strictjson.Path
	switch obj.Kind {
	case "Node", "List", "NodeList":
	case "":
		return nil, strictjson.Invalidf(root.Key("kind"), "missing (%s)", wantShape)
	default:
		return nil, strictjson.Invalidf(root.Key("kind"), "want List, NodeList or Node, got %q", obj.Kind)
	}
	if obj.APIVersion != "v1" {
		return nil, strictjson.Invalidf(root.Key("apiVersion"), "want v1, got %q", obj.APIVersion)
	}
	if obj.Kind == "Node" {
		b := newBuilder(1)
		if err := b.add(root.Key("metadata").Key("name"), obj.Metadata.Name, root.Key("spec").Key("taints"), obj.Spec.Taints); err != nil {
			return nil, err
		}
		return b.out, nil
	}
	b := newBuilder(len(obj.Items))
	for i, it := range obj.Items {
		at := root.Key("items").Index(i)
		// kubectl's List names each item's kind and apiVersion; a NodeList
		// from the API may leave them out.
		if it.Kind != "Node" && (obj.Kind == "List" || it.Kind != "") {
			return nil, strictjson.Invalidf(at.Key("kind"), "want Node, got %q", it.Kind)
		}
		if it.APIVersion != "v1" && (obj.Kind == "List" || it.APIVersion != "") {
			return nil, strictjson.Invalidf(at.Key("apiVersion"), "want v1, got %q", it.APIVersion)
		}
		if err := b.add(at.Key("metadata").Key("name"), it.Metadata.Name, at.Key("spec").Key("taints"), it.Spec.Taints); err != nil {
			return nil, err
		}
	}
	return b.out, nil
}

// builder collects Nodes' taints, refusing bad names and taints.
type builder struct {
	out   map[string][]cluster.Taint
	where map[string]strictjson.Path
}

func newBuilder(n int) *builder {
	return &builder{out: make(map[string][]cluster.Taint, n), where: make(map[string]strictjson.Path, n)}
}

// add adds one Node; nameAt and taintsAt say where its name and taints are
// in the file.
func (b *builder) add(nameAt strictjson.Path, name string, taintsAt strictjson.Path, ts []cluster.Taint) error {
	if name == "" {
		return strictjson.Invalidf(nameAt, "must not be empty")
	}
	if prev, ok := b.where[name]; ok {
		return strictjson.Invalidf(nameAt, "Node %q is named at %s too: each Node once", name, prev)
	}
	for j, t := range ts {
		if err := taints.Validate(t); err != nil {
			return strictjson.Invalidf(taintsAt.Index(j), "%v", err)
		}
	}
	b.where[name] = nameAt
	if len(ts) == 0 {
		ts = nil
	}
	b.out[name] = ts
	return nil
}
