package sabakan

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"testing"

	"github.com/ckegen/ckegen/labels"
	"github.com/ckegen/ckegen/machine"
)

// answerOnly is an HTTP exchange that always brings back body as a 200
// JSON answer, so that fuzzing reaches the decoding without a socket.
type answerOnly []byte

func (a answerOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(a)), ContentLength: -1, Request: req}, nil
}

// FuzzAnswer: no answer makes the client's decoding and checks or
// sanitizing panic; the fast path and genqlient make the same of it; an answer is refused with a documented error of
// bounded length, or accepted with unique serials and known states, and
// what Sanitize keeps has unique addresses.
func FuzzAnswer(f *testing.F) {
	f.Add([]byte(`{"data":{"searchMachines":[]}}`))
	f.Add([]byte(`{"data":{}}`))
	f.Add([]byte(`{"errors":[{"message":"boom"}],"data":null}`))
	f.Add([]byte(`{"data":{"searchMachines":[{"spec":{"serial":"a","rack":-1,"ipv4":["10.0.0.1"],"labels":[{"name":"x","value":"!"}]},"status":{"state":"HEALTHY"}}]}}`))
	f.Add([]byte(`{"data":{"searchMachines":[{"spec":{"serial":"a"},"status":{"state":"HEALTHY"}},{"spec":{"serial":"a"},"status":{"state":"RETIRED"}}]}}`))
	if ms, err := os.ReadFile("../examples/machines.json"); err == nil {
		f.Add(append(append([]byte(`{"data":{"searchMachines":`), ms...), '}', '}'))
	}
	c, err := NewClient("http://sabakan.invalid/graphql", Options{MaxBodyBytes: 1 << 20, Retries: -1})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkFastPath(t, data)
		cl := *c
		cl.t = &transport{c: &cl, http: &http.Client{Transport: answerOnly(data)}}
		ms, err := cl.SearchMachines(context.Background(), Variables{})
		if err != nil {
			if !errors.Is(err, ErrQuery) && !errors.Is(err, ErrUnreachable) {
				t.Fatalf("undocumented error %v", err)
			}
			if len(err.Error()) > 8<<10 {
				t.Fatalf("error of %d bytes: echoes are bounded", len(err.Error()))
			}
			return
		}
		serials := map[string]bool{}
		for _, m := range ms {
			if serials[m.Spec.Serial] || !m.Status.State.Valid() {
				t.Fatalf("accepted a serial twice or an unknown state: %+v", m)
			}
			serials[m.Spec.Serial] = true
		}
		kept, _ := machine.Sanitize(ms, labels.ValidateSabakanLabel)
		addrs := map[string]bool{}
		for _, m := range kept {
			if addrs[m.Address()] || m.Address() == "" || m.Spec.Rack < 0 || m.Spec.IndexInRack < 0 {
				t.Fatalf("Sanitize kept an impossible machine: %+v", m.Spec)
			}
			addrs[m.Address()] = true
		}
	})
}
