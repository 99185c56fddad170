package kubenodes

import (
	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/kubenodes/nodefile"
)

// Parse reads the taints of Kubernetes Nodes from a file: nodefile.Parse,
// which a program that does not list Nodes from an API server should call
// instead, so as not to link the Kubernetes client.
func Parse(data []byte) (map[string][]cluster.Taint, error) {
	return nodefile.Parse(data)
}
