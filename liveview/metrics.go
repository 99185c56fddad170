package liveview

import (
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/ckegen/ckegen/decision"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/storage"
)

// Metrics are a step's Prometheus series: three histograms of how long
// ticks take, and one collector whose every series is a projection of
// the last tick (its status, which keeps what a tick did not get to
// know, and its decision). CKE's sabakan integration series come under
// their CKE names where the host is not CKE's server, which has its own.
// A host registers it and calls Observe after each tick with what the
// tick returned (tick.Result), Clear when it stops leading.
type Metrics struct {
	tickDuration, queryDuration, metricsDuration prometheus.Histogram
	last                                         *lastTick
}

// MetricsOptions shape the series.
type MetricsOptions struct {
	// CKENames exports CKE's cke_sabakan_* series. Inside CKE's server
	// they are CKE's own: the host feeds them instead (Result.Figures).
	CKENames bool
}

// NewMetrics returns the series of a step.
func NewMetrics(o MetricsOptions) *Metrics {
	histogram := func(name, help string) prometheus.Histogram {
		return prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: prometheus.ExponentialBuckets(0.001, 4, 10)})
	}
	return &Metrics{
		tickDuration:    histogram("ckegen_tick_duration_seconds", "How long a sabakan integration tick took."),
		queryDuration:   histogram("ckegen_sabakan_query_duration_seconds", "How long the searchMachines query took."),
		metricsDuration: histogram("ckegen_policy_metrics_duration_seconds", "How long fetching the placement policy's metric values took."),
		last:            &lastTick{ckeNames: o.CKENames},
	}
}

func (m *Metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.tickDuration, m.queryDuration, m.metricsDuration, m.last}
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.collectors() {
		c.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m.collectors() {
		c.Collect(ch)
	}
}

// Tick is what the series show of one tick: what tick.Result says.
type Tick struct {
	Decision *decision.Decision
	Status   storage.Status
	// Failed: the tick failed; Warnings counts its warnings; Duration is
	// how long it took.
	Failed   bool
	Warnings int
	Duration time.Duration
}

// Observe records a tick, observed at now.
func (m *Metrics) Observe(now time.Time, r Tick) {
	m.tickDuration.Observe(r.Duration.Seconds())
	if d := r.Decision; d != nil {
		if g := d.Gathered; g.QueryTime > 0 {
			m.queryDuration.Observe(g.QueryTime.Seconds())
		}
		if g := d.Gathered; g.MetricsTime > 0 {
			m.metricsDuration.Observe(g.MetricsTime.Seconds())
		}
	}
	m.last.observe(now, r)
}

// Clear stops the series that only a leader exports, as when leadership
// ends.
func (m *Metrics) Clear() { m.last.observe(time.Time{}, Tick{}) }

// Figures are the figures of CKE's sabakan integration series for the
// last tick: whether it succeeded, the workers by role and the unused
// machines (nil and 0 when sabakan has not been read). Inside CKE's
// server the host gives them to CKE's own series.
func (r Tick) Figures() (ok bool, workersByRole map[string]int, unused int) {
	if f := r.Status.Inventory; f != nil {
		workersByRole, unused = f.Workers, f.Unused
	}
	return !r.Failed, workersByRole, unused
}

// lastTick is the collector of the last tick's series. As CKE does, it
// exports them only on the leader, and the integration's figures only
// while the integration runs: a follower or a disabled integration has
// nothing to say about them, and a 0 would read as a failure.
type lastTick struct {
	ckeNames bool

	mu sync.Mutex
	at time.Time // when the last tick was observed; zero: nothing to export
	r  Tick
}

func (l *lastTick) observe(now time.Time, r Tick) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.at, l.r = now, r
	if r.Status.Time.IsZero() {
		l.at = time.Time{}
	}
}

// The series of lastTick.
var (
	descSuccessful  = prometheus.NewDesc("cke_sabakan_integration_successful", "True (=1) if the last sabakan integration tick succeeded.", nil, nil)
	descTimestamp   = prometheus.NewDesc("cke_sabakan_integration_timestamp_seconds", "The Unix time when cke_sabakan_integration_successful was last updated.", nil, nil)
	descWorkers     = prometheus.NewDesc("cke_sabakan_workers", "The number of worker nodes of each role.", []string{"role"}, nil)
	descUnused      = prometheus.NewDesc("cke_sabakan_unused_machines", "The number of machines sabakan returned that are not in the cluster.", nil, nil)
	descMachines    = prometheus.NewDesc("ckegen_machines", "The number of machines sabakan returned, by state.", []string{"state"}, nil)
	descIntolerable = prometheus.NewDesc("ckegen_kubernetes_nodes_intolerable",
		"The number of kubenodes.Kubernetes Nodes carrying a taint a control plane does not tolerate, at the last tick that read them.", nil, nil)
	descPlacement = prometheus.NewDesc("ckegen_placement_nodes",
		`The number of nodes of each placement of the placement policy by group ("": in no group, or the placement has no groups).`, []string{"template", "group"}, nil)
	descDomainsAtRisk = prometheus.NewDesc("ckegen_failure_domains_at_risk",
		"The number of failure domains (racks, or the policy's failureDomain label) whose loss breaks etcd's quorum in the cluster as the last tick left it.", nil, nil)
	descDomainControlPlanes = prometheus.NewDesc("ckegen_failure_domain_control_planes",
		"The number of control planes of each failure domain that holds one, in the cluster as the last tick left it.", []string{"domain"}, nil)
	descModel = prometheus.NewDesc("ckegen_constraints_model",
		`1 for the constraints model in force, 0 for the other: "count" (minimum-workers, maximum-workers) or "rate" (minimum-workers-rate, CKE v1.35); while a tick does not read valid constraints, the model of the last that did.`, []string{"model"}, nil)
	descRate = prometheus.NewDesc("ckegen_worker_rate_percent",
		"In the rate model, (workers - 1) / machines * 100 of the cluster as the last tick left it: a RETIRED worker may leave while it is at least ckegen_minimum_workers_rate_percent.", nil, nil)
	descMinimumRate = prometheus.NewDesc("ckegen_minimum_workers_rate_percent", "In the rate model, the minimum-workers-rate constraint in force.", nil, nil)
	descWarnings    = prometheus.NewDesc("ckegen_tick_warnings",
		"The number of warnings of the last tick (ckegenctl sabakan status lists them): what the operator should fix although the tick went on.", nil, nil)
	descPending = prometheus.NewDesc("ckegen_plan_pending_steps", "The number of steps of the plan from the cluster as the last tick left it.", nil, nil)
	descQuiet   = prometheus.NewDesc("ckegen_quiet_time_remaining_seconds",
		"The time left before the inventory counts as quiet and writes resume (0: quiet, or no quiet time).", nil, nil)
	descHeld = prometheus.NewDesc("ckegen_integration_held",
		"1 on the leader while its ticks hold back on purpose, by reason (OWNED_BY_CKE, CKE_INTEGRATION_ACTIVE, CKE_NOT_READY, CONSTRAINTS_UNCHOSEN).", []string{"reason"}, nil)
	descWaiting = prometheus.NewDesc("ckegen_integration_waiting",
		"1 on the leader while it waits for a setting never stored, by reason (NO_TEMPLATE, NO_URL): a new installation, not a failure.", []string{"reason"}, nil)
	descFailing = prometheus.NewDesc("ckegen_integration_failing",
		"1 on the leader while its last tick failed, by reason code (SABAKAN_UNREACHABLE, TOO_MANY_UNHEALTHY, CLUSTER_TOO_LARGE, ...; docs/daemon.md).", []string{"reason"}, nil)
	descTickTime = prometheus.NewDesc("ckegen_tick_timestamp_seconds",
		"The Unix time of the leader's last tick (inside CKE's server: the last time CKE's server called ckegen).", nil, nil)
	descRunTime = prometheus.NewDesc("ckegen_integration_timestamp_seconds",
		"The Unix time of the leader's last tick that ran the integration (not held back by CKE's pace, disabled or waiting); exported while the integration is ckegen's.", nil, nil)
	descRepairWaiting = prometheus.NewDesc("ckegen_auto_repair_waiting_machines",
		"Inside CKE's server, the number of machines CKE's sabakan-triggered auto-repair would queue for repair that wait because the repair queue is at maximum-repair-queue-entries.", nil, nil)
	descInterval = prometheus.NewDesc("ckegen_tick_interval_seconds",
		"The pace the leader's host runs ticks at (ckegen's --interval, or CKE's server's): a tick older than three of them means its host stopped calling.", nil, nil)
)

// Describe implements prometheus.Collector.
func (l *lastTick) Describe(ch chan<- *prometheus.Desc) {
	if l.ckeNames {
		for _, d := range []*prometheus.Desc{descSuccessful, descTimestamp, descWorkers, descUnused} {
			ch <- d
		}
	}
	for _, d := range []*prometheus.Desc{descMachines, descIntolerable, descPlacement, descDomainsAtRisk, descDomainControlPlanes, descModel, descRate, descMinimumRate,
		descWarnings, descPending, descQuiet, descHeld, descWaiting, descFailing, descTickTime, descRunTime, descInterval, descRepairWaiting} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (l *lastTick) Collect(ch chan<- prometheus.Metric) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.at.IsZero() {
		return
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	st, d := l.r.Status, l.r.Decision
	gauge(descTickTime, unix(st.Time))
	if st.Interval > 0 {
		gauge(descInterval, time.Duration(st.Interval).Seconds())
	}
	if st.Mode == decision.ModeInsideCKE {
		waiting := 0
		if st.Repair != nil {
			waiting = st.Repair.WaitingCount
		}
		gauge(descRepairWaiting, float64(waiting))
	}
	switch st.Result {
	case reason.Held:
		gauge(descHeld, 1, st.Reason)
		if st.Reason == reason.CKENotReady && !st.LastRun.IsZero() {
			// Waiting for CKE's pace: the integration is ckegen's, and
			// its last run ages.
			gauge(descRunTime, unix(st.LastRun))
		}
		return
	case reason.Waiting:
		gauge(descWaiting, 1, st.Reason)
		return
	case reason.Disabled:
		return
	case reason.Failing:
		gauge(descFailing, 1, st.Reason)
	}
	gauge(descRunTime, unix(st.LastRun))
	if l.ckeNames {
		gauge(descSuccessful, b2f(!l.r.Failed))
		gauge(descTimestamp, float64(l.at.Unix()))
	}
	l.figures(gauge, st, d)
}

// figures are the series of a tick that ran the integration: the
// inventory, the Nodes, the placements, the failure domains, the model,
// the warnings and the plan pending.
func (l *lastTick) figures(gauge func(*prometheus.Desc, float64, ...string), st storage.Status, d *decision.Decision) {
	if f := st.Inventory; f != nil {
		for _, s := range machine.States {
			gauge(descMachines, float64(f.Machines[string(s)]), string(s))
		}
		if l.ckeNames && f.Workers != nil {
			for _, role := range slices.Sorted(maps.Keys(f.Workers)) {
				gauge(descWorkers, float64(f.Workers[role]), role)
			}
			gauge(descUnused, float64(f.Unused))
		}
	}
	if k := st.Kubernetes; k != nil && k.Read {
		gauge(descIntolerable, float64(k.Intolerable))
	}
	for _, p := range st.Placements {
		for _, g := range p.Groups {
			gauge(descPlacement, float64(g.Nodes), p.Placement, g.Group)
		}
	}
	if fd := st.Domains; fd != nil {
		gauge(descDomainsAtRisk, float64(len(fd.AtRisk)))
		for _, dom := range fd.Domains {
			gauge(descDomainControlPlanes, float64(len(dom.ControlPlanes)), dom.Domain)
		}
	}
	if st.Model != "" {
		for _, model := range []string{constraints.CountModel, constraints.RateModel} {
			gauge(descModel, b2f(model == st.Model), model)
		}
		if r := st.WorkerRate; r != nil {
			gauge(descRate, r.Percent)
			gauge(descMinimumRate, float64(r.Minimum))
		}
	}
	gauge(descWarnings, float64(l.r.Warnings))
	if p := st.Pending; p != nil {
		gauge(descPending, float64(p.Steps))
		gauge(descQuiet, quietRemaining(st, d).Seconds())
	}
}

// quietRemaining is the quiet time left by the last tick's status: the
// decision's own figure when it evaluated the quiet time, else the one
// the status kept.
func quietRemaining(st storage.Status, d *decision.Decision) time.Duration {
	if d != nil && d.Quiet != nil {
		return d.QuietRemaining
	}
	if q := st.Quiet; q != nil && q.Remaining != "" {
		if r, err := time.ParseDuration(q.Remaining); err == nil {
			return r
		}
	}
	return 0
}

func unix(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
