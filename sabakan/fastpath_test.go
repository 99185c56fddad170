package sabakan

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Khan/genqlient/graphql"
	"pgregory.net/rapid"

	"github.com/ckegen/ckegen/fakesabakan"
	"github.com/ckegen/ckegen/internal/testutil/dcgen"
	"github.com/ckegen/ckegen/machine"
)

// genqlientOnly is the fast path that reads no answer: every answer is
// decoded by genqlient, the reference of the fast path.
func genqlientOnly([]byte) ([]machine.Machine, bool) { return nil, false }

// searchAnswer is what SearchMachines makes of data, a 200 JSON answer,
// with the fast path or (slow) with genqlient alone.
func searchAnswer(data []byte, slow bool) ([]machine.Machine, error) {
	c, err := NewClient("http://sabakan.invalid/graphql", Options{MaxBodyBytes: 1 << 20, Retries: -1})
	if err != nil {
		panic(err)
	}
	c.t = &transport{c: c, http: &http.Client{Transport: answerOnly(data)}}
	if slow {
		return c.searchMachines(context.Background(), Variables{}, genqlientOnly)
	}
	return c.SearchMachines(context.Background(), Variables{})
}

// checkFastPath fails when the fast path and genqlient make other
// machines or another error of an answer.
func checkFastPath(t interface{ Fatalf(string, ...any) }, data []byte) {
	fast, fastErr := searchAnswer(data, false)
	slow, slowErr := searchAnswer(data, true)
	if (fastErr == nil) != (slowErr == nil) || (fastErr != nil && fastErr.Error() != slowErr.Error()) {
		t.Fatalf("errors differ: fast path %v, genqlient %v, answer\n%s", fastErr, slowErr, data)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("machines differ:\nfast path %#v\ngenqlient %#v\nanswer\n%s", fast, slow, data)
	}
}

// answerEdits are what TestFastPathMatchesGenqlient puts into an answer:
// JSON's punctuation, nulls, escapes, keys and members the answer does
// not have, numbers and bytes that are not JSON.
var answerEdits = []string{
	"null", ",", ":", `"`, `\`, `\"`, `\u0041`, "{", "}", "[", "]", " ", "\n", "\t", "\v", "\x00", "\xff", "é", "1", "-0", "1.5", "1e400",
	`"errors":[{"message":"boom"}],`, `"extensions":{},`, `"Serial":"x",`, `"serial":"x",`, `"rack":"1",`, `"labels":null,`,
	`"timestamp":null,`, `"state":"ODD",`, `"data":null,`, "true", `{"spec":{"serial":"z"}},`, "null,", "[],", `"retireDate":"tomorrow",`,
}

// TestFastPathMatchesGenqlient: on answers of the compatible server's
// shape with a few bytes inserted, deleted or replaced anywhere,
// SearchMachines gives the same machines or the same error with the fast
// path as with genqlient's decoding alone.
func TestFastPathMatchesGenqlient(t *testing.T) {
	o := dcgen.Default(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	o.Racks, o.PerRack = 1, 4
	ms := dcgen.Machines(o)
	ts := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ms[1].Status.Timestamp = &ts
	ms[2].Spec.Labels = nil
	base, err := json.Marshal(map[string]any{"data": map[string]any{"searchMachines": ms}})
	if err != nil {
		t.Fatal(err)
	}
	checkFastPath(t, base)
	rapid.Check(t, func(t *rapid.T) {
		data := append([]byte(nil), base...)
		for range rapid.IntRange(0, 3).Draw(t, "edits") {
			at := rapid.IntRange(0, len(data)).Draw(t, "at")
			cut := rapid.IntRange(0, min(4, len(data)-at)).Draw(t, "cut")
			put := ""
			if rapid.IntRange(0, 3).Draw(t, "insert?") > 0 {
				put = rapid.SampledFrom(answerEdits).Draw(t, "insert")
			}
			data = append(data[:at:at], append([]byte(put), data[at+cut:]...)...)
		}
		checkFastPath(t, data)
	})
}

// TestServerAnswerTakesFastPath: the compatible server's answer to the
// daemon's query, for every kind of machine of the generated data
// centers, is decoded in one pass.
func TestServerAnswerTakesFastPath(t *testing.T) {
	o := dcgen.Default(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	o.UnhealthyPct = 50
	ms := dcgen.Machines(o)
	ms[3].Spec.Labels = nil
	store := fakesabakan.NewStore(func() time.Time { return o.Now })
	if err := store.Load(ms); err != nil {
		t.Fatal(err)
	}
	srv, err := fakesabakan.New(store)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewClient("http://sabakan.invalid/graphql", Options{Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	c.t.http = &http.Client{Transport: handlerTransport{srv.Handler()}}
	d := &fastDoer{t: c.t, decode: decodeAnswer}
	_, err = ckeSearch(context.Background(), graphql.NewClient(c.url, d), nil, nil)
	if !errors.Is(err, errDecoded) {
		t.Fatalf("the compatible server's answer was left to genqlient (%v)", err)
	}
	want, err := c.searchMachines(context.Background(), Variables{}, genqlientOnly)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(d.machines, want) {
		t.Errorf("the fast path read\n%+v\ngenqlient\n%+v", d.machines, want)
	}
}

// handlerTransport answers requests with a handler, in the process.
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	w := httptest.NewRecorder()
	t.h.ServeHTTP(w, req)
	resp := w.Result()
	resp.Request = req
	return resp, nil
}

// TestAnswerBufferReused: one client reading answers of every size in
// turn, announced or chunked, into the buffer of the one before, makes of
// each what a new client makes of it.
func TestAnswerBufferReused(t *testing.T) {
	o := dcgen.Default(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var answers [][]byte
	for _, n := range []int{3, 200, 0, 50, 240, 1} {
		o.Racks, o.PerRack = 1, n
		if n > 40 {
			o.Racks, o.PerRack = n/40, 40
		}
		data, err := json.Marshal(map[string]any{"data": map[string]any{"searchMachines": dcgen.Machines(o)}})
		if err != nil {
			t.Fatal(err)
		}
		answers = append(answers, data, []byte(`{"errors":[{"message":"x"}]}`), data[:len(data)/2])
	}
	var i atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(i.Add(1) - 1)
		data := answers[n%len(answers)]
		w.Header().Set("Content-Type", "application/json")
		if n/len(answers)%2 == 0 {
			w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		}
		// Past the buffering of net/http: chunked when not announced.
		for len(data) > 0 {
			k := min(len(data), 3000)
			_, _ = w.Write(data[:k])
			w.(http.Flusher).Flush()
			data = data[k:]
		}
	}))
	defer ts.Close()
	c, err := NewClient(ts.URL+"/graphql", Options{Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 * len(answers) {
		data := answers[int(i.Load())%len(answers)]
		got, gotErr := c.SearchMachines(context.Background(), Variables{})
		want, wantErr := searchAnswer(data, true)
		if fmt.Sprint(gotErr) != strings.ReplaceAll(fmt.Sprint(wantErr), "http://sabakan.invalid", ts.URL) || !reflect.DeepEqual(got, want) {
			t.Fatalf("answer of %d bytes: %d machines, %v; a new client: %d machines, %v", len(data), len(got), gotErr, len(want), wantErr)
		}
	}
}
