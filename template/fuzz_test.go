package template

import (
	"os"
	"strings"
	"testing"

	"github.com/ckegen/ckegen/labels"
)

// FuzzParse: no input makes template parsing panic; an accepted template
// always has one control plane and at least one worker, and a valid spare
// node taint key from sabakan, if any.
func FuzzParse(f *testing.F) {
	f.Add([]byte(valid))
	if data, err := os.ReadFile("../examples/template.yml"); err == nil {
		f.Add(data)
	}
	f.Add([]byte(`{"name":"a","nodes":[{"user":"u","control_plane":true},{"user":"u"}],"service_subnet":"10.0.0.0/8"}`))
	f.Add([]byte("nodes: [null]"))
	f.Add([]byte("name: a\nnodes:\n- {user: u, labels: {cke.cybozu.com/weight: '1e-400'}}\n"))
	f.Add([]byte(everyDocumentedField))
	f.Add([]byte(valid + "options: {kubelet: {cri_endpiont: x, boot_taints: [{efect: 1}]}}\nsabakan: {spare_node_taint_key: 5}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tmpl, err := Parse(data)
		if err != nil {
			return
		}
		if tmpl.ControlPlane.Node == nil || len(tmpl.Workers) == 0 {
			t.Fatalf("accepted a template without a control plane or worker: %q", data)
		}
		if k := tmpl.SpareNodeTaintKey; k != "" && (labels.ValidateKey(k) != nil || !strings.Contains(string(tmpl.Cluster.Sabakan), "spare_node_taint_key")) {
			t.Fatalf("accepted spare node taint key %q from sabakan %s", k, tmpl.Cluster.Sabakan)
		}
		for _, w := range tmpl.Workers {
			if !(w.Weight > 0) {
				t.Fatalf("accepted weight %v", w.Weight)
			}
		}
	})
}
