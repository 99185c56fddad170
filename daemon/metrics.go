package daemon

import (
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/labels"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/storage"
)

// metrics are the daemon's Prometheus metrics: CKE's cke_leader and
// sabakan integration metrics under their CKE names, and ckegen's own.
type metrics struct {
	owner         *ownerMetrics
	tickDuration  prometheus.Histogram
	queryDuration prometheus.Histogram
	// metricsDuration: fetching the placement policy's metric values.
	metricsDuration prometheus.Histogram
	inventory       *inventory
	change          *changeMetrics
	placements      *placementMetrics
	model           *modelMetrics
	warnings        *warningMetrics
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		owner: newOwnerMetrics(),
		tickDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "ckegen_tick_duration_seconds",
			Help:    "How long a sabakan integration tick took.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10),
		}),
		queryDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "ckegen_sabakan_query_duration_seconds",
			Help:    "How long the searchMachines query took.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10),
		}),
		metricsDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "ckegen_policy_metrics_duration_seconds",
			Help:    "How long fetching the placement policy's metric values took.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10),
		}),
		inventory:  newInventory(),
		change:     newChangeMetrics(),
		placements: newPlacementMetrics(),
		model:      newModelMetrics(),
		warnings:   newWarningMetrics(),
	}
	reg.MustRegister(m.owner, m.tickDuration, m.queryDuration, m.metricsDuration, m.inventory, m.change, m.placements, m.model, m.warnings)
	return m
}

// inventory collects the series that describe the integration's last
// tick: CKE's cke_sabakan_* and ckegen_machines. As CKE does, it exports
// them only on the leader and only while the integration is enabled: a
// follower or a disabled integration has nothing to say about them, and a
// 0 would read as a failure.
type inventory struct {
	successful, timestamp, workers, unused, machines *prometheus.Desc
	intolerable                                      *prometheus.Desc

	mu   sync.Mutex
	last lastTick
}

// lastTick is what the inventory exports.
type lastTick struct {
	// ticked: this term has had a tick, and the integration was enabled
	// in the last one.
	ticked  bool
	success bool
	at      time.Time
	byRole  map[string]int // nil: no cluster seen yet
	unused  int
	byState map[machine.State]int // nil: no machines seen yet
	// intolerable: Nodes with a taint a control plane does not tolerate;
	// kubeRead: this term has read the Kubernetes Nodes.
	intolerable int
	kubeRead    bool
}

func newInventory() *inventory {
	return &inventory{
		successful: prometheus.NewDesc("cke_sabakan_integration_successful",
			"True (=1) if the last sabakan integration tick succeeded.", nil, nil),
		timestamp: prometheus.NewDesc("cke_sabakan_integration_timestamp_seconds",
			"The Unix time when cke_sabakan_integration_successful was last updated.", nil, nil),
		workers: prometheus.NewDesc("cke_sabakan_workers",
			"The number of worker nodes of each role.", []string{"role"}, nil),
		unused: prometheus.NewDesc("cke_sabakan_unused_machines",
			"The number of machines sabakan returned that are not in the cluster.", nil, nil),
		machines: prometheus.NewDesc("ckegen_machines",
			"The number of machines sabakan returned, by state.", []string{"state"}, nil),
		intolerable: prometheus.NewDesc("ckegen_kubernetes_nodes_intolerable",
			"The number of Kubernetes Nodes carrying a taint a control plane does not tolerate, at the last tick that read them.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (v *inventory) Describe(ch chan<- *prometheus.Desc) {
	ch <- v.successful
	ch <- v.timestamp
	ch <- v.workers
	ch <- v.unused
	ch <- v.machines
	ch <- v.intolerable
}

// Collect implements prometheus.Collector.
func (v *inventory) Collect(ch chan<- prometheus.Metric) {
	v.mu.Lock()
	defer v.mu.Unlock()
	t := &v.last
	if !t.ticked {
		return
	}
	success := 0.0
	if t.success {
		success = 1
	}
	ch <- prometheus.MustNewConstMetric(v.successful, prometheus.GaugeValue, success)
	ch <- prometheus.MustNewConstMetric(v.timestamp, prometheus.GaugeValue, float64(t.at.Unix()))
	if t.byRole != nil {
		for _, role := range slices.Sorted(maps.Keys(t.byRole)) {
			ch <- prometheus.MustNewConstMetric(v.workers, prometheus.GaugeValue, float64(t.byRole[role]), role)
		}
	}
	if t.byRole != nil && t.byState != nil {
		ch <- prometheus.MustNewConstMetric(v.unused, prometheus.GaugeValue, float64(t.unused))
	}
	if t.kubeRead {
		ch <- prometheus.MustNewConstMetric(v.intolerable, prometheus.GaugeValue, float64(t.intolerable))
	}
	if t.byState != nil {
		for _, s := range machine.States {
			ch <- prometheus.MustNewConstMetric(v.machines, prometheus.GaugeValue, float64(t.byState[s]), string(s))
		}
	}
}

// observe records a tick that ended at now with out and err. Counts the
// tick did not get to (sabakan did not answer) keep their last values.
func (v *inventory) observe(now time.Time, out *outcome, err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if out != nil && out.idle() {
		v.last = lastTick{}
		return
	}
	t := &v.last
	t.ticked, t.success, t.at = true, err == nil, now
	if out != nil && out.kube != nil && out.kube.Read {
		t.kubeRead, t.intolerable = true, out.kube.Intolerable
	}
	if out == nil || out.machines == nil {
		return
	}
	t.byState = map[machine.State]int{}
	for _, m := range out.machines {
		t.byState[m.Status.State]++
	}
	c := out.cluster()
	if c == nil {
		return
	}
	inCluster := make(map[string]bool, len(c.Nodes))
	t.byRole = map[string]int{}
	for _, n := range c.Nodes {
		inCluster[n.Address] = true
		if !n.ControlPlane {
			t.byRole[n.Labels[labels.Role]]++
		}
	}
	t.unused = 0
	for _, m := range out.machines {
		if !inCluster[m.Address()] {
			t.unused++
		}
	}
}

// clear stops the export until the next tick, as when leadership ends.
func (v *inventory) clear() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.last = lastTick{}
}

// placementMetrics export the placement policy's nodes by placement and
// group (docs/design.md 12.4) as the status has them: on the leader, while the
// integration is enabled and a policy is set.
type placementMetrics struct {
	nodes *prometheus.Desc

	mu   sync.Mutex
	last []storage.PlacementStatus
}

func newPlacementMetrics() *placementMetrics {
	return &placementMetrics{
		nodes: prometheus.NewDesc("ckegen_placement_nodes",
			`The number of nodes of each placement of the placement policy by group ("": in no group, or the placement has no groups).`,
			[]string{"template", "group"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (m *placementMetrics) Describe(ch chan<- *prometheus.Desc) { ch <- m.nodes }

// Collect implements prometheus.Collector.
func (m *placementMetrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range m.last {
		for _, g := range p.Groups {
			ch <- prometheus.MustNewConstMetric(m.nodes, prometheus.GaugeValue, float64(g.Nodes), p.Placement, g.Group)
		}
	}
}

// observe records a tick's status: its placements, which a tick that did
// not count them kept from the last one, and a disabled one has not.
func (m *placementMetrics) observe(st storage.Status) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.last = st.Placements
}

// clear stops the export, as when leadership ends.
func (m *placementMetrics) clear() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.last = nil
}

// modelMetrics export the constraints model in force and, in the rate
// model, the worker rate against minimum-workers-rate (docs/models.md), as the
// status has them: on the leader, while the integration is enabled and
// the last tick read valid constraints.
type modelMetrics struct {
	model, rate, minimum *prometheus.Desc

	mu   sync.Mutex
	last storage.Status
}

func newModelMetrics() *modelMetrics {
	return &modelMetrics{
		model: prometheus.NewDesc("ckegen_constraints_model",
			`1 for the constraints model in force, 0 for the other: "count" (minimum-workers, maximum-workers) or "rate" (minimum-workers-rate, CKE v1.35).`,
			[]string{"model"}, nil),
		rate: prometheus.NewDesc("ckegen_worker_rate_percent",
			"In the rate model, (workers - 1) / machines * 100 of the cluster as the last tick left it: a RETIRED worker may leave while it is at least ckegen_minimum_workers_rate_percent.", nil, nil),
		minimum: prometheus.NewDesc("ckegen_minimum_workers_rate_percent",
			"In the rate model, the minimum-workers-rate constraint in force.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (m *modelMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.model
	ch <- m.rate
	ch <- m.minimum
}

// Collect implements prometheus.Collector.
func (m *modelMetrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.last.Model == "" {
		return
	}
	for _, model := range []string{constraints.CountModel, constraints.RateModel} {
		v := 0.0
		if model == m.last.Model {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(m.model, prometheus.GaugeValue, v, model)
	}
	if r := m.last.WorkerRate; r != nil {
		ch <- prometheus.MustNewConstMetric(m.rate, prometheus.GaugeValue, r.Percent)
		ch <- prometheus.MustNewConstMetric(m.minimum, prometheus.GaugeValue, float64(r.Minimum))
	}
}

// observe records a tick's status.
func (m *modelMetrics) observe(st storage.Status) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.last = storage.Status{Model: st.Model, WorkerRate: st.WorkerRate}
}

// clear stops the export, as when leadership ends.
func (m *modelMetrics) clear() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.last = storage.Status{}
}

// warningMetrics export how many warnings the newest tick had (a template
// role that matches no machine, an even control-plane count, machines
// left out), so that an alert can ask someone to read them with ckecli
// sabakan status: on the leader, after a tick, while the integration is
// enabled. One series without labels: the warnings' text stays in the
// status, and the series' cardinality does not grow with it.
type warningMetrics struct {
	count *prometheus.Desc

	mu  sync.Mutex
	set bool
	n   int
}

func newWarningMetrics() *warningMetrics {
	return &warningMetrics{
		count: prometheus.NewDesc("ckegen_tick_warnings",
			"The number of warnings of the last tick (ckecli sabakan status lists them): what the operator should fix although the tick went on.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (m *warningMetrics) Describe(ch chan<- *prometheus.Desc) { ch <- m.count }

// Collect implements prometheus.Collector.
func (m *warningMetrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.set {
		ch <- prometheus.MustNewConstMetric(m.count, prometheus.GaugeValue, float64(m.n))
	}
}

// observe records a tick's status; a disabled integration exports
// nothing, as CKE's series.
func (m *warningMetrics) observe(st storage.Status, out *outcome) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.set, m.n = out == nil || !out.idle(), len(st.Warnings)
	if out != nil {
		m.n = len(out.warnings) // the status keeps storage.MaxWarnings
	}
}

// clear stops the export, as when leadership ends.
func (m *warningMetrics) clear() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.set, m.n = false, 0
}
