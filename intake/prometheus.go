package intake

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
)

// maxPrometheusAnswer bounds a Prometheus answer: a query that selects far
// more series than machines fails instead of exhausting memory.
const maxPrometheusAnswer = 256 << 20

// The Prometheus HTTP API client (the official client's api.Client) of
// each URL, kept so that connections are reused from tick to tick.
var (
	clientsMu sync.Mutex
	clients   = map[string]api.Client{}
)

func prometheusClient(address string) (api.Client, error) {
	clientsMu.Lock()
	defer clientsMu.Unlock()
	if c, ok := clients[address]; ok {
		return c, nil
	}
	c, err := api.NewClient(api.Config{
		Address:      address,
		RoundTripper: limitTransport{next: api.DefaultRoundTripper, max: maxPrometheusAnswer},
	})
	if err != nil {
		return nil, err
	}
	clients[address] = c
	return c, nil
}

// queryPrometheus runs an instant query (GET /api/v1/query) and returns
// its samples. The request goes through the official client
// (client_golang/api); the answer is decoded here (answer.go), keeping of
// each sample only the labels that name a machine: the official v1
// decoder builds a map of every label of every sample and reads the body
// three times, which for 20,000 machines costs several times the budget
// of a tick.
// API errors are returned as the official *promv1.Error.
func queryPrometheus(ctx context.Context, address, query string, timeout time.Duration) ([]vectorSample, []string, error) {
	client, err := prometheusClient(address)
	if err != nil {
		return nil, nil, err
	}
	u := client.URL("/api/v1/query", nil)
	u.RawQuery = url.Values{
		"query": {query},
		// Prometheus stops evaluating at the same timeout.
		"timeout": {strconv.FormatFloat(timeout.Seconds(), 'f', -1, 64)},
	}.Encode()
	req, err := http.NewRequest(http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, nil, err
	}
	resp, body, err := client.Do(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	a, err := readAnswer(body)
	if resp.StatusCode/100 != 2 || a.Status == "error" {
		if err != nil || a.Status != "error" {
			return nil, nil, &promv1.Error{Type: promv1.ErrServer, Msg: fmt.Sprintf("HTTP %s", resp.Status), Detail: snippet(body)}
		}
		return nil, a.Warnings, &promv1.Error{Type: promv1.ErrorType(a.ErrorType), Msg: a.Error}
	}
	if err != nil {
		return nil, nil, &promv1.Error{Type: promv1.ErrBadResponse, Msg: "not an answer of the Prometheus HTTP API: " + err.Error(), Detail: snippet(body)}
	}
	if a.Data.ResultType != "vector" {
		return nil, a.Warnings, fmt.Errorf("returned a %s, want an instant vector with a %s, %s or %s label per sample",
			a.Data.ResultType, promLabelSerial, promLabelAddress, promLabelInstance)
	}
	samples, err := readVector(body, a.Data.Result)
	if err != nil {
		return nil, a.Warnings, &promv1.Error{Type: promv1.ErrBadResponse, Msg: "reading the vector: " + err.Error()}
	}
	return samples, a.Warnings, nil
}

func snippet(body []byte) string {
	const max = 200
	if len(body) > max {
		return string(body[:max]) + "..."
	}
	return string(body)
}

// vectorSample is one sample of an instant vector:
// {"metric": {LABELS}, "value": [TIME, "VALUE"]}.
type vectorSample struct {
	Metric sampleLabels
	Value  sampleValue
}

// sampleLabels keeps the labels that name a machine. An absent label is
// "": Prometheus never returns a label with an empty value.
type sampleLabels struct {
	Serial, Address, Instance string
	// text is the labels as returned, for errors.
	text []byte
}

// String writes the labels as Prometheus returned them.
func (l sampleLabels) String() string { return string(l.text) }

// sampleValue is the value of [TIME, "VALUE"]; NaN when absent (a native
// histogram sample has no "value").
type sampleValue struct {
	v  float64
	ok bool
}

// limitTransport fails a response body past max bytes.
type limitTransport struct {
	next http.RoundTripper
	max  int64
}

func (t limitTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	resp.Body = &limitedBody{ReadCloser: resp.Body, left: t.max}
	return resp, nil
}

type limitedBody struct {
	io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, fmt.Errorf("answer larger than %d bytes", maxPrometheusAnswer)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}
