package daemon

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/intake"

	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/ckegen/ckegen/internal/version"
	"github.com/ckegen/ckegen/storage"
)

// leaderMetrics export ckegen_leader everywhere, cke_leader only
// standalone (beside a CKE server, cke_leader is that server's), and
// whether the daemon runs standalone.
type leaderMetrics struct {
	ckegenLeader, ckeLeader, standalone *prometheus.Desc

	mu      sync.Mutex
	leading bool
	// mode is "" until known.
	mode string
}

func newLeaderMetrics() *leaderMetrics {
	return &leaderMetrics{
		ckegenLeader: prometheus.NewDesc("ckegen_leader", "True (=1) if this daemon leads ckegen's election.", nil, nil),
		ckeLeader: prometheus.NewDesc("cke_leader",
			"True (=1) if this daemon is the leader; exported only standalone, where ckegen stands in for CKE's server.", nil, nil),
		standalone: prometheus.NewDesc("ckegen_standalone",
			"1 when no CKE server holds leader/ (ckegen runs standalone), 0 beside a CKE server.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (m *leaderMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.ckegenLeader
	ch <- m.ckeLeader
	ch <- m.standalone
}

// Collect implements prometheus.Collector.
func (m *leaderMetrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	defer m.mu.Unlock()
	leader := 0.0
	if m.leading {
		leader = 1
	}
	ch <- prometheus.MustNewConstMetric(m.ckegenLeader, prometheus.GaugeValue, leader)
	if m.mode != decision.ModeBesideCKE {
		ch <- prometheus.MustNewConstMetric(m.ckeLeader, prometheus.GaugeValue, leader)
	}
	if m.mode != "" {
		v := 0.0
		if m.mode == decision.ModeStandalone {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(m.standalone, prometheus.GaugeValue, v)
	}
}

func (m *leaderMetrics) setLeading(leading bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.leading = leading
}

// setMode records the mode as a tick or a follower's check saw it ("":
// not known, kept as it was).
func (m *leaderMetrics) setMode(mode string) {
	if mode == "" {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mode = mode
}

// announce records the daemon, its name and build, under its session's
// lease, which names its election key too: whoever reads ckegen's
// election finds its version there, and the record goes with the
// session (storage.Presence).
func (d *Daemon) announce(ctx context.Context, sess *concurrency.Session) error {
	v := version.Current()
	p := storage.Presence{Name: d.cfg.Name, Kind: storage.PresenceDaemon, Version: v.Version, Commit: v.Commit,
		CKEVersion: v.CKEVersion, Since: d.cfg.Now().UTC()}
	if err := d.cfg.Storage.PutPresence(ctx, sess.Lease(), p); err != nil {
		return fmt.Errorf("recording the daemon's presence: %w", err)
	}
	return nil
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
				d.leader.setMode(decision.ModeOf("", intake.Ownership{CKEServer: resp.Count > 0}))
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(min(modeCheckEvery, time.Duration(d.cfg.Interval))):
		}
	}
}
