package decision

import (
	"log/slog"
	"time"

	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/sabakan"
	"github.com/ckegen/ckegen/storage"
)

// Config is what a host configures of the integration, built once from
// its flags and defaults (WithDefaults): the step runs and decides with
// it, and the memory keeps the leader's copy (Memory.Leader), which the
// views that decide as the leader does take.
type Config struct {
	// Name is the leader's name the status shows.
	Name string `json:"-"`
	// Mode is ModeInsideCKE for a step run by CKE's server; "" for
	// ckegen's daemon, whose mode (standalone or beside CKE) each tick
	// reads from etcd.
	Mode string `json:"mode,omitempty"`
	// RetireWait is how long a worker stays RETIRED before it leaves.
	RetireWait storage.Duration `json:"retireWait,omitempty"`
	// CKEStatusMaxAge is how old CKE's status may be for ckegen to write
	// beside a CKE server (docs/beside-cke.md).
	CKEStatusMaxAge storage.Duration `json:"ckeStatusMaxAge,omitempty"`
	// MaxClusterBytes is etcd's request size limit, and WriteOverhead
	// what the cluster write's request holds besides the cluster (the
	// step sets it for its leader key): a larger cluster is refused with
	// CLUSTER_TOO_LARGE instead of failing in etcd.
	MaxClusterBytes int `json:"maxClusterBytes,omitempty"`
	WriteOverhead   int `json:"writeOverhead,omitempty"`
	// Interval is the host's pace: a tick runs again after it at the
	// latest. MinBackoff is the first wait after a failure, doubling up
	// to Interval.
	Interval   storage.Duration `json:"interval,omitempty"`
	MinBackoff storage.Duration `json:"minBackoff,omitempty"`
	// MaxSteps bounds the plan: its steps from the cluster as read, the
	// step the tick writes first.
	MaxSteps int `json:"-"`
	// Sabakan configures the sabakan client (timeout, TLS).
	Sabakan sabakan.Options `json:"-"`
	// Now is the clock: every time of the step comes from it.
	Now func() time.Time `json:"-"`
	Log *slog.Logger     `json:"-"`
}

// Defaults of Config.
const (
	DefaultMaxClusterBytes = 1536 * 1024 // etcd's default --max-request-bytes
	DefaultCKEStatusMaxAge = 10 * time.Minute
	DefaultRetireWait      = generator.DefaultRetireWait
	DefaultInterval        = time.Minute
	DefaultMinBackoff      = 5 * time.Second
)

// WithDefaults is c with its zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	def := func(d *storage.Duration, v time.Duration) {
		if *d <= 0 {
			*d = storage.Duration(v)
		}
	}
	if c.RetireWait == 0 {
		// A negative retire wait is the generator's to refuse.
		c.RetireWait = storage.Duration(DefaultRetireWait)
	}
	def(&c.CKEStatusMaxAge, DefaultCKEStatusMaxAge)
	def(&c.Interval, DefaultInterval)
	def(&c.MinBackoff, DefaultMinBackoff)
	if c.MaxClusterBytes <= 0 {
		c.MaxClusterBytes = DefaultMaxClusterBytes
	}
	if c.MaxSteps <= 0 {
		c.MaxSteps = generator.DefaultMaxSteps
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
	return c
}
