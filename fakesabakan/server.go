package fakesabakan

import (
	"net/http"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/executor"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/ckegen/ckegen/fakesabakan/internal/graph"
	"github.com/ckegen/ckegen/internal/version"
)

// Server serves a Store over sabakan's HTTP API.
type Server struct {
	Store *Store
	// exec is gqlgen's executor of the generated schema.
	exec *executor.Executor
}

// queryCacheSize is how many parsed and validated queries are kept: the
// daemon sends one query again and again.
const queryCacheSize = 100

// New returns a server for store. The schema is the project's own
// (sabakan/schema.graphql), the one the client is generated from; the
// machines of its answers are written by marshal.go.
func New(store *Store) (*Server, error) {
	return newServer(store, writeMachines), nil
}

// newServer is a server for store whose executor runs every field through
// fields: writeMachines, as New's does, or nil for gqlgen's generated code
// alone, the answers marshal.go's must equal byte for byte.
func newServer(store *Store, fields graphql.FieldMiddleware) *Server {
	s := &Server{Store: store, exec: executor.New(graph.NewExecutableSchema(graph.Config{Resolvers: &resolver{store: store}}))}
	s.exec.SetQueryCache(lru.New[*ast.QueryDocument](queryCacheSize))
	s.exec.SetErrorPresenter(presentError)
	s.exec.SetParserTokenLimit(maxQueryTokens)
	s.exec.SetDefaultRulesFn(validationRules)
	s.exec.Use(extension.Introspection{})
	s.exec.Use(extension.FixedComplexityLimit(maxComplexity))
	if fields != nil {
		s.exec.AroundFields(fields)
	}
	return s
}

// Handler returns the HTTP handler: /graphql, sabakan's REST endpoints
// under /api/v1/, /version and /health.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/graphql", s.serveGraphQL)
	mux.Handle("/api/v1/config/ipam", methods{http.MethodGet: s.getIPAM, http.MethodPut: s.putIPAM})
	mux.Handle("/api/v1/machines", methods{http.MethodGet: s.getMachines, http.MethodPost: s.postMachines})
	mux.Handle("/api/v1/machines/{serial}", methods{http.MethodDelete: s.deleteMachine})
	mux.Handle("/api/v1/state/{serial}", methods{http.MethodGet: s.getState, http.MethodPut: s.putState})
	mux.Handle("/api/v1/retire-date/{serial}", methods{http.MethodPut: s.putRetireDate})
	mux.Handle("/api/v1/labels/{serial}/{name}", methods{http.MethodPut: s.putLabel, http.MethodDelete: s.deleteLabel})
	mux.Handle("/version", methods{http.MethodGet: func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"version": version.String()})
	}})
	mux.Handle("/health", methods{http.MethodGet: func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"health": "healthy"})
	}})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, fail(ErrNotFound, "%s", r.URL.Path))
	})
	return http.MaxBytesHandler(mux, maxRequestBytes)
}
