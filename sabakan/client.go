package sabakan

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/Khan/genqlient/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"
	etcdtransport "go.etcd.io/etcd/client/pkg/v3/transport"

	"github.com/ckegen/ckegen/internal/clip"
	"github.com/ckegen/ckegen/internal/redact"
	"github.com/ckegen/ckegen/internal/strictjson"
	"github.com/ckegen/ckegen/machine"
)

// Defaults of Options.
const (
	DefaultTimeout      = 30 * time.Second
	DefaultRetries      = 3
	DefaultBackoff      = 500 * time.Millisecond
	DefaultMaxBodyBytes = 128 << 20
	// MaxRedirects is how many redirects, each to the same scheme, host
	// and port, a query follows.
	MaxRedirects = 3
)

// Options configure a Client. The zero value of each field takes its
// default.
type Options struct {
	// Timeout bounds each HTTP request (connection, response and body).
	Timeout time.Duration
	// Retries is how many times a request is retried after a connection
	// error or an HTTP 5xx (not after a 4xx or a GraphQL error); negative
	// means none.
	Retries int
	// Backoff is the wait before the first retry; it doubles each time.
	Backoff time.Duration
	// MaxBodyBytes bounds the response size.
	MaxBodyBytes int64
	// CAFile is a PEM bundle of the CAs that sign sabakan's certificate.
	CAFile string
	// CertFile and KeyFile are the client certificate, when sabakan asks
	// for one.
	CertFile, KeyFile string
}

// Client queries one sabakan.
type Client struct {
	url  string
	opts Options
	t    *transport
}

// NewClient returns a client for the GraphQL endpoint url (ending with
// /graphql).
func NewClient(url string, opts Options) (*Client, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Retries == 0 {
		opts.Retries = DefaultRetries
	}
	if opts.Retries < 0 {
		opts.Retries = 0
	}
	if opts.Backoff <= 0 {
		opts.Backoff = DefaultBackoff
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tc, err := tlsConfig(opts)
	if err != nil {
		return nil, err
	}
	tr.TLSClientConfig = tc
	c := &Client{url: url, opts: opts}
	c.t = &transport{c: c, http: &http.Client{Transport: tr, CheckRedirect: sameOrigin}}
	return c, nil
}

// errRedirect marks a redirect the client refused to follow.
var errRedirect = errors.New("redirect refused")

// sameOrigin follows a redirect only to the scheme, host and port of the
// first request, and at most MaxRedirects of them: an answer from another
// host is not the inventory that was asked for, and the request must not
// be sent there.
func sameOrigin(req *http.Request, via []*http.Request) error {
	first := via[0].URL
	if req.URL.Scheme != first.Scheme || req.URL.Host != first.Host {
		return fmt.Errorf("%w: to %s://%s, another host than %s://%s", errRedirect, req.URL.Scheme, req.URL.Host, first.Scheme, first.Host)
	}
	if len(via) > MaxRedirects {
		return fmt.Errorf("%w: more than %d redirects", errRedirect, MaxRedirects)
	}
	return nil
}

// tlsConfig is the TLS client configuration of opts, nil when they set
// none: etcd's transport.TLSInfo, which also rereads the client
// certificate at each handshake, so a renewed one is used without a
// restart.
func tlsConfig(opts Options) (*tls.Config, error) {
	if opts.CAFile == "" && opts.CertFile == "" && opts.KeyFile == "" {
		return nil, nil
	}
	if (opts.CertFile == "") != (opts.KeyFile == "") {
		return nil, errors.New("sabakan client certificate: both the certificate and the key file are needed")
	}
	info := etcdtransport.TLSInfo{TrustedCAFile: opts.CAFile, CertFile: opts.CertFile, KeyFile: opts.KeyFile}
	tc, err := info.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("sabakan TLS: %w", err)
	}
	// TLSInfo reads a file without PEM blocks as an empty set of CAs, which
	// would fail every connection later with a vaguer error.
	if opts.CAFile != "" && tc.RootCAs.Equal(x509.NewCertPool()) {
		return nil, fmt.Errorf("sabakan CA file %s: no PEM certificate found", opts.CAFile)
	}
	return tc, nil
}

// Clients makes the client of a URL once and reuses it while the URL
// stays the same, so that its connections stay open from one query to
// the next. The zero value is ready; it is not safe for concurrent use.
type Clients struct {
	// Options configure every client made.
	Options Options
	last    *Client
}

// For returns the client of url.
func (cs *Clients) For(url string) (*Client, error) {
	if cs.last != nil && cs.last.url == url {
		return cs.last, nil
	}
	c, err := NewClient(url, cs.Options)
	if err != nil {
		return nil, err
	}
	cs.last = c
	return c, nil
}

// Redacted is the endpoint with its secrets (a password, query values)
// masked: the form to show.
func (c *Client) Redacted() string { return redact.URL(c.url) }

// SearchMachines runs ckeSearch with the user's variables.
func (c *Client) SearchMachines(ctx context.Context, v Variables) ([]machine.Machine, error) {
	return c.searchMachines(ctx, v, decodeAnswer)
}

// decodeAnswer decodes an answer in one pass when it has the plain shape
// of a searchMachines result (machine.DecodeList), and reports false for
// any other.
func decodeAnswer(answer []byte) ([]machine.Machine, bool) {
	return machine.DecodeList(answer, true)
}

// searchMachines is SearchMachines with decode as the fast path: decode
// reads the whole answer, or reports false to leave it to genqlient.
func (c *Client) searchMachines(ctx context.Context, v Variables, decode func([]byte) ([]machine.Machine, bool)) ([]machine.Machine, error) {
	ms, err := c.search(ctx, v, decode)
	if err != nil {
		return nil, err
	}
	if err := machine.Validate(ms); err != nil {
		return nil, &classified{ErrQuery, fmt.Sprintf("sabakan at %s: malformed response: %v", c.Redacted(), err)}
	}
	return ms, nil
}

// search sends ckeSearch as genqlient does (the generated ckeSearch, over
// graphql.NewClient) and decodes the answer. An answer decode reads (the
// plain shape of a searchMachines result, for decodeAnswer) is decoded by
// it; any other (GraphQL errors, extensions, nulls, escapes, a wrong type,
// a date that does not parse, bad JSON...) by genqlient with
// encoding/json, as it comes: its result or its error is the reference,
// and the fast path reads what it would read (TestFastPathMatchesGenqlient).
func (c *Client) search(ctx context.Context, v Variables, decode func([]byte) ([]machine.Machine, bool)) ([]machine.Machine, error) {
	d := &fastDoer{t: c.t, decode: decode}
	resp, err := ckeSearch(ctx, graphql.NewClient(c.url, d), v.Having, v.NotHaving)
	if d.answer != nil {
		err = answerError(d.answer, err)
		// Decoded, one way or the other.
		c.t.putSpare(d.answer)
	}
	if errors.Is(err, errDecoded) {
		return d.machines, nil
	}
	if err != nil {
		return nil, c.classify(ctx, err)
	}
	// An answer without the list is not an empty data center: only [] is.
	if resp == nil || resp.SearchMachines == nil {
		return nil, &classified{ErrQuery, fmt.Sprintf("sabakan at %s: malformed response: data.searchMachines is missing or null (an empty data center is [])", c.Redacted())}
	}
	ms := make([]machine.Machine, 0, len(resp.SearchMachines))
	for i, m := range resp.SearchMachines {
		if m == nil {
			return nil, &classified{ErrQuery, fmt.Sprintf("sabakan at %s: malformed response: searchMachines[%d] is null", c.Redacted(), i)}
		}
		ms = append(ms, *m)
	}
	return ms, nil
}

// answerError is err, genqlient's error decoding answer, in strictjson's
// words when it is encoding/json's syntax or type error, or an answer cut
// short: the line, column
// and path in the answer, and what was wanted in JSON's words, where
// encoding/json named Go's types ("cannot unmarshal string into Go struct
// field ckeSearchSearchMachinesMachineSpec.data.searchMachines.spec.rack
// of type int"). Any other err is returned as it is.
func answerError(answer []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	if !errors.As(err, &se) && !errors.As(err, &te) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return err
	}
	var envelope struct {
		Data *ckeSearchResponse `json:"data"`
	}
	if serr := strictjson.UnmarshalIgnoringUnknown(answer, &envelope); serr != nil {
		return serr
	}
	return err
}

// errDecoded ends genqlient's part of a query whose answer fastDoer has
// decoded.
var errDecoded = errors.New("answer decoded")

// fastDoer is the Doer of one query: it sends the request genqlient made
// through the transport, and decodes the answer itself when decode reads
// it, returning errDecoded to genqlient instead (which returns it as is);
// any other answer goes to genqlient.
type fastDoer struct {
	t        *transport
	decode   func([]byte) ([]machine.Machine, bool)
	machines []machine.Machine
	// answer is the answer read.
	answer []byte
}

func (d *fastDoer) Do(req *http.Request) (*http.Response, error) {
	resp, err := d.t.Do(req)
	if err != nil {
		return resp, err
	}
	a, ok := resp.Body.(*answer)
	if ok {
		d.answer = a.data
	}
	if ok {
		if ms, ok := d.decode(a.data); ok {
			d.machines = ms
			return nil, errDecoded
		}
	}
	return resp, nil
}

// Errors of the client, for errors.Is.
var (
	// ErrUnreachable: no answer came (connection refused, TLS, timeout,
	// an HTTP status other than 200).
	ErrUnreachable = errors.New("sabakan unreachable")
	// ErrQuery: an answer came and is not a whole searchMachines result:
	// GraphQL errors, bad JSON, a wrong type, a date that does not parse,
	// a serial twice, no list, too large, or a redirect elsewhere.
	ErrQuery = errors.New("sabakan query failed")
)

// transportError is what the HTTP exchange returned: no answer came.
// Everything else the query returns comes from an answer that was read.
type transportError struct{ err error }

func (e *transportError) Error() string { return e.err.Error() }
func (e *transportError) Unwrap() error { return e.err }

// httpStatusError is an HTTP status other than 200.
type httpStatusError struct {
	status int
	body   string
}

func (e *httpStatusError) Error() string {
	return fmt.Sprintf("HTTP %d: %s", e.status, e.body)
}

var errTooLarge = errors.New("response too large")

type classified struct {
	kind error
	msg  string
}

func (e *classified) Error() string { return e.msg }
func (e *classified) Unwrap() error { return e.kind }

// classify turns what the transport and genqlient return into one of the
// documented errors.
func (c *Client) classify(ctx context.Context, err error) error {
	prefix := "sabakan at " + c.Redacted() + ": "
	var hs *httpStatusError
	var gl gqlerror.List
	var he *graphql.HTTPError
	var tr *transportError
	switch {
	case errors.As(err, &hs):
		// An HTTP status other than 200 is not an answer to the query.
		return &classified{ErrUnreachable, prefix + hs.Error()}
	case errors.Is(err, errTooLarge):
		return &classified{ErrQuery, fmt.Sprintf("%sanswer larger than %s (--sabakan-max-bytes)", prefix, bytesText(c.opts.MaxBodyBytes))}
	case errors.Is(err, errRedirect):
		return &classified{ErrQuery, prefix + redirectText(err)}
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		return &classified{ErrUnreachable, fmt.Sprintf("%stimeout after %s", prefix, c.opts.Timeout)}
	case ctx.Err() != nil:
		return &classified{ErrUnreachable, prefix + ctx.Err().Error()}
	case errors.As(err, &gl):
		// The server's words, bounded: a few messages, each cut.
		const shown = 5
		msgs := make([]string, 0, min(len(gl), shown+1))
		for _, e := range gl[:min(len(gl), shown)] {
			msgs = append(msgs, clip.Value(e.Message))
		}
		if len(gl) > shown {
			msgs = append(msgs, fmt.Sprintf("and %d more", len(gl)-shown))
		}
		return &classified{ErrQuery, prefix + "GraphQL error: " + strings.Join(msgs, "; ")}
	case errors.As(err, &he):
		return &classified{ErrUnreachable, fmt.Sprintf("%sHTTP %d", prefix, he.StatusCode)}
	case errors.Is(err, errMalformed):
		return &classified{ErrQuery, prefix + clip.Value(err.Error())}
	case errors.As(err, &tr):
		return &classified{ErrUnreachable, prefix + Plain(tr.err)}
	}
	// The answer came and could not be decoded: bad JSON, a wrong type, a
	// date that does not parse, a body cut short.
	return &classified{ErrQuery, prefix + "malformed response: " + clip.Value(err.Error())}
}

// redirectText is a refused redirect without the URL the HTTP client adds
// around it (which may carry the target's query).
func redirectText(err error) string {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if strings.HasPrefix(e.Error(), errRedirect.Error()) {
			return e.Error()
		}
	}
	return errRedirect.Error()
}

// bytesText is n bytes for people: "128 MiB", or "1000 bytes".
func bytesText(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

var errMalformed = errors.New("malformed response")

// transport is the genqlient Doer: per-request timeout, retries with
// exponential backoff on connection errors and 5xx, a size limit on the
// body, and a JSON content type.
type transport struct {
	c    *Client
	http *http.Client
	// spare is the buffer of an answer that has been decoded, for the
	// next answer to be read into: a fresh buffer of megabytes costs its
	// clearing and the memory's first touch at every query.
	mu    sync.Mutex
	spare []byte
}

// takeSpare returns the spare buffer, which is then the caller's.
func (t *transport) takeSpare() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.spare
	t.spare = nil
	return b
}

// putSpare keeps b for the next answer. Nothing may use b afterwards:
// the answer has been decoded (the machines' strings are copies).
func (t *transport) putSpare(b []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if cap(b) > cap(t.spare) {
		t.spare = b[:0]
	}
}

func (t *transport) Do(req *http.Request) (*http.Response, error) {
	opts := t.c.opts
	wait := opts.Backoff
	for attempt := 0; ; attempt++ {
		resp, cancel, err := t.once(req)
		retry := false
		switch {
		case err != nil && errors.Is(err, errRedirect):
			return nil, err
		case err != nil:
			retry = req.Context().Err() == nil
			err = &transportError{err}
		case resp.StatusCode >= 500:
			err = statusError(resp)
			cancel()
			retry = true
		case resp.StatusCode != http.StatusOK:
			err = statusError(resp)
			cancel()
		default:
			if ct := resp.Header.Get("Content-Type"); !isJSON(ct) {
				_ = resp.Body.Close() // refused: the refusal is the answer
				cancel()
				return nil, fmt.Errorf("%w: content type %q, want application/json", errMalformed, clip.Value(ct))
			}
			if resp.ContentLength > opts.MaxBodyBytes {
				// Refused before a byte of it is read.
				_ = resp.Body.Close()
				cancel()
				return nil, errTooLarge
			}
			// The whole answer is read before a byte of it is decoded: one
			// over the limit is refused undecoded, and a decoded answer
			// costs its size once more, not the growth of a buffer.
			body, rerr := readBounded(resp.Body, opts.MaxBodyBytes, resp.ContentLength, t.takeSpare())
			_ = resp.Body.Close() // read: what it held, or rerr, is the answer
			cancel()
			if rerr != nil {
				return nil, rerr
			}
			resp.Body, resp.ContentLength = &answer{Reader: bytes.NewReader(body), data: body}, int64(len(body))
			return resp, nil
		}
		if !retry || attempt >= opts.Retries {
			return nil, err
		}
		select {
		case <-req.Context().Done():
			return nil, err
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// once sends one attempt with its own timeout; cancel releases it once the
// body has been read.
func (t *transport) once(req *http.Request) (*http.Response, context.CancelFunc, error) {
	ctx, cancel := context.WithTimeout(req.Context(), t.c.opts.Timeout)
	r := req.Clone(ctx)
	if req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			cancel()
			return nil, nil, err
		}
		r.Body = body
	}
	resp, err := t.http.Do(r)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	return resp, cancel, nil
}

func statusError(resp *http.Response) error {
	head, _ := io.ReadAll(io.LimitReader(resp.Body, 200)) // a clue for the message, if any
	_ = resp.Body.Close()
	return &httpStatusError{status: resp.StatusCode, body: strings.TrimSpace(string(head))}
}

func isJSON(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == "application/json" || mt == "application/graphql-response+json")
}

// chunkSize is the unit in which an answer of unknown size is read:
// memory grows with the answer, never to twice its size.
const chunkSize = 1 << 20

// answer is an answer read whole.
type answer struct {
	*bytes.Reader
	data []byte
}

func (a *answer) Close() error { return nil }

// readBounded reads r whole, failing with errTooLarge as soon as it goes
// past limit bytes. An answer of a known size (size >= 0, at most limit)
// is read into one buffer of that size; one of unknown size in chunks,
// then into one buffer of its size (the decoder reads it in one piece).
// That buffer is spare when it is large enough.
func readBounded(r io.Reader, limit, size int64, spare []byte) ([]byte, error) {
	var bufs [][]byte
	total := int64(0)
	next := int64(chunkSize)
	if size >= 0 && size <= limit {
		next = size
	}
	for first := true; ; first = false {
		var buf []byte
		if first && size >= 0 && int64(cap(spare)) >= next {
			buf, spare = spare[:next], nil
		} else {
			buf = make([]byte, next)
		}
		n, err := io.ReadFull(r, buf)
		if n > 0 {
			bufs = append(bufs, buf[:n])
			total += int64(n)
		}
		if total > limit {
			return nil, errTooLarge
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		next = chunkSize
		if first && size >= 0 {
			// All that was announced: a byte more is not expected.
			next = 1
		}
	}
	switch len(bufs) {
	case 0:
		return []byte{}, nil
	case 1:
		return bufs[0], nil
	}
	data := spare[:0]
	if int64(cap(data)) < total {
		data = make([]byte, 0, total)
	}
	for i, b := range bufs {
		data = append(data, b...)
		bufs[i] = nil
	}
	return data, nil
}
