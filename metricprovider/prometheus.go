package metricprovider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"

	"github.com/ckegen/ckegen/internal/strictjson"
)

// MaxResponseBytes bounds a Prometheus answer: a query that selects far
// more series than machines fails instead of exhausting memory.
const MaxResponseBytes = 256 << 20

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
		RoundTripper: limitTransport{next: api.DefaultRoundTripper, max: MaxResponseBytes},
	})
	if err != nil {
		return nil, err
	}
	clients[address] = c
	return c, nil
}

// queryPrometheus runs an instant query (GET /api/v1/query) and returns
// its samples. The request goes through the official client
// (client_golang/api); the answer is decoded here, keeping of each sample
// only the labels that name a machine: the official v1 decoder builds a
// map of every label of every sample and reads the body three times,
// which for 20,000 machines costs several times the budget of a tick.
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
	var r queryResponse
	jsonErr := json.Unmarshal(body, &r)
	if resp.StatusCode/100 != 2 || r.Status == "error" {
		if jsonErr != nil || r.Status != "error" {
			return nil, nil, &promv1.Error{Type: promv1.ErrServer, Msg: fmt.Sprintf("HTTP %s", resp.Status), Detail: snippet(body)}
		}
		return nil, r.Warnings, &promv1.Error{Type: promv1.ErrorType(r.ErrorType), Msg: r.Error}
	}
	if jsonErr != nil {
		return nil, nil, &promv1.Error{Type: promv1.ErrBadResponse, Msg: "not an answer of the Prometheus HTTP API: " + jsonError(body, new(queryResponse), jsonErr).Error(), Detail: snippet(body)}
	}
	if r.Data.ResultType != "vector" {
		return nil, r.Warnings, fmt.Errorf("returned a %s, want an instant vector with a %s, %s or %s label per sample",
			r.Data.ResultType, LabelSerial, LabelAddress, LabelInstance)
	}
	var samples []vectorSample
	if err := json.Unmarshal(r.Data.Result, &samples); err != nil {
		var vector struct {
			Data struct {
				Result []vectorSample `json:"result"`
			} `json:"data"`
		}
		return nil, r.Warnings, &promv1.Error{Type: promv1.ErrBadResponse, Msg: "reading the vector: " + jsonError(body, &vector, err).Error()}
	}
	return samples, r.Warnings, nil
}

// jsonError words err, encoding/json's error decoding data into v, as
// strictjson does: where, and in JSON's words, not Go's. encoding/json
// decodes the answers, which is faster; only its errors are read again.
func jsonError(data []byte, v any, err error) error {
	if serr := strictjson.UnmarshalIgnoringUnknown(data, v); serr != nil {
		return serr
	}
	return err // read by one decoder and not the other: its own words
}

func snippet(body []byte) string {
	const max = 200
	if len(body) > max {
		return string(body[:max]) + "..."
	}
	return string(body)
}

// queryResponse is the envelope of every answer of the HTTP API.
type queryResponse struct {
	Status    string   `json:"status"`
	ErrorType string   `json:"errorType"`
	Error     string   `json:"error"`
	Warnings  []string `json:"warnings"`
	Data      struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	} `json:"data"`
}

// vectorSample is one sample of an instant vector:
// {"metric": {LABELS}, "value": [TIME, "VALUE"]}.
type vectorSample struct {
	Metric sampleLabels `json:"metric"`
	Value  sampleValue  `json:"value"`
}

// sampleLabels keeps the labels that name a machine. An absent label is
// "": Prometheus never returns a label with an empty value.
type sampleLabels struct {
	Serial, Address, Instance string
	// text is the labels as returned, for errors.
	text []byte
}

// UnmarshalJSON reads a label set, comparing names exactly (encoding/json
// would match a struct field case-insensitively: "Serial" is not
// "serial"). encoding/json has checked that b is valid JSON.
func (l *sampleLabels) UnmarshalJSON(b []byte) error {
	l.text = b
	s := scanner{b: b}
	if !s.consume('{') {
		return errors.New("metric: want an object of labels")
	}
	if s.consume('}') {
		return nil
	}
	for {
		name, err := s.str()
		if err != nil {
			return fmt.Errorf("metric: %w", err)
		}
		if !s.consume(':') {
			return errors.New("metric: want a colon after a label name")
		}
		value, err := s.str()
		if err != nil {
			return fmt.Errorf("metric: label %s: %w", name, err)
		}
		switch string(name) {
		case LabelSerial:
			l.Serial = string(value)
		case LabelAddress:
			l.Address = string(value)
		case LabelInstance:
			l.Instance = string(value)
		}
		if s.consume('}') {
			return nil
		}
		if !s.consume(',') {
			return errors.New(`metric: want "," or "}" after a label`)
		}
	}
}

// String writes the labels as Prometheus returned them.
func (l sampleLabels) String() string { return string(l.text) }

// sampleValue is the value of [TIME, "VALUE"]; NaN when absent (a native
// histogram sample has no "value").
type sampleValue struct {
	v  float64
	ok bool
}

// UnmarshalJSON reads [TIME, "VALUE"].
func (sv *sampleValue) UnmarshalJSON(b []byte) error {
	s := scanner{b: b}
	if !s.consume('[') {
		return errors.New("value: want [time, \"value\"]")
	}
	comma := bytes.IndexByte(b[s.i:], ',')
	if comma < 0 {
		return errors.New("value: want [time, \"value\"]")
	}
	s.i += comma + 1
	raw, err := s.str()
	if err != nil {
		return fmt.Errorf("value: %w", err)
	}
	// Prometheus writes values as Go does: 27, 1.5e+10, NaN, +Inf, -Inf.
	v, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return fmt.Errorf("value: not a number: %q", raw)
	}
	if !s.consume(']') {
		return errors.New("value: want [time, \"value\"]")
	}
	sv.v, sv.ok = v, true
	return nil
}

// scanner reads the few JSON forms of a sample from valid JSON.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) skipSpace() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

// consume skips spaces and c, reporting whether c was there.
func (s *scanner) consume(c byte) bool {
	s.skipSpace()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// str reads a JSON string. Without escapes it returns a slice of the
// input (no copy); with escapes, the decoded string.
func (s *scanner) str() ([]byte, error) {
	s.skipSpace()
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, errors.New("want a string")
	}
	start := s.i
	escaped := false
	for j := start + 1; j < len(s.b); j++ {
		switch s.b[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			s.i = j + 1
			if !escaped {
				return s.b[start+1 : j], nil
			}
			var out string
			if err := json.Unmarshal(s.b[start:j+1], &out); err != nil {
				return nil, err
			}
			return []byte(out), nil
		}
	}
	return nil, errors.New("unterminated string")
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
		return 0, fmt.Errorf("answer larger than %d bytes", MaxResponseBytes)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}
