package server

import (
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	graphql "github.com/graph-gophers/graphql-go"

	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/sabakan"
)

// Server serves a Store over sabakan's HTTP API.
type Server struct {
	Store  *Store
	schema *graphql.Schema
}

// New returns a server for store. The schema is the project's own
// (sabakan/schema.graphql), the one the client is generated from.
func New(store *Store) (*Server, error) {
	schema, err := graphql.ParseSchema(sabakan.Schema, &rootResolver{store: store})
	if err != nil {
		return nil, err
	}
	return &Server{Store: store, schema: schema}, nil
}

// maxRequestBytes bounds request bodies.
const maxRequestBytes = 16 << 20

// Handler returns the HTTP handler: /graphql and /api/v1/.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /graphql", s.serveGraphQL)
	mux.HandleFunc("POST /api/v1/machines", s.postMachines)
	mux.HandleFunc("DELETE /api/v1/machines/{serial}", s.deleteMachine)
	mux.HandleFunc("PUT /api/v1/state/{serial}", s.putState)
	mux.HandleFunc("GET /api/v1/state/{serial}", s.getState)
	mux.HandleFunc("PUT /api/v1/retire-date/{serial}", s.putRetireDate)
	mux.HandleFunc("PUT /api/v1/labels/{serial}/{name}", s.putLabel)
	return http.MaxBytesHandler(mux, maxRequestBytes)
}

type graphQLRequest struct {
	Query         string         `json:"query"`
	OperationName string         `json:"operationName"`
	Variables     map[string]any `json:"variables"`
}

type graphQLErrors struct {
	Errors []any `json:"errors"`
}

// serveGraphQL answers a request error (a query that does not parse or
// validate against the schema, with its variables) with HTTP 422 as
// sabakan's server does, and resolver errors with HTTP 200 and an errors
// array.
func (s *Server) serveGraphQL(w http.ResponseWriter, r *http.Request) {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		writeJSON(w, http.StatusUnsupportedMediaType, graphQLErrors{[]any{map[string]string{"message": "Content-Type must be application/json"}}})
		return
	}
	var req graphQLRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, graphQLErrors{[]any{map[string]string{"message": "json body could not be decoded: " + err.Error()}}})
		return
	}
	if errs := s.schema.ValidateWithVariables(req.Query, req.Variables); len(errs) > 0 {
		list := make([]any, len(errs))
		for i, e := range errs {
			list[i] = e
		}
		writeJSON(w, http.StatusUnprocessableEntity, graphQLErrors{list})
		return
	}
	resp := s.schema.Exec(r.Context(), req.Query, req.OperationName, req.Variables)
	writeJSON(w, http.StatusOK, resp)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError maps store errors to HTTP statuses, with a JSON body as
// sabakan's REST API.
func writeError(w http.ResponseWriter, err error) {
	status := http.StatusInternalServerError
	switch {
	case errors.Is(err, ErrNotFound):
		status = http.StatusNotFound
	case errors.Is(err, ErrConflict):
		status = http.StatusConflict
	case errors.Is(err, ErrBadRequest):
		status = http.StatusBadRequest
	}
	writeJSON(w, status, map[string]any{"status": status, "error": err.Error()})
}

func readBody(w http.ResponseWriter, r *http.Request) (string, bool) {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, errors.Join(ErrBadRequest, err))
		return "", false
	}
	return strings.TrimSpace(string(data)), true
}

func (s *Server) postMachines(w http.ResponseWriter, r *http.Request) {
	var rs []Registration
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rs); err != nil {
		writeError(w, errors.Join(ErrBadRequest, err))
		return
	}
	if err := s.Store.Register(rs); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{})
}

func (s *Server) deleteMachine(w http.ResponseWriter, r *http.Request) {
	if err := s.Store.Delete(r.PathValue("serial")); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{})
}

func (s *Server) putState(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	st, err := machine.ParseState(body)
	if err != nil || body != strings.ToLower(body) {
		writeError(w, errors.Join(ErrBadRequest, errors.New("body must be a lower-case machine state such as healthy")))
		return
	}
	if _, err := s.Store.SetState(r.PathValue("serial"), st); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{})
}

func (s *Server) getState(w http.ResponseWriter, r *http.Request) {
	m, err := s.Store.Get(r.PathValue("serial"))
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	_, _ = io.WriteString(w, strings.ToLower(string(m.Status.State)))
}

func (s *Server) putRetireDate(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	t, err := time.Parse(time.RFC3339, strings.Trim(body, `"`))
	if err != nil {
		writeError(w, errors.Join(ErrBadRequest, errors.New("body must be an RFC3339 date")))
		return
	}
	if err := s.Store.SetRetireDate(r.PathValue("serial"), t); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{})
}

func (s *Server) putLabel(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	if err := s.Store.SetLabel(r.PathValue("serial"), r.PathValue("name"), body); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{})
}
