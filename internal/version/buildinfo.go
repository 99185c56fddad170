package version

import "github.com/prometheus/client_golang/prometheus"

// CKEVersion is the CKE release ckegen is built for and tested against:
// the github.com/cybozu-go/cke requirement of ckeserver/go.mod, which
// `make bump-cke` moves, this constant with it (docs/inside-cke.md,
// "Keeping up with CKE").
const CKEVersion = "v1.35.4"

// The modes of ckegen_build_info: how the process runs ckegen. Each is
// constant for the life of a process.
const (
	// ModeDaemon is ckegen's own daemon, alone or beside CKE's server
	// (ckegen_standalone says which at the moment).
	ModeDaemon = "daemon"
	// ModeInsideCKE is cke built from ckeserver/: CKE's server with
	// ckegen as its sabakan integration.
	ModeInsideCKE = "inside-cke"
)

// Info names the running binary: ckegen's version and commit and the CKE
// release it is built for, as /version (the daemon) and /ckegen/version
// (inside CKE's server) answer them.
type Info struct {
	Version    string `json:"version"`
	Commit     string `json:"commit"`
	CKEVersion string `json:"cke_version"`
}

// Current is the running binary's Info.
func Current() Info {
	return Info{Version: String(), Commit: Commit(), CKEVersion: CKEVersion}
}

// BuildInfo is the gauge ckegen_build_info{version, commit, cke_version,
// mode}, always 1, that every binary serving /metrics exports, so that a
// scrape says which binary runs; mode is ModeDaemon or ModeInsideCKE.
func BuildInfo(mode string) prometheus.Collector {
	i := Current()
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "ckegen_build_info",
		Help: "Always 1: the ckegen version and commit of this binary, the CKE release it is built for, and how it runs ckegen (daemon, inside-cke).",
		ConstLabels: prometheus.Labels{
			"version": i.Version, "commit": i.Commit, "cke_version": i.CKEVersion, "mode": mode,
		},
	})
	g.Set(1)
	return g
}
