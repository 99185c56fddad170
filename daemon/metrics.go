package daemon

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/labels"
	"github.com/ckegen/ckegen/machine"
)

// metrics are the daemon's Prometheus metrics: CKE's sabakan integration
// metrics under their CKE names, and ckegen's own.
type metrics struct {
	successful    prometheus.Gauge
	timestamp     prometheus.Gauge
	workers       *prometheus.GaugeVec
	unused        prometheus.Gauge
	tickDuration  prometheus.Histogram
	queryDuration prometheus.Histogram
	machines      *prometheus.GaugeVec
	leader        prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		successful: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "cke_sabakan_integration_successful",
			Help: "1 if the last sabakan integration tick succeeded, 0 otherwise.",
		}),
		timestamp: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "cke_sabakan_integration_timestamp_seconds",
			Help: "The time of the last sabakan integration tick.",
		}),
		workers: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "cke_sabakan_workers",
			Help: "The number of worker nodes of each role.",
		}, []string{"role"}),
		unused: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "cke_sabakan_unused_machines",
			Help: "The number of machines sabakan returned that are not in the cluster.",
		}),
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
		machines: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ckegen_machines",
			Help: "The number of machines sabakan returned, by state.",
		}, []string{"state"}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ckegen_leader",
			Help: "1 while this daemon is the leader.",
		}),
	}
	reg.MustRegister(m.successful, m.timestamp, m.workers, m.unused, m.tickDuration, m.queryDuration, m.machines, m.leader)
	return m
}

// observeInventory sets the per-role, per-state and unused gauges from the
// machines and the cluster after a tick. Roles that are gone are dropped.
func (m *metrics) observeInventory(ms []*machine.Machine, c *cluster.Cluster) {
	if c != nil {
		inCluster := make(map[string]bool, len(c.Nodes))
		byRole := map[string]int{}
		for _, n := range c.Nodes {
			inCluster[n.Address] = true
			if !n.ControlPlane {
				byRole[n.Labels[labels.Role]]++
			}
		}
		m.workers.Reset()
		for role, n := range byRole {
			m.workers.WithLabelValues(role).Set(float64(n))
		}
		unused := 0
		for _, x := range ms {
			if !inCluster[x.Address()] {
				unused++
			}
		}
		m.unused.Set(float64(unused))
	}
	if ms != nil {
		byState := map[machine.State]int{}
		for _, x := range ms {
			byState[x.Status.State]++
		}
		for _, s := range machine.States {
			m.machines.WithLabelValues(string(s)).Set(float64(byState[s]))
		}
	}
}
