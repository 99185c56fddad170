package server

import (
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/parser"
	"github.com/vektah/gqlparser/v2/validator"
)

// Error codes of request errors, as sabakan's GraphQL server (gqlgen) sets
// them in extensions.code.
const (
	codeParseFailed      = "GRAPHQL_PARSE_FAILED"
	codeValidationFailed = "GRAPHQL_VALIDATION_FAILED"
)

// graphQLParams is a GraphQL request, from a POST body or a GET query.
type graphQLParams struct {
	Query         string         `json:"query"`
	OperationName string         `json:"operationName"`
	Variables     map[string]any `json:"variables"`
	Extensions    map[string]any `json:"extensions"`
}

// graphQLResponse is a response body: errors first, then data (null on a
// request error), as sabakan writes it.
type graphQLResponse struct {
	Errors any             `json:"errors,omitempty"`
	Data   json.RawMessage `json:"data"`
}

var null = json.RawMessage("null")

// decodeJSON decodes one JSON value with numbers kept as json.Number (so
// that an Int is never rounded through a float), refusing trailing data.
func decodeJSON(r io.Reader, v any) error {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

// writeTransportError answers a request that is not GraphQL over HTTP as
// sabakan understands it.
func writeTransportError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, graphQLResponse{Errors: gqlerror.List{gqlerror.Errorf("%s", msg)}, Data: null})
}

// serveGraphQL serves /graphql as sabakan does: POST with Content-Type
// application/json (any other type is HTTP 400 "transport not supported"),
// GET with query, operationName and variables in the URL (queries only),
// and OPTIONS.
func (s *Server) serveGraphQL(w http.ResponseWriter, r *http.Request) {
	var p graphQLParams
	switch r.Method {
	case http.MethodOptions:
		w.Header().Set("Allow", "OPTIONS, GET, POST")
		w.WriteHeader(http.StatusOK)
		return
	case http.MethodGet:
		q := r.URL.Query()
		p.Query, p.OperationName = q.Get("query"), q.Get("operationName")
		if v := q.Get("variables"); v != "" {
			if err := decodeJSON(strings.NewReader(v), &p.Variables); err != nil {
				writeTransportError(w, http.StatusBadRequest, "variables could not be decoded: "+err.Error())
				return
			}
		}
		if v := q.Get("extensions"); v != "" {
			if err := decodeJSON(strings.NewReader(v), &p.Extensions); err != nil {
				writeTransportError(w, http.StatusBadRequest, "extensions could not be decoded: "+err.Error())
				return
			}
		}
	case http.MethodPost:
		if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
			writeTransportError(w, http.StatusBadRequest, "transport not supported")
			return
		}
		if err := decodeJSON(r.Body, &p); err != nil {
			writeTransportError(w, http.StatusBadRequest, "json request body could not be decoded: "+err.Error())
			return
		}
	default:
		writeTransportError(w, http.StatusBadRequest, "transport not supported")
		return
	}
	s.execGraphQL(w, r, &p)
}

// requestErrors answers errors of the request itself (it does not parse,
// validate, name an operation it has, or its variables do not fit their
// types): HTTP 422, each error with its code, data null.
func requestErrors(w http.ResponseWriter, errs gqlerror.List, code string) {
	for _, e := range errs {
		if e.Extensions == nil {
			e.Extensions = map[string]any{}
		}
		e.Extensions["code"] = code
	}
	writeJSON(w, http.StatusUnprocessableEntity, graphQLResponse{Errors: errs, Data: null})
}

// execGraphQL checks the request with gqlparser, as sabakan does (so that
// its errors and its coercion of variables are sabakan's: enum values in any
// case, 64-bit Ints), then executes it with the variables in the form the
// executor takes.
func (s *Server) execGraphQL(w http.ResponseWriter, r *http.Request, p *graphQLParams) {
	doc, err := parser.ParseQuery(&ast.Source{Input: p.Query})
	if err != nil {
		var ge *gqlerror.Error
		if !errors.As(err, &ge) {
			ge = gqlerror.Wrap(err)
		}
		requestErrors(w, gqlerror.List{ge}, codeParseFailed)
		return
	}
	if errs := validator.Validate(s.gqlSchema, doc); len(errs) > 0 {
		requestErrors(w, errs, codeValidationFailed)
		return
	}
	op := doc.Operations.ForName(p.OperationName)
	if op == nil {
		requestErrors(w, gqlerror.List{gqlerror.Errorf("operation %s not found", p.OperationName)}, codeValidationFailed)
		return
	}
	if r.Method == http.MethodGet && op.Operation != ast.Query {
		writeTransportError(w, http.StatusNotAcceptable, "GET requests only allow query operations")
		return
	}
	vars, err := validator.VariableValues(s.gqlSchema, op, p.Variables)
	if err != nil {
		var ge *gqlerror.Error
		if !errors.As(err, &ge) {
			ge = gqlerror.Wrap(err)
		}
		requestErrors(w, gqlerror.List{ge}, codeValidationFailed)
		return
	}
	canonicalVars(s.gqlSchema, op, vars)
	if s.execPlan(w, doc, op, p.Query, vars) {
		return
	}
	resp := s.schema.Exec(r.Context(), p.Query, p.OperationName, vars)
	if len(resp.Data) == 0 && len(resp.Errors) > 0 {
		// The executor refused what gqlparser accepted.
		errs := make(gqlerror.List, len(resp.Errors))
		for i, e := range resp.Errors {
			errs[i] = &gqlerror.Error{Message: e.Message}
			for _, l := range e.Locations {
				errs[i].Locations = append(errs[i].Locations, gqlerror.Location{Line: l.Line, Column: l.Column})
			}
		}
		requestErrors(w, errs, codeValidationFailed)
		return
	}
	out := graphQLResponse{Data: resp.Data}
	if len(resp.Errors) > 0 {
		errs := make([]resolverErrorJSON, len(resp.Errors))
		for i, e := range resp.Errors {
			errs[i] = resolverErrorJSON{Message: e.Message, Path: e.Path, Extensions: e.Extensions}
		}
		out.Errors = errs
	}
	writeJSON(w, http.StatusOK, out)
}

// resolverErrorJSON is a resolver's error as sabakan reports it.
type resolverErrorJSON struct {
	Message    string         `json:"message"`
	Path       []any          `json:"path,omitempty"`
	Extensions map[string]any `json:"extensions,omitempty"`
}

// canonicalVars puts the variables of op in canonical form, in place.
func canonicalVars(schema *ast.Schema, op *ast.OperationDefinition, vars map[string]any) {
	for _, v := range op.VariableDefinitions {
		if val, ok := vars[v.Variable]; ok {
			vars[v.Variable] = canonical(schema, v.Type, val)
		}
	}
}

// canonical turns a variable value that gqlparser accepted into what the
// executor takes: an enum value in its schema case, Ints as int64 and IDs
// as strings.
func canonical(schema *ast.Schema, t *ast.Type, v any) any {
	if v == nil {
		return nil
	}
	if t.Elem != nil {
		// gqlparser leaves a list as []any, or makes a single value a
		// typed slice of one.
		list := reflect.ValueOf(v)
		if list.Kind() != reflect.Slice {
			return []any{canonical(schema, t.Elem, v)}
		}
		out := make([]any, list.Len())
		for i := range out {
			out[i] = canonical(schema, t.Elem, list.Index(i).Interface())
		}
		return out
	}
	def := schema.Types[t.NamedType]
	if def == nil {
		return v
	}
	switch def.Kind {
	case ast.Enum:
		if s, ok := v.(string); ok {
			for _, ev := range def.EnumValues {
				if strings.EqualFold(s, ev.Name) {
					return ev.Name
				}
			}
		}
	case ast.InputObject:
		if m, ok := v.(map[string]any); ok {
			out := make(map[string]any, len(m))
			for k, fv := range m {
				if f := def.Fields.ForName(k); f != nil {
					out[k] = canonical(schema, f.Type, fv)
				}
			}
			return out
		}
	case ast.Scalar:
		switch t.NamedType {
		case "Int":
			switch x := v.(type) {
			case json.Number:
				if n, err := x.Int64(); err == nil {
					return n
				}
			case string:
				if n, err := strconv.ParseInt(x, 10, 64); err == nil {
					return n
				}
			}
		case "ID":
			if x, ok := v.(json.Number); ok {
				return x.String()
			}
			if x, ok := v.(int64); ok {
				return strconv.FormatInt(x, 10)
			}
		}
	}
	return v
}

// execPlan answers the request from a plan (plan.go) when there is one and
// graph-gophers would accept the request too, and reports whether it did.
func (s *Server) execPlan(w http.ResponseWriter, doc *ast.QueryDocument, op *ast.OperationDefinition, query string, vars map[string]any) bool {
	if s.noPlans {
		return false
	}
	body, ok := s.planBody(s.takeBuffer(), doc, op, query, vars)
	defer s.keepBuffer(body)
	if !ok {
		return false
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
	return true
}

// planBody appends the response body of the request to b, from a plan, or
// reports false when the request has no plan.
func (s *Server) planBody(b []byte, doc *ast.QueryDocument, op *ast.OperationDefinition, query string, vars map[string]any) ([]byte, bool) {
	pl, why := compilePlan(s.gqlSchema, doc, op, vars)
	if why != "" {
		return b, false
	}
	// What graph-gophers' own parser and validation refuse, it answers
	// with HTTP 422 (execGraphQL): leave that to it.
	if errs := s.schema.ValidateWithVariables(query, vars); len(errs) > 0 {
		return b, false
	}
	return s.Store.render(b, pl)
}

// maxSpareBuffer is the largest response buffer kept for the next request.
const maxSpareBuffer = 64 << 20

// takeBuffer returns the spare response buffer, empty, or nil when
// another request has it. A 20,000-machine answer is about 7 MB: growing a
// new buffer to that size allocates and copies twice as much, and a
// sync.Pool loses it at every garbage collection.
func (s *Server) takeBuffer() []byte {
	s.spareMu.Lock()
	defer s.spareMu.Unlock()
	b := s.spare
	s.spare = nil
	return b[:0]
}

// keepBuffer keeps b as the spare buffer if it is the largest one offered.
func (s *Server) keepBuffer(b []byte) {
	if cap(b) > maxSpareBuffer {
		return
	}
	s.spareMu.Lock()
	defer s.spareMu.Unlock()
	if cap(b) > cap(s.spare) {
		s.spare = b
	}
}
