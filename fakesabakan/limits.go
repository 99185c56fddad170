package fakesabakan

import (
	"net/http"
	"time"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/validator/core"
	"github.com/vektah/gqlparser/v2/validator/rules"
)

// The compatible server's limits. A request over one is refused before it
// costs more than a few milliseconds: the quadratic checks of GraphQL
// validation (fields of one response key are compared pairwise) are bounded
// by the token limit, and the fragments' expansion by the selection limit,
// counted once per fragment.
const (
	// maxRequestBytes bounds request bodies, on every endpoint.
	maxRequestBytes = 16 << 20
	// maxQueryBytes bounds a GraphQL query's text; the daemon's is under
	// 1 KiB.
	maxQueryBytes = 64 << 10
	// maxQueryTokens bounds the tokens the GraphQL parser reads (gqlgen's
	// parser token limit); the daemon's query has about 60, an
	// introspection query about 300.
	maxQueryTokens = 1000
	// maxQueryDepth bounds how deeply fields nest, with fragments
	// expanded; machines nest 4 deep, an introspection query about 13.
	maxQueryDepth = 16
	// maxComplexity is gqlgen's complexity limit: a field counts 1 plus
	// its selection, a fragment once per spread.
	maxComplexity = 1000
	// maxExpandedFields bounds the fields of an operation with its
	// fragments expanded at every spread, before gqlgen's complexity
	// walk, which expands them so: 30 fragments each spreading the next
	// twice would otherwise walk 2^30 fields.
	maxExpandedFields = 100 * maxComplexity
)

// The HTTP server's timeouts, as the daemon's own server has them.
const (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 30 * time.Second
	idleTimeout       = 2 * time.Minute
	maxHeaderBytes    = 64 << 10
)

// NewHTTPServer returns an HTTP server for h (the handler of Handler, or
// one that wraps it) with the compatible server's limits: every request
// body at most 16 MiB, the headers read within 10 s and 64 KiB, the whole
// request within 30 s, idle connections closed after 2 minutes. There is
// no write timeout: answers may be delayed on purpose (fakesabakan's
// faults).
func NewHTTPServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           http.MaxBytesHandler(h, maxRequestBytes),
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
	}
}

// validationRules are gqlparser's rules and the selection limits.
func validationRules() *rules.Rules {
	r := rules.NewDefaultRules()
	r.AddRule("SelectionLimits", selectionLimits)
	return r
}

// selectionLimits is a validation rule: an operation's fields nest at most
// maxQueryDepth deep and number at most maxExpandedFields with every
// fragment spread expanded. Each fragment is measured once; a fragment
// cycle (which NoFragmentCycles reports) counts as nothing more.
func selectionLimits(observers *core.Events, addError core.AddErrFunc) {
	observers.OnOperation(func(walker *core.Walker, op *ast.OperationDefinition) {
		m := &measurer{fragments: map[string]*ast.FragmentDefinition{}, memo: map[string]measure{}}
		for _, f := range walker.Document.Fragments {
			m.fragments[f.Name] = f
		}
		got := m.selection(op.SelectionSet)
		switch {
		case got.depth > maxQueryDepth:
			addError(core.Message("operation nests fields %d deep, over the limit of %d", got.depth, maxQueryDepth), core.At(op.Position))
		case got.fields > maxExpandedFields:
			addError(core.Message("operation selects more than %d fields with its fragments expanded at every spread", maxExpandedFields), core.At(op.Position))
		}
	})
}

// measure is the depth and the number of fields of a selection.
type measure struct{ depth, fields int }

type measurer struct {
	fragments map[string]*ast.FragmentDefinition
	memo      map[string]measure
}

// visiting marks a fragment being measured.
var visiting = measure{depth: -1}

func (m *measurer) selection(sels ast.SelectionSet) measure {
	var out measure
	add := func(x measure) {
		out.depth = max(out.depth, x.depth)
		out.fields = min(out.fields+x.fields, maxExpandedFields+1)
	}
	for _, sel := range sels {
		switch sel := sel.(type) {
		case *ast.Field:
			sub := m.selection(sel.SelectionSet)
			add(measure{depth: sub.depth + 1, fields: sub.fields + 1})
		case *ast.InlineFragment:
			add(m.selection(sel.SelectionSet))
		case *ast.FragmentSpread:
			add(m.fragment(sel.Name))
		}
	}
	return out
}

func (m *measurer) fragment(name string) measure {
	if got, ok := m.memo[name]; ok {
		if got == visiting {
			return measure{}
		}
		return got
	}
	def := m.fragments[name]
	if def == nil {
		return measure{} // KnownFragmentNames reports it
	}
	m.memo[name] = visiting
	got := m.selection(def.SelectionSet)
	m.memo[name] = got
	return got
}
