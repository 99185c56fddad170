package intake

// The values of a placement policy's metrics for the machines of one tick
// (docs/design.md 12.3): from Prometheus, with one instant query per
// metric through the HTTP API, or from the values a static provider lists
// by serial.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"golang.org/x/sync/errgroup"

	"github.com/ckegen/ckegen/internal/redact"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/policy"
)

// ErrMetricsUnavailable marks every failure to get a metric: a provider that
// does not answer, answers too late, refuses the query, or answers with
// something that cannot be read as one value per machine. The daemon
// reports it as METRICS_UNAVAILABLE; compare with errors.Is.
var ErrMetricsUnavailable = errors.New("metrics unavailable")

// The labels that tie a Prometheus sample to a machine, in order of
// precedence: the first one a sample has decides.
const (
	promLabelSerial   = "serial"
	promLabelAddress  = "address"
	promLabelInstance = "instance"
)

// maxMetricQueries bounds the queries in flight at once.
const maxMetricQueries = 4

// MetricStat says what one metric's fetch found, for logs.
type MetricStat struct {
	Metric   string
	Provider string
	// Samples is the number of samples or static values read; Matched of
	// them belong to a machine of the tick; the others name no machine.
	Samples, Matched int
	// Warnings are Prometheus' warnings about the query.
	Warnings []string
}

// fetchMetrics gets every metric of the policy for the machines, once: the
// returned table has one row per machine, in the order given (Values.Row,
// or Values.Lookup by serial). A machine no sample names has no value.
// Metrics are fetched in parallel; every failure is reported, in the
// order of the metrics' names, and wraps ErrMetricsUnavailable.
func fetchMetrics(ctx context.Context, p *policy.Policy, machines []*machine.Machine) (*policy.Values, []MetricStat, error) {
	serials := make([]string, len(machines))
	for i := range machines {
		serials[i] = machines[i].Spec.Serial
	}
	vals := p.NewValues(serials)
	names := p.Metrics()
	stats := make([]MetricStat, len(names))
	errs := make([]error, len(names))
	idx := newMachineIndex(vals, machines)
	doc := p.Document()
	var g errgroup.Group
	g.SetLimit(maxMetricQueries)
	for col, name := range names {
		m := doc.Metrics[name]
		prov := doc.Providers[m.Provider]
		stats[col] = MetricStat{Metric: name, Provider: m.Provider}
		// Each metric writes its own column only.
		g.Go(func() error {
			var err error
			switch prov.Type {
			case policy.ProviderPrometheus:
				err = fetchPrometheus(ctx, prov, m, col, vals, idx, &stats[col])
			case policy.ProviderStatic:
				fetchStatic(prov, name, col, vals, &stats[col])
			default:
				err = fmt.Errorf("unknown provider type %q", prov.Type)
			}
			if err != nil {
				errs[col] = fmt.Errorf("%w: metric %s from provider %s: %w", ErrMetricsUnavailable, name, m.Provider, err)
			}
			return nil
		})
	}
	_ = g.Wait() // the goroutines report through errs
	if err := errors.Join(errs...); err != nil {
		return nil, stats, err
	}
	return vals, stats, nil
}

// metricWarnings are what a fetch found worth an operator's eye: what
// Prometheus warned about, and each metric of which no machine (of the
// machines given to fetchMetrics) has a value.
func metricWarnings(stats []MetricStat, machines int) []string {
	var out []string
	for _, st := range stats {
		for _, w := range st.Warnings {
			out = append(out, fmt.Sprintf("metric %s from provider %s: %s", st.Metric, st.Provider, w))
		}
		if st.Matched == 0 && machines > 0 {
			out = append(out, fmt.Sprintf("metric %s from provider %s: no value for any of the %d machines (%d samples): every machine counts as without a value",
				st.Metric, st.Provider, machines, st.Samples))
		}
	}
	return out
}

// machineIndex finds a machine's row by its node address.
type machineIndex struct {
	byAddr map[netip.Addr]int
}

func newMachineIndex(vals *policy.Values, machines []*machine.Machine) *machineIndex {
	idx := &machineIndex{byAddr: make(map[netip.Addr]int, len(machines))}
	for i := range machines {
		if row, _ := vals.Index(machines[i].Spec.Serial); row != i {
			continue // a repeated serial: its first machine holds the row
		}
		a, err := netip.ParseAddr(machines[i].Address())
		if err != nil {
			continue
		}
		if _, dup := idx.byAddr[a]; !dup {
			idx.byAddr[a] = i
		}
	}
	return idx
}

// row returns the row of the machine a sample belongs to (docs/design.md 12.3): by
// its serial label; without one, by its address label; without one, by
// the host part of its instance label.
func (idx *machineIndex) row(vals *policy.Values, labels *sampleLabels) (int, bool) {
	if labels.Serial != "" {
		return vals.Index(labels.Serial)
	}
	host := labels.Address
	if host == "" {
		inst := labels.Instance
		if h, _, err := net.SplitHostPort(inst); err == nil {
			host = h
		} else {
			host = inst
		}
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return 0, false
	}
	i, ok := idx.byAddr[a.Unmap()]
	return i, ok
}

func fetchPrometheus(ctx context.Context, prov *policy.ProviderSpec, m *policy.MetricSpec, col int,
	vals *policy.Values, idx *machineIndex, st *MetricStat) error {
	timeout := prov.TimeoutOrDefault()
	qctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	samples, warnings, err := queryPrometheus(qctx, prov.URL, m.Query, timeout)
	st.Warnings = warnings
	if err != nil {
		if errors.Is(qctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			return fmt.Errorf("%s: no answer within %s (the provider's timeout): %w", redact.URL(prov.URL), timeout, err)
		}
		return fmt.Errorf("%s: query %q: %w", redact.URL(prov.URL), m.Query, err)
	}
	st.Samples = len(samples)
	// seen holds, per row, the index+1 of the sample that set it.
	seen := make([]int, vals.Len())
	for i := range samples {
		s := &samples[i]
		row, ok := idx.row(vals, &s.Metric)
		if !ok {
			continue
		}
		if !s.Value.ok {
			return fmt.Errorf("%s: query %q: sample %s has no float value (a native histogram?)", redact.URL(prov.URL), m.Query, s.Metric)
		}
		if prev := seen[row]; prev != 0 {
			return fmt.Errorf("%s: query %q returned two samples for one machine, %s and %s: aggregate it to one sample per machine (e.g. max by (%s) (...))",
				redact.URL(prov.URL), m.Query, samples[prev-1].Metric, s.Metric, promLabelSerial)
		}
		seen[row] = i + 1
		st.Matched++
		vals.Set(row, col, s.Value.v) // NaN stays "no value"
	}
	return nil
}

func fetchStatic(prov *policy.ProviderSpec, name string, col int, vals *policy.Values, st *MetricStat) {
	for serial, byMetric := range prov.Values {
		v, ok := byMetric[name]
		if !ok {
			continue
		}
		st.Samples++
		if row, ok := vals.Index(serial); ok {
			st.Matched++
			vals.Set(row, col, float64(v))
		}
	}
}
