package daemon

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ckegen/ckegen/storage"
)

// Running beside a real CKE server (docs/beside-cke.md): which integration writes the
// cluster, and CKE's pace.

// Reasons of a tick that holds back on purpose: the daemon is healthy,
// and writes nothing.
const (
	// ReasonOwnedByCKE: a CKE server runs its own integration, which owns
	// the cluster.
	ReasonOwnedByCKE = "OWNED_BY_CKE"
	// ReasonCKEIntegrationActive: ckegen owns the integration, but CKE's
	// own was enabled again (sabakan/disabled is not true).
	ReasonCKEIntegrationActive = "CKE_INTEGRATION_ACTIVE"
	// ReasonCKENotReady: CKE's server is busy (its status phase is not
	// completed or reboot-nodes) or its status is stale.
	ReasonCKENotReady = "CKE_NOT_READY"
	// ReasonInvalidOwner: sabakan/owner or ckegen's switch holds a value
	// that does not parse.
	ReasonInvalidOwner = "INVALID_OWNER"
)

// ResultHeld is the result of a tick that held back.
const ResultHeld = "held"

// Modes of the daemon.
const (
	ModeStandalone = storage.ModeStandalone
	ModeBesideCKE  = storage.ModeBesideCKE
)

// DefaultCKEStatusMaxAge is how old CKE's status may be for ckegen to
// write beside a CKE server.
const DefaultCKEStatusMaxAge = 10 * time.Minute

// hold is why a tick writes nothing although nothing failed.
type hold struct {
	reason, msg string
}

// modeOf is the daemon's mode given what the snapshot read.
func modeOf(own storage.Ownership) string {
	if own.CKEServer {
		return ModeBesideCKE
	}
	return ModeStandalone
}

// gate decides from the ownership keys whether a tick may go on (docs/beside-cke.md):
// it holds when a CKE server owns the integration or it was handed back to
// CKE (an explicit sabakan/owner: cke, even with no CKE server running: a
// server that restarts, upgrades or exits after its first Generate leaves
// leader/ empty for a while, and ckegen must not write then), when CKE's own
// integration was re-enabled while ckegen owns it, and beside a CKE server
// while that server is not at rest; otherwise it returns the switch in
// force: ckegen's own while ckegen owns the integration, CKE's
// sabakan/disabled standalone. hasCluster: a cluster is stored (with none,
// ckegen may Generate whatever CKE's phase, as CKE's integration does).
func (d *Daemon) gate(own storage.Ownership, hasCluster bool, now time.Time) (disabled bool, h *hold) {
	switch {
	case own.OwnedByCKEGen() && !own.CKEDisabled:
		return false, &hold{ReasonCKEIntegrationActive, "ckegen owns the integration (sabakan/owner: ckegen), but CKE's own integration is enabled again " +
			"(sabakan/disabled is not true): both would write the cluster, so ckegen writes nothing; " +
			"run ckecli sabakan takeover to stop CKE's, or ckecli sabakan handback to give the integration back"}
	case own.OwnedByCKEGen():
		disabled = own.CKEGenDisabled
	case own.CKEServer:
		return false, &hold{ReasonOwnedByCKE, "a CKE server holds leader/ and its own sabakan integration owns the cluster " +
			"(sabakan/owner is cke or not set), so ckegen writes nothing; " +
			"see what ckegen would do with ckecli sabakan takeover --dry-run, then take over with ckecli sabakan takeover"}
	case own.HandedBack():
		return false, &hold{ReasonOwnedByCKE, "the integration was handed back to CKE (sabakan/owner: cke), so ckegen writes nothing, " +
			"also while no CKE server holds leader/ (it may be restarting); take over again with ckecli sabakan takeover"}
	default:
		disabled = own.CKEDisabled
	}
	if disabled || !own.CKEServer || !hasCluster {
		return disabled, nil
	}
	return false, d.ckePace(own.CKEStatus, now)
}

// ckePace holds while CKE's server is not at rest: as CKE's own
// integration, ckegen changes the cluster only while CKE's status says
// completed or reboot-nodes, and only while that status is fresh.
func (d *Daemon) ckePace(st *storage.CKEStatus, now time.Time) *hold {
	if st == nil {
		return &hold{ReasonCKENotReady, "CKE's server has written no status yet: ckegen waits for it to reach phase completed"}
	}
	age := now.Sub(st.Timestamp).Truncate(time.Second)
	if st.Phase != "completed" && st.Phase != "reboot-nodes" {
		phase := st.Phase
		if phase == "" {
			phase = "(none)"
		}
		return &hold{ReasonCKENotReady, fmt.Sprintf("CKE's server is in phase %s (status written %s ago): ckegen writes only in phase completed or reboot-nodes, as CKE's own integration does", phase, age)}
	}
	if age > d.cfg.CKEStatusMaxAge {
		return &hold{ReasonCKENotReady, fmt.Sprintf("CKE's status (phase %s) is %s old, over --cke-status-max-age %s: its server may be stuck", st.Phase, age, d.cfg.CKEStatusMaxAge)}
	}
	return nil
}

// ownerMetrics export ckegen_leader everywhere, cke_leader only
// standalone (beside a CKE server, cke_leader is that server's), whether
// the daemon runs standalone, and on the leader the reason it holds back
// or the reason its last tick failed.
type ownerMetrics struct {
	ckegenLeader, ckeLeader, standalone, held, failing *prometheus.Desc

	mu      sync.Mutex
	leading bool
	// mode is "" until known.
	mode   string
	reason string
	// failure is the reason code of the last tick when it failed.
	failure string
}

func newOwnerMetrics() *ownerMetrics {
	return &ownerMetrics{
		ckegenLeader: prometheus.NewDesc("ckegen_leader", "True (=1) if this daemon leads ckegen's election.", nil, nil),
		ckeLeader: prometheus.NewDesc("cke_leader",
			"True (=1) if this daemon is the leader; exported only standalone, where ckegen stands in for CKE's server.", nil, nil),
		standalone: prometheus.NewDesc("ckegen_standalone",
			"1 when no CKE server holds leader/ (ckegen runs standalone), 0 beside a CKE server.", nil, nil),
		held: prometheus.NewDesc("ckegen_integration_held",
			"1 on the leader while its ticks hold back on purpose, by reason (OWNED_BY_CKE, CKE_INTEGRATION_ACTIVE, CKE_NOT_READY).",
			[]string{"reason"}, nil),
		failing: prometheus.NewDesc("ckegen_integration_failing",
			"1 on the leader while its last tick failed, by reason code (SABAKAN_UNREACHABLE, TOO_MANY_UNHEALTHY, CLUSTER_TOO_LARGE, ...; README \"The daemon\").",
			[]string{"reason"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (m *ownerMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.ckegenLeader
	ch <- m.ckeLeader
	ch <- m.standalone
	ch <- m.held
	ch <- m.failing
}

// Collect implements prometheus.Collector.
func (m *ownerMetrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	defer m.mu.Unlock()
	leader := 0.0
	if m.leading {
		leader = 1
	}
	ch <- prometheus.MustNewConstMetric(m.ckegenLeader, prometheus.GaugeValue, leader)
	if m.mode != ModeBesideCKE {
		ch <- prometheus.MustNewConstMetric(m.ckeLeader, prometheus.GaugeValue, leader)
	}
	if m.mode != "" {
		v := 0.0
		if m.mode == ModeStandalone {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(m.standalone, prometheus.GaugeValue, v)
	}
	if m.leading && m.reason != "" {
		ch <- prometheus.MustNewConstMetric(m.held, prometheus.GaugeValue, 1, m.reason)
	}
	if m.leading && m.failure != "" {
		ch <- prometheus.MustNewConstMetric(m.failing, prometheus.GaugeValue, 1, m.failure)
	}
}

func (m *ownerMetrics) setLeading(leading bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.leading = leading
	if !leading {
		m.reason, m.failure = "", ""
	}
}

// setMode records the mode as a tick or a follower's check saw it.
func (m *ownerMetrics) setMode(mode string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mode = mode
}

// observe records a tick's status.
func (m *ownerMetrics) observe(st storage.Status) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if st.Mode != "" {
		m.mode = st.Mode
	}
	m.reason, m.failure = "", ""
	switch st.Result {
	case ResultHeld:
		m.reason = st.Reason
	case ResultFailing:
		m.failure = st.Reason
	}
}

// modeCheckEvery is how often a daemon that does not lead looks for a CKE
// server, so that its cke_leader follows the mode; the leader learns it at
// every tick.
const modeCheckEvery = 15 * time.Second

// watchMode keeps the mode known while the daemon does not lead.
func (d *Daemon) watchMode(ctx context.Context) {
	st := d.cfg.Storage
	for {
		if !d.Leading() {
			cctx, cancel := context.WithTimeout(ctx, HealthTimeout)
			resp, err := st.Client.Get(cctx, st.Key(storage.KeyLeader), clientv3.WithPrefix(), clientv3.WithCountOnly())
			cancel()
			if err == nil {
				d.metrics.owner.setMode(modeOf(storage.Ownership{CKEServer: resp.Count > 0}))
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(min(modeCheckEvery, d.cfg.Interval)):
		}
	}
}
