package fakesabakan

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/ckegen/ckegen/internal/strictjson"
)

// Error codes of request errors, as sabakan's GraphQL server (gqlgen) sets
// them in extensions.code.
const (
	codeParseFailed      = errcode.ParseFailed
	codeValidationFailed = errcode.ValidationFailed
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
// Its errors are strictjson's: where, and in JSON's words, not Go's.
func decodeJSON(r io.Reader, v any) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		// Decoded again, into a value of the same type, for the words.
		if serr := strictjson.UnmarshalIgnoringUnknown(data, reflect.New(reflect.TypeOf(v).Elem()).Interface()); serr != nil {
			return serr
		}
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		if serr := strictjson.Check(data); serr != nil {
			return serr
		}
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
// validate, name an operation it has, its variables do not fit their
// types, or it is over a limit): HTTP 422, each error with its code
// (gqlgen sets it), data null.
func requestErrors(w http.ResponseWriter, errs gqlerror.List) {
	writeJSON(w, http.StatusUnprocessableEntity, graphQLResponse{Errors: errs, Data: null})
}

// execGraphQL runs the request on gqlgen's executor: it parses and
// validates the query (or takes it from the cache), coerces the variables
// as sabakan does (enum values in any case, 64-bit Ints), checks the limits
// and executes the operation.
func (s *Server) execGraphQL(w http.ResponseWriter, r *http.Request, p *graphQLParams) {
	if len(p.Query) > maxQueryBytes {
		err := gqlerror.Errorf("query is %d bytes, over the limit of %d", len(p.Query), maxQueryBytes)
		errcode.Set(err, errcode.ParseFailed)
		requestErrors(w, gqlerror.List{err})
		return
	}
	ctx := graphql.StartOperationTrace(r.Context())
	oc, errs := s.exec.CreateOperationContext(ctx, &graphql.RawParams{
		Query: p.Query, OperationName: p.OperationName, Variables: p.Variables, Extensions: p.Extensions, Headers: r.Header,
	})
	if r.Method == http.MethodGet && oc != nil && oc.Operation != nil && oc.Operation.Operation != ast.Query {
		writeTransportError(w, http.StatusNotAcceptable, "GET requests only allow query operations")
		return
	}
	if len(errs) > 0 {
		requestErrors(w, errs)
		return
	}
	responses, ctx := s.exec.DispatchOperation(ctx, oc)
	resp := responses(ctx)
	if resp == nil {
		writeTransportError(w, http.StatusInternalServerError, "the operation gave no response")
		return
	}
	writeResponse(w, resp)
}

// writeResponse writes an executed operation's response: HTTP 200, the
// errors of its fields first (sorted by path, so that the errors of root
// fields resolved at once come in one order), then data, which the
// generated code has written as JSON already. The answer is whole before
// it is written: its Content-Length is announced, so that a client can
// read it into one buffer of its size.
func writeResponse(w http.ResponseWriter, resp *graphql.Response) {
	var head []byte
	if len(resp.Errors) > 0 {
		errs := slices.Clone(resp.Errors)
		slices.SortStableFunc(errs, func(a, b *gqlerror.Error) int { return comparePaths(a.Path, b.Path) })
		body, err := json.Marshal(errs)
		if err != nil {
			body, _ = json.Marshal(gqlerror.List{gqlerror.Errorf("errors could not be written: %v", err)})
		}
		head = append(append([]byte(`{"errors":`), body...), ',')
	} else {
		head = []byte(`{`)
	}
	data := []byte(resp.Data)
	if len(data) == 0 {
		data = null
	}
	const dataKey, end = `"data":`, "}\n"
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(head)+len(dataKey)+len(data)+len(end)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(head, dataKey...))
	_, _ = w.Write(data)
	_, _ = w.Write([]byte(end))
}

// comparePaths orders paths element by element: names by their bytes,
// indices by their value, a name before an index, a prefix first.
func comparePaths(a, b ast.Path) int {
	for i := range min(len(a), len(b)) {
		an, aIndex := a[i].(ast.PathIndex)
		bn, bIndex := b[i].(ast.PathIndex)
		var c int
		switch {
		case aIndex && bIndex:
			c = cmp.Compare(an, bn)
		case aIndex != bIndex:
			c = cmp.Compare(boolInt(aIndex), boolInt(bIndex))
		default:
			c = strings.Compare(fmt.Sprint(a[i]), fmt.Sprint(b[i]))
		}
		if c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a), len(b))
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// presentError is how an error of a field reaches the client: its
// message, its path and its extensions, as sabakan reports it (no
// locations). Errors of the request keep their locations.
func presentError(ctx context.Context, err error) *gqlerror.Error {
	ge := graphql.DefaultErrorPresenter(ctx, err)
	if ge == nil || len(ge.Path) == 0 {
		return ge
	}
	return &gqlerror.Error{Err: ge.Err, Message: ge.Message, Path: ge.Path, Extensions: ge.Extensions}
}
