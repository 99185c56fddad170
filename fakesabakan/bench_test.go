package fakesabakan

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ckegen/ckegen/internal/testutil/dcgen"
)

// search20000 is a server of 20,000 machines and the daemon's query (boot
// servers and RETIRED machines excluded, every field it reads, lower-case
// enum values included).
func search20000(b *testing.B) (*Server, []byte) {
	o := dcgen.Default(now)
	o.Racks, o.PerRack = 500, 40
	store := NewStore(nil)
	if err := store.Load(dcgen.Machines(o)); err != nil {
		b.Fatal(err)
	}
	srv, err := New(store)
	if err != nil {
		b.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{
		"query": `query($h: MachineParams, $n: MachineParams) { searchMachines(having: $h, notHaving: $n) {
			spec { serial labels { name value } rack indexInRack role ipv4 registerDate retireDate bmc { bmcType } }
			status { state timestamp duration } } }`,
		"variables": map[string]any{"n": map[string]any{"roles": []string{"boot"}, "states": []string{"retired"}}},
	})
	return srv, body
}

// BenchmarkSearch20000 is the daemon's query against 20,000 machines, over
// HTTP, the answer decoded into one raw message per machine.
func BenchmarkSearch20000(b *testing.B) {
	srv, body := search20000(b)
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	b.ReportAllocs()
	for b.Loop() {
		resp, err := http.Post(ts.URL+"/graphql", "application/json", strings.NewReader(string(body)))
		if err != nil {
			b.Fatal(err)
		}
		var out struct {
			Data struct{ SearchMachines []json.RawMessage }
		}
		err = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || len(out.Data.SearchMachines) == 0 {
			b.Fatal(resp.Status, err)
		}
	}
}

// BenchmarkSearch20000Handler is the server's side of BenchmarkSearch20000
// alone: the handler answers into a writer that counts the bytes.
func BenchmarkSearch20000Handler(b *testing.B) {
	srv, body := search20000(b)
	h := srv.Handler()
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/graphql", strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		w := &countingWriter{header: http.Header{}}
		h.ServeHTTP(w, req)
		if w.status != http.StatusOK || w.n < 20000*100 {
			b.Fatalf("HTTP %d, %d bytes", w.status, w.n)
		}
	}
}

// countingWriter is a ResponseWriter that keeps the status and counts the
// bytes of the body.
type countingWriter struct {
	header http.Header
	status int
	n      int
}

func (w *countingWriter) Header() http.Header { return w.header }
func (w *countingWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}
func (w *countingWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.n += len(p)
	return len(p), nil
}

// BenchmarkRegister20000 registers 20,000 machines in 500 racks of 40 in
// one request: with an IPAM configuration like ipam.md's (with pools large
// enough), and without one.
func BenchmarkRegister20000(b *testing.B) {
	cfg := strings.NewReplacer(`"max-nodes-in-rack": 28`, `"max-nodes-in-rack": 39`,
		`"10.69.0.0/16"`, `"10.0.0.0/8"`, `"10.72.16.0/20"`, `"172.16.0.0/12"`).Replace(ipamExample)
	var items []string
	for rack := range 500 {
		items = append(items, register(fmt.Sprintf("boot-%d", rack), rack, "boot"))
		for i := range 39 {
			items = append(items, register(fmt.Sprintf("m-%d-%d", rack, i), rack, "cs"))
		}
	}
	body := []byte("[" + strings.Join(items, ",") + "]")
	for _, withIPAM := range []bool{true, false} {
		b.Run(fmt.Sprintf("ipam=%v", withIPAM), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				store := NewStore(nil)
				if withIPAM {
					c, err := ReadIPAMConfig(strings.NewReader(cfg))
					if err != nil {
						b.Fatal(err)
					}
					if err := store.SetIPAM(c); err != nil {
						b.Fatal(err)
					}
				}
				var rs []MachineSpec
				if err := json.Unmarshal(body, &rs); err != nil {
					b.Fatal(err)
				}
				if err := store.Register(rs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
