package server

import (
	"encoding/json"
	"fmt"
	"time"

	graphql "github.com/graph-gophers/graphql-go"

	"github.com/ckegen/ckegen/machine"
)

// dateTime is the DateTime scalar: RFC 3339 in UTC.
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
	return json.Marshal(t.UTC().Format(time.RFC3339Nano))
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

// paramsInput is MachineParams; a null list is a nil pointer.
type paramsInput struct {
	Labels              *[]*labelInput
	Racks               *[]int32
	Roles               *[]string
	States              *[]string
	MinDaysBeforeRetire *int32
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

func (r *rootResolver) Machine(args struct{ Serial graphql.ID }) (*machineResolver, error) {
	m, err := r.store.Get(string(args.Serial))
	if err != nil {
		return nil, err
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
		return nil, err
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
