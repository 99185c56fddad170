package strictjson

import (
	"encoding/json"
	"fmt"
	"testing"
)

// benchDoc is a document of n nodes shaped like a cluster.yml.
func benchDoc(n int) []byte {
	d := doc{Name: "bench", Options: json.RawMessage(`{"kubelet":{"cri_endpoint":"/run/containerd/containerd.sock"}}`)}
	for i := range n {
		d.Nodes = append(d.Nodes, &node{
			Address: fmt.Sprintf("10.%d.%d.%d", i/65536, i/256%256, i%256),
			Labels:  map[string]string{"cke.cybozu.com/role": "cs", "cke.cybozu.com/rack": fmt.Sprint(i % 20), "topology.kubernetes.io/zone": fmt.Sprintf("rack%d", i%20)},
			Taints:  []taint{{Key: "cke.cybozu.com/state", Effect: "NoSchedule"}},
			Racks:   []int{i % 20},
		})
	}
	data, _ := json.MarshalIndent(d, "", "  ")
	return data
}

// BenchmarkUnmarshal: the strict decoding of a 10,000-node document, on
// the success path (what the daemon pays on every tick).
func BenchmarkUnmarshal(b *testing.B) {
	data := benchDoc(10000)
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		var v doc
		if err := Unmarshal(data, &v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkError: an unknown member in the last node of a 10,000-node
// document, found and described.
func BenchmarkError(b *testing.B) {
	data := benchDoc(10000)
	at := len(data) - 200
	for data[at] != '"' {
		at++
	}
	data = append(data[:at:at], append([]byte(`"zzz":1,`), data[at:]...)...)
	b.ReportAllocs()
	for b.Loop() {
		var v doc
		if err := Unmarshal(data, &v); err == nil {
			b.Fatal("accepted")
		}
	}
}
