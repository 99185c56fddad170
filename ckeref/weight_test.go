package ckeref

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	ckesabakan "github.com/cybozu-go/cke/sabakan"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/labels"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/template"
)

// weightTemplate is a template whose one worker template has the weight w.
func weightTemplate(w string) string {
	return fmt.Sprintf(`{"name":"c","service_subnet":"10.68.0.0/16","nodes":[`+
		`{"user":"cp","control_plane":true},`+
		`{"user":"w","labels":{"cke.cybozu.com/role":"cs","cke.cybozu.com/weight":%q}}]}`, w)
}

// TestWeightAgainstCKE: a weight ckegen accepts is one CKE v1.35.4
// accepts, and both render it on the node, the same; the weights ckegen
// refuses because Kubernetes would refuse the node label (".5", "1.") CKE
// refuses as well, for the label. (ckegen refuses more than CKE: a weight
// must be a decimal > 0, so "abc", "0" and "1e3", which CKE stores, are
// refused; the count model reads them as numbers.)
func TestWeightAgainstCKE(t *testing.T) {
	w := &world{rng: rand.New(rand.NewPCG(1, 2))}
	weights := []string{"1", "0.5", "6.0", "10", "007", "1.50"}
	for range 200 {
		weights = append(weights, w.drawWeight())
	}
	m := &machine.Machine{Spec: machine.Spec{Serial: "s", Rack: 1, Role: "cs", IPv4: []string{"10.0.0.1"},
		RegisterDate: baseNow, RetireDate: baseNow.Add(1000 * 24 * time.Hour)}}
	for _, wt := range weights {
		tmpl, err := template.Parse([]byte(weightTemplate(wt)))
		if err != nil {
			t.Errorf("weight %q: ckegen refuses it: %v", wt, err)
			continue
		}
		if err := template.FillDefaults(tmpl.Cluster); err != nil {
			t.Fatal(err)
		}
		ckeTmpl := toCKECluster(tmpl.Cluster)
		if err := ckesabakan.ValidateTemplate(ckeTmpl); err != nil {
			t.Errorf("weight %q: ckegen accepts it, CKE refuses it: %v", wt, err)
			continue
		}
		got, _ := labels.Render(m, labels.Template{Labels: tmpl.Workers[0].Node.Labels}, false)
		data, err := json.Marshal([]machine.Machine{*m})
		if err != nil {
			t.Fatal(err)
		}
		ckeMachines := toCKEMachines(data)
		cn := ckesabakan.MachineToNode(&ckeMachines[0], ckeTmpl.Nodes[1])
		if got[labels.Weight] != wt || cn.Labels[labels.Weight] != wt {
			t.Errorf("weight %q: ckegen renders %q, CKE %q", wt, got[labels.Weight], cn.Labels[labels.Weight])
		}
	}
	for _, wt := range []string{".5", "1.", ".25", "3."} {
		_, err := template.Parse([]byte(weightTemplate(wt)))
		if err == nil || !strings.Contains(err.Error(), "not a valid Kubernetes label value") {
			t.Errorf("weight %q: ckegen's verdict %v, want a refusal as no label value", wt, err)
		}
		c, perr := cluster.Parse([]byte(weightTemplate(wt)))
		if perr != nil {
			t.Fatal(perr)
		}
		if err := template.FillDefaults(c); err != nil {
			t.Fatal(err)
		}
		err = ckesabakan.ValidateTemplate(toCKECluster(c))
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("labels: Invalid value: %q", wt)) {
			t.Errorf("weight %q: CKE's verdict %v, want a refusal of the label", wt, err)
		}
	}
}
