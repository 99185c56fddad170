package fakesabakan

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ckegen/ckegen/internal/strictjson"
	"github.com/ckegen/ckegen/machine"
)

// requestIDHeader carries a request's ID, as in sabakan (cybozu-go/well).
const requestIDHeader = "X-Cybozu-Request-ID"

// requestID is the caller's request ID or a new random one.
func requestID(r *http.Request) string {
	if id := r.Header.Get(requestIDHeader); id != "" {
		return id
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// restError is sabakan's REST error body.
type restError struct {
	Error     string `json:"error"`
	RequestID string `json:"request_id"`
	Status    int    `json:"status"`
}

// writeError answers err with sabakan's status and error body: 400
// "invalid request: ...", 404 "requested resource is not found: ...", 409
// "conflicted: ...", and 500 "...: Internal Server Error" for what
// sabakan's model refuses.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	var status int
	var msg string
	switch {
	case errors.Is(err, ErrBadRequest):
		status, msg = http.StatusBadRequest, "invalid request: "+err.Error()
	case errors.Is(err, ErrNotFound):
		status, msg = http.StatusNotFound, "requested resource is not found: "+err.Error()
	case errors.Is(err, ErrConflict):
		status, msg = http.StatusConflict, "conflicted: "+err.Error()
	case errors.Is(err, errMethod):
		status, msg = http.StatusMethodNotAllowed, err.Error()
	default:
		status, msg = http.StatusInternalServerError, err.Error()+": Internal Server Error"
	}
	writeJSON(w, status, restError{Error: msg, RequestID: requestID(r), Status: status})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

var errMethod = errors.New("method not allowed")

// methods routes one path by method; another method is 405 with an Allow
// header and sabakan's error body.
type methods map[string]http.HandlerFunc

func (ms methods) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h, ok := ms[r.Method]; ok {
		h(w, r)
		return
	}
	allow := make([]string, 0, len(ms))
	for m := range ms {
		allow = append(allow, m)
	}
	slices.Sort(allow)
	w.Header().Set("Allow", strings.Join(allow, ", "))
	writeError(w, r, fmt.Errorf("%w: %s %s (allowed: %s)", errMethod, r.Method, r.URL.Path, strings.Join(allow, ", ")))
}

// maxSmallBody bounds the bodies of state, label and retire date requests.
const maxSmallBody = 1024

func readSmallBody(w http.ResponseWriter, r *http.Request) (string, bool) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxSmallBody))
	if err != nil {
		writeError(w, r, fail(ErrBadRequest, "body: %v (at most %d bytes)", err, maxSmallBody))
		return "", false
	}
	return string(data), true
}

// decodeStrict decodes one JSON value with the project's strict rules
// (internal/strictjson): an unknown field, a name in another case or given
// twice, and trailing data are refused, and the message says what and
// where (line, column and path).
func decodeStrict(body io.Reader, v any) error {
	data, err := io.ReadAll(body)
	if err != nil {
		return err
	}
	return strictjson.Unmarshal(data, v)
}

func (s *Server) putIPAM(w http.ResponseWriter, r *http.Request) {
	c, err := ReadIPAMConfig(r.Body)
	if err != nil {
		writeError(w, r, fail(ErrBadRequest, "%v", err))
		return
	}
	if err := s.Store.SetIPAM(c); err != nil {
		writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (s *Server) getIPAM(w http.ResponseWriter, r *http.Request) {
	c, ok := s.Store.IPAM()
	if !ok {
		writeError(w, r, fail(ErrNotFound, "no IPAM configuration is set (PUT /api/v1/config/ipam)"))
		return
	}
	writeJSON(w, http.StatusOK, c)
}

func (s *Server) postMachines(w http.ResponseWriter, r *http.Request) {
	var rs []MachineSpec
	if err := decodeStrict(r.Body, &rs); err != nil {
		writeError(w, r, fail(ErrBadRequest, "machines: %v", err))
		return
	}
	if err := s.Store.Register(rs); err != nil {
		writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusCreated)
}

func (s *Server) deleteMachine(w http.ResponseWriter, r *http.Request) {
	if err := s.Store.Delete(r.PathValue("serial")); err != nil {
		writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// putState takes the exact lower-case state name: "healthy", not
// "HEALTHY" nor "healthy\n".
func (s *Server) putState(w http.ResponseWriter, r *http.Request) {
	body, ok := readSmallBody(w, r)
	if !ok {
		return
	}
	st, err := machine.ParseState(body)
	if err != nil || body != lower(st) {
		writeError(w, r, fail(ErrBadRequest, "invalid state: %q (want one of uninitialized, healthy, unhealthy, unreachable, updating, retiring, retired, with nothing around it)", body))
		return
	}
	if _, err := s.Store.SetState(r.PathValue("serial"), st); err != nil {
		writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (s *Server) getState(w http.ResponseWriter, r *http.Request) {
	m, err := s.Store.Get(r.PathValue("serial"))
	if err != nil {
		writeError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	_, _ = io.WriteString(w, lower(m.Status.State))
}

// putRetireDate takes a bare RFC 3339 time (spaces around it are ignored,
// quotes are not) and keeps its offset.
func (s *Server) putRetireDate(w http.ResponseWriter, r *http.Request) {
	body, ok := readSmallBody(w, r)
	if !ok {
		return
	}
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(body))
	if err != nil {
		writeError(w, r, fail(ErrBadRequest, "retire date %q: want an RFC 3339 time such as 2031-08-01T05:00:00+09:00, without quotes", body))
		return
	}
	if err := s.Store.SetRetireDate(r.PathValue("serial"), t); err != nil {
		writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// putLabel takes the label's value as the whole body.
func (s *Server) putLabel(w http.ResponseWriter, r *http.Request) {
	if why := validName(r.PathValue("name")); why != "" {
		writeError(w, r, fail(ErrBadRequest, "invalid label name %q: %s", r.PathValue("name"), why))
		return
	}
	body, ok := readSmallBody(w, r)
	if !ok {
		return
	}
	if err := s.Store.SetLabel(r.PathValue("serial"), r.PathValue("name"), body); err != nil {
		writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (s *Server) deleteLabel(w http.ResponseWriter, r *http.Request) {
	if err := s.Store.DeleteLabel(r.PathValue("serial"), r.PathValue("name")); err != nil {
		writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// restMachine is a machine as sabakan's REST API shows it.
type restMachine struct {
	Spec   MachineSpec `json:"spec"`
	Status restStatus  `json:"status"`
	Info   MachineInfo `json:"info"`
}

type restStatus struct {
	Timestamp time.Time `json:"timestamp"`
	Duration  float64   `json:"duration"`
	State     string    `json:"state"`
}

func toREST(m machine.Machine, info MachineInfo) restMachine {
	var labels map[string]string
	if m.Spec.Labels != nil {
		labels = make(map[string]string, len(m.Spec.Labels))
		for _, l := range m.Spec.Labels {
			labels[l.Name] = l.Value
		}
	}
	return restMachine{
		Spec: MachineSpec{
			Serial: m.Spec.Serial, Labels: labels, Rack: m.Spec.Rack, IndexInRack: m.Spec.IndexInRack,
			Role: m.Spec.Role, IPv4: m.Spec.IPv4, RegisterDate: m.Spec.RegisterDate, RetireDate: m.Spec.RetireDate,
			BMC: BMCSpec{IPv4: m.Spec.BMC.IPv4, Type: m.Spec.BMC.BMCType},
		},
		Status: restStatus{Timestamp: *m.Status.Timestamp, Duration: m.Status.Duration, State: lower(m.Status.State)},
		Info:   info,
	}
}

// restField is one condition of GET /api/v1/machines: whether a machine
// has one of the comma-separated values (all of them for labels).
type restField func(m *machine.Machine, values []string) (bool, error)

func anyOf(values []string, f func(string) bool) bool {
	return slices.ContainsFunc(values, f)
}

var restFields = map[string]restField{
	"serial": func(m *machine.Machine, vs []string) (bool, error) {
		return slices.Contains(vs, m.Spec.Serial), nil
	},
	"rack": func(m *machine.Machine, vs []string) (bool, error) {
		return slices.Contains(vs, strconv.Itoa(m.Spec.Rack)), nil
	},
	"role": func(m *machine.Machine, vs []string) (bool, error) {
		return slices.Contains(vs, m.Spec.Role), nil
	},
	"ipv4": func(m *machine.Machine, vs []string) (bool, error) {
		return anyOf(vs, func(v string) bool { return slices.Contains(m.Spec.IPv4, v) }), nil
	},
	"ipv6": func(m *machine.Machine, vs []string) (bool, error) {
		return false, nil // no machine has IPv6 addresses here
	},
	"bmc-type": func(m *machine.Machine, vs []string) (bool, error) {
		return slices.Contains(vs, m.Spec.BMC.BMCType), nil
	},
	"state": func(m *machine.Machine, vs []string) (bool, error) {
		return slices.Contains(vs, lower(m.Status.State)), nil
	},
	"labels": func(m *machine.Machine, vs []string) (bool, error) {
		for _, v := range vs {
			name, value, ok := strings.Cut(v, "=")
			if !ok {
				return false, fail(ErrBadRequest, "labels: %q: want NAME=VALUE", v)
			}
			if !hasLabel(m, machine.Label{Name: name, Value: value}) {
				return false, nil
			}
		}
		return true, nil
	},
}

// restCondition is one query parameter, possibly negated with "without-".
type restCondition struct {
	field  restField
	values []string
	negate bool
}

// parseRESTQuery reads GET /api/v1/machines's query: serial, labels, rack,
// role, ipv4, ipv6, bmc-type and state, each also with "without-"; the
// values are comma-separated. An empty value is no condition.
func parseRESTQuery(q url.Values) ([]restCondition, error) {
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out []restCondition
	for _, k := range keys {
		name, negate := strings.CutPrefix(k, "without-")
		f, ok := restFields[name]
		if !ok {
			return nil, fail(ErrBadRequest, "unknown query parameter %q (want serial, labels, rack, role, ipv4, ipv6, bmc-type, state, each also with without-)", k)
		}
		if !negate && q.Has("without-"+name) {
			return nil, fail(ErrBadRequest, "%s and without-%s are both given", name, name)
		}
		if v := q.Get(k); v != "" {
			out = append(out, restCondition{field: f, values: strings.Split(v, ","), negate: negate})
		}
	}
	return out, nil
}

func (s *Server) getMachines(w http.ResponseWriter, r *http.Request) {
	conds, err := parseRESTQuery(r.URL.Query())
	if err != nil {
		writeError(w, r, err)
		return
	}
	ms, err := s.Store.list(func(m *machine.Machine) (bool, error) {
		for _, c := range conds {
			ok, err := c.field(m, c.values)
			if err != nil {
				return false, err
			}
			if ok == c.negate {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		writeError(w, r, err)
		return
	}
	if len(ms) == 0 {
		writeError(w, r, fail(ErrNotFound, "no machine matches %q", r.URL.RawQuery))
		return
	}
	writeJSON(w, http.StatusOK, ms)
}

// list returns the machines keep accepts, sorted by serial, as sabakan's
// REST API shows them.
func (s *Store) list(keep func(m *machine.Machine) (bool, error)) ([]restMachine, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	now := s.now()
	serials := make([]string, 0, len(s.machines))
	for serial, e := range s.machines {
		ok, err := keep(&e.m)
		if err != nil {
			return nil, err
		}
		if ok {
			serials = append(serials, serial)
		}
	}
	slices.Sort(serials)
	out := make([]restMachine, len(serials))
	for i, serial := range serials {
		e := s.machines[serial]
		out[i] = toREST(s.view(e, now), e.info)
	}
	return out, nil
}
