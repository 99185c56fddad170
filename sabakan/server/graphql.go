package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	graphql "github.com/graph-gophers/graphql-go"

	"github.com/ckegen/ckegen/machine"
)

// dateTime is the DateTime scalar: RFC 3339 with fractional seconds, in the
// offset the time was given in (as sabakan returns it).
type dateTime struct{ time.Time }

func (dateTime) ImplementsGraphQLType(name string) bool { return name == "DateTime" }

func (t *dateTime) UnmarshalGraphQL(input any) error {
	s, ok := input.(string)
	if !ok {
		return fmt.Errorf("DateTime: want a string, got %T", input)
	}
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return fmt.Errorf("DateTime: %w", err)
	}
	t.Time = v
	return nil
}

func (t dateTime) MarshalJSON() ([]byte, error) {
	return json.Marshal(t.Format(time.RFC3339Nano))
}

// ipAddress is the IPAddress scalar.
type ipAddress string

func (ipAddress) ImplementsGraphQLType(name string) bool { return name == "IPAddress" }

func (a *ipAddress) UnmarshalGraphQL(input any) error {
	s, ok := input.(string)
	if !ok {
		return fmt.Errorf("IPAddress: want a string, got %T", input)
	}
	*a = ipAddress(s)
	return nil
}

func (a ipAddress) MarshalJSON() ([]byte, error) { return json.Marshal(string(a)) }

type rootResolver struct{ store *Store }

type labelInput struct {
	Name  string
	Value string
}

// gqlInt is an Int argument of any size: sabakan (gqlgen) takes Ints as 64-bit
// integers, so a rack or a day count above 2^31 in variables is accepted.
type gqlInt int64

func (gqlInt) ImplementsGraphQLType(name string) bool { return name == "Int" }

func (n *gqlInt) UnmarshalGraphQL(input any) error {
	switch v := input.(type) {
	case int32:
		*n = gqlInt(v)
	case int:
		*n = gqlInt(v)
	case int64:
		*n = gqlInt(v)
	case float64:
		if v != math.Trunc(v) || v < math.MinInt64 || v >= math.MaxInt64 {
			return fmt.Errorf("Int: %v is not an integer", v)
		}
		*n = gqlInt(v)
	default:
		return fmt.Errorf("Int: want a number, got %T", input)
	}
	return nil
}

// paramsInput is MachineParams; a null list is a nil pointer.
type paramsInput struct {
	Labels              *[]*labelInput
	Racks               *[]gqlInt
	Roles               *[]string
	States              *[]string
	MinDaysBeforeRetire *gqlInt
}

func deref[T any](p *[]T) []T {
	if p == nil {
		return nil
	}
	return *p
}

func (p *paramsInput) query() *Query {
	if p == nil {
		return nil
	}
	q := &Query{}
	for _, l := range deref(p.Labels) {
		q.Labels = append(q.Labels, machine.Label{Name: l.Name, Value: l.Value})
	}
	for _, r := range deref(p.Racks) {
		q.Racks = append(q.Racks, int(r))
	}
	q.Roles = deref(p.Roles)
	for _, s := range deref(p.States) {
		q.States = append(q.States, machine.State(s))
	}
	if p.MinDaysBeforeRetire != nil {
		n := int(*p.MinDaysBeforeRetire)
		q.MinDaysBeforeRetire = &n
	}
	return q
}

// resolverError is a resolver's error as sabakan reports it: a message and
// extensions naming the serial and the error type.
type resolverError struct {
	msg  string
	ext  map[string]any
	kind error
}

func (e *resolverError) Error() string              { return e.msg }
func (e *resolverError) Extensions() map[string]any { return e.ext }
func (e *resolverError) Unwrap() error              { return e.kind }

func gqlError(serial string, err error) error {
	switch {
	case errors.Is(err, ErrNotFound):
		return &resolverError{msg: "not found", ext: map[string]any{"serial": serial, "type": "MACHINE_NOT_FOUND"}, kind: err}
	case errors.Is(err, ErrRefused):
		return &resolverError{msg: err.Error(), ext: map[string]any{"serial": serial, "type": "INVALID_STATE_TRANSITION"}, kind: err}
	}
	return err
}

func (r *rootResolver) Machine(args struct{ Serial graphql.ID }) (*machineResolver, error) {
	m, err := r.store.Get(string(args.Serial))
	if err != nil {
		return nil, gqlError(string(args.Serial), err)
	}
	return &machineResolver{m}, nil
}

func (r *rootResolver) SearchMachines(args struct{ Having, NotHaving *paramsInput }) []*machineResolver {
	ms := r.store.Search(args.Having.query(), args.NotHaving.query())
	out := make([]*machineResolver, len(ms))
	for i := range ms {
		out[i] = &machineResolver{ms[i]}
	}
	return out
}

func (r *rootResolver) SetMachineState(args struct {
	Serial graphql.ID
	State  string
}) (*statusResolver, error) {
	m, err := r.store.SetState(string(args.Serial), machine.State(args.State))
	if err != nil {
		return nil, gqlError(string(args.Serial), err)
	}
	return &statusResolver{m.Status}, nil
}

type machineResolver struct{ m machine.Machine }

func (r *machineResolver) Spec() *specResolver     { return &specResolver{&r.m.Spec} }
func (r *machineResolver) Status() *statusResolver { return &statusResolver{r.m.Status} }

type specResolver struct{ s *machine.Spec }

func (r *specResolver) Serial() graphql.ID { return graphql.ID(r.s.Serial) }
func (r *specResolver) Labels() *[]*labelResolver {
	if r.s.Labels == nil {
		return nil
	}
	out := make([]*labelResolver, len(r.s.Labels))
	for i := range r.s.Labels {
		out[i] = &labelResolver{r.s.Labels[i]}
	}
	return &out
}
func (r *specResolver) Rack() int32        { return int32(r.s.Rack) }
func (r *specResolver) IndexInRack() int32 { return int32(r.s.IndexInRack) }
func (r *specResolver) Role() string       { return r.s.Role }
func (r *specResolver) Ipv4() []ipAddress {
	out := make([]ipAddress, len(r.s.IPv4))
	for i, a := range r.s.IPv4 {
		out[i] = ipAddress(a)
	}
	return out
}
func (r *specResolver) RegisterDate() dateTime { return dateTime{r.s.RegisterDate} }
func (r *specResolver) RetireDate() dateTime   { return dateTime{r.s.RetireDate} }
func (r *specResolver) Bmc() *bmcResolver      { return &bmcResolver{r.s.BMC} }

type labelResolver struct{ l machine.Label }

func (r *labelResolver) Name() string  { return r.l.Name }
func (r *labelResolver) Value() string { return r.l.Value }

type bmcResolver struct{ b machine.BMC }

func (r *bmcResolver) BmcType() string { return r.b.BMCType }
func (r *bmcResolver) Ipv4() ipAddress { return ipAddress(r.b.IPv4) }

type statusResolver struct{ s machine.Status }

func (r *statusResolver) State() string { return string(r.s.State) }
func (r *statusResolver) Timestamp() dateTime {
	if r.s.Timestamp == nil {
		return dateTime{}
	}
	return dateTime{*r.s.Timestamp}
}
func (r *statusResolver) Duration() float64 { return r.s.Duration }
