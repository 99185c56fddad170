package server

import (
	"net/http"
	"sync"

	graphql "github.com/graph-gophers/graphql-go"
	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/ckegen/ckegen/internal/version"
	"github.com/ckegen/ckegen/sabakan"
)

// Server serves a Store over sabakan's HTTP API.
type Server struct {
	Store *Store
	// schema executes requests; gqlSchema checks them first as sabakan
	// does.
	schema    *graphql.Schema
	gqlSchema *ast.Schema
	// noPlans executes every request with graph-gophers (tests compare
	// both ways).
	noPlans bool
	// spare is a response buffer of a plan, kept for the next one.
	spareMu sync.Mutex
	spare   []byte
}

// New returns a server for store. The schema is the project's own
// (sabakan/schema.graphql), the one the client is generated from.
func New(store *Store) (*Server, error) {
	schema, err := graphql.ParseSchema(sabakan.Schema, &rootResolver{store: store})
	if err != nil {
		return nil, err
	}
	gs, err := gqlparser.LoadSchema(&ast.Source{Name: "schema.graphql", Input: sabakan.Schema})
	if err != nil {
		return nil, err
	}
	return &Server{Store: store, schema: schema, gqlSchema: gs}, nil
}

// maxRequestBytes bounds request bodies.
const maxRequestBytes = 16 << 20

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
