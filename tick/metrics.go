package tick

import (
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/labels"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/storage"
)

// Metrics are a step's Prometheus series, a projection of each tick's
// Result: CKE's sabakan integration series under their CKE names (where
// the host is not CKE's server, which has its own) and ckegen's own. A
// host registers it and calls Observe after each tick, Clear when it
// stops leading.
type Metrics struct {
	tickDuration  prometheus.Histogram
	queryDuration prometheus.Histogram
	// metricsDuration: fetching the placement policy's metric values.
	metricsDuration prometheus.Histogram
	inventory       *inventory
	change          *changeMetrics
	placements      *placementMetrics
	model           *modelMetrics
	warnings        *warningMetrics
	results         *resultMetrics
}

// MetricsOptions shape the series.
type MetricsOptions struct {
	// CKENames exports CKE's cke_sabakan_* series. Inside CKE's server
	// they are CKE's own: the host feeds them instead (Result.Figures).
	CKENames bool
}

// NewMetrics returns the series of a step.
func NewMetrics(o MetricsOptions) *Metrics {
	return &Metrics{
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
		inventory:  newInventory(o.CKENames),
		change:     newChangeMetrics(),
		placements: newPlacementMetrics(),
		model:      newModelMetrics(),
		warnings:   newWarningMetrics(),
		results:    newResultMetrics(),
	}
}

func (m *Metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.tickDuration, m.queryDuration, m.metricsDuration, m.inventory, m.change, m.placements, m.model, m.warnings, m.results}
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

// Observe records a tick's result at now.
func (m *Metrics) Observe(now time.Time, r Result) {
	m.tickDuration.Observe(r.Duration.Seconds())
	if r.Query > 0 {
		m.queryDuration.Observe(r.Query.Seconds())
	}
	if r.Metrics > 0 {
		m.metricsDuration.Observe(r.Metrics.Seconds())
	}
	m.inventory.observe(now, r)
	m.change.observe(r)
	m.placements.observe(r.Status)
	m.model.observe(r.Status)
	m.warnings.observe(r)
	m.results.observe(r.Status)
}

// Clear stops the series that only a leader exports, as when leadership
// ends.
func (m *Metrics) Clear() {
	m.inventory.clear()
	m.change.clear()
	m.placements.clear()
	m.model.clear()
	m.warnings.clear()
	m.results.clear()
}

// Figures are the figures of CKE's sabakan integration series for the
// last tick: whether it succeeded, the workers by role and the unused
// machines (nil and 0 when sabakan was not read). Inside CKE's server the
// host gives them to CKE's own series.
func (r Result) Figures() (ok bool, workersByRole map[string]int, unused int) {
	f := figuresOf(r)
	return r.Err == nil, f.byRole, f.unused
}

// inventory collects the series that describe the integration's last
// tick: CKE's cke_sabakan_* and ckegen_machines. As CKE does, it exports
// them only on the leader and only while the integration is enabled: a
// follower or a disabled integration has nothing to say about them, and a
// 0 would read as a failure.
type inventory struct {
	successful, timestamp, workers, unused, machines *prometheus.Desc
	intolerable                                      *prometheus.Desc
	// ckeNames: export CKE's cke_sabakan_* series.
	ckeNames bool

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

func newInventory(ckeNames bool) *inventory {
	return &inventory{ckeNames: ckeNames,
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
	if v.ckeNames {
		ch <- v.successful
		ch <- v.timestamp
		ch <- v.workers
		ch <- v.unused
	}
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
	if v.ckeNames {
		v.collectCKE(ch)
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

// collectCKE sends CKE's series.
func (v *inventory) collectCKE(ch chan<- prometheus.Metric) {
	t := &v.last
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
}

// observe records a tick that ended at now. Counts the tick did not get
// to (sabakan did not answer) keep their last values.
func (v *inventory) observe(now time.Time, r Result) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if r.Idle {
		v.last = lastTick{}
		return
	}
	t := &v.last
	t.ticked, t.success, t.at = true, r.Err == nil, now
	if r.Kubernetes != nil && r.Kubernetes.Read {
		t.kubeRead, t.intolerable = true, r.Kubernetes.Intolerable
	}
	if r.Machines == nil {
		return
	}
	f := figuresOf(r)
	t.byState = f.byState
	if r.Cluster == nil {
		return
	}
	t.byRole, t.unused = f.byRole, f.unused
}

// figures are the counts of a tick's machines and cluster.
type figures struct {
	byState map[machine.State]int
	// byRole counts the workers by role; nil without a cluster.
	byRole map[string]int
	unused int
}

func figuresOf(r Result) figures {
	var f figures
	if r.Machines == nil {
		return f
	}
	f.byState = map[machine.State]int{}
	for _, m := range r.Machines {
		f.byState[m.Status.State]++
	}
	c := r.Cluster
	if c == nil {
		return f
	}
	inCluster := make(map[string]bool, len(c.Nodes))
	f.byRole = map[string]int{}
	for _, n := range c.Nodes {
		inCluster[n.Address] = true
		if !n.ControlPlane {
			f.byRole[n.Labels[labels.Role]]++
		}
	}
	for _, m := range r.Machines {
		if !inCluster[m.Address()] {
			f.unused++
		}
	}
	return f
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
// left out), so that an alert can ask someone to read them with ckegenctl
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
			"The number of warnings of the last tick (ckegenctl sabakan status lists them): what the operator should fix although the tick went on.", nil, nil),
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

// observe records a tick; a disabled integration exports nothing, as
// CKE's series.
func (m *warningMetrics) observe(r Result) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.set, m.n = !r.Idle, r.Warnings
}

// clear stops the export, as when leadership ends.
func (m *warningMetrics) clear() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.set, m.n = false, 0
}

// changeMetrics are change management's series: the pending steps and
// the quiet time left, exported on the leader after a tick.
type changeMetrics struct {
	pending, quiet *prometheus.Desc

	mu        sync.Mutex
	set       bool
	steps     int
	remaining time.Duration
}

func newChangeMetrics() *changeMetrics {
	return &changeMetrics{
		pending: prometheus.NewDesc("ckegen_plan_pending_steps",
			"The number of steps of the plan from the cluster as the last tick left it.", nil, nil),
		quiet: prometheus.NewDesc("ckegen_quiet_time_remaining_seconds",
			"The time left before the inventory counts as quiet and writes resume (0: quiet, or no quiet time).", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (m *changeMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.pending
	ch <- m.quiet
}

// Collect implements prometheus.Collector.
func (m *changeMetrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.set {
		return
	}
	ch <- prometheus.MustNewConstMetric(m.pending, prometheus.GaugeValue, float64(m.steps))
	ch <- prometheus.MustNewConstMetric(m.quiet, prometheus.GaugeValue, m.remaining.Seconds())
}

// observe records a tick; a disabled integration exports nothing, as
// CKE's series.
func (m *changeMetrics) observe(r Result) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r.Idle {
		m.set, m.steps, m.remaining = false, 0, 0
		return
	}
	if r.Status.Pending == nil {
		return
	}
	m.set, m.steps = true, r.Status.Pending.Steps
	if r.QuietKnown {
		m.remaining = r.QuietRemaining
	}
}

// clear stops the export, as when leadership ends.
func (m *changeMetrics) clear() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.set, m.steps, m.remaining = false, 0, 0
}

// resultMetrics export, on the leader, the reason its tick holds back,
// waits for a setting, or failed.
type resultMetrics struct {
	held, waiting, failing *prometheus.Desc

	mu      sync.Mutex
	reason  string
	wait    string
	failure string
}

func newResultMetrics() *resultMetrics {
	return &resultMetrics{
		held: prometheus.NewDesc("ckegen_integration_held",
			"1 on the leader while its ticks hold back on purpose, by reason (OWNED_BY_CKE, CKE_INTEGRATION_ACTIVE, CKE_NOT_READY).",
			[]string{"reason"}, nil),
		waiting: prometheus.NewDesc("ckegen_integration_waiting",
			"1 on the leader while it waits for a setting never stored, by reason (NO_TEMPLATE, NO_URL): a new installation, not a failure.",
			[]string{"reason"}, nil),
		failing: prometheus.NewDesc("ckegen_integration_failing",
			"1 on the leader while its last tick failed, by reason code (SABAKAN_UNREACHABLE, TOO_MANY_UNHEALTHY, CLUSTER_TOO_LARGE, ...; docs/daemon.md).",
			[]string{"reason"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (m *resultMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.held
	ch <- m.waiting
	ch <- m.failing
}

// Collect implements prometheus.Collector.
func (m *resultMetrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.reason != "" {
		ch <- prometheus.MustNewConstMetric(m.held, prometheus.GaugeValue, 1, m.reason)
	}
	if m.wait != "" {
		ch <- prometheus.MustNewConstMetric(m.waiting, prometheus.GaugeValue, 1, m.wait)
	}
	if m.failure != "" {
		ch <- prometheus.MustNewConstMetric(m.failing, prometheus.GaugeValue, 1, m.failure)
	}
}

// observe records a tick's status.
func (m *resultMetrics) observe(st storage.Status) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reason, m.wait, m.failure = "", "", ""
	switch st.Result {
	case reason.Held:
		m.reason = st.Reason
	case reason.Waiting:
		m.wait = st.Reason
	case reason.Failing:
		m.failure = st.Reason
	}
}

// clear stops the export, as when leadership ends.
func (m *resultMetrics) clear() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reason, m.wait, m.failure = "", "", ""
}
