package daemon

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ckegen/ckegen/internal/version"
)

// HealthTimeout bounds the etcd request behind /health.
const HealthTimeout = 2 * time.Second

// Secure wraps the daemon's HTTP handler: no body is read beyond 1 MiB
// (every endpoint is a GET), and no answer is sniffed or sends a referrer.
func Secure(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "no-referrer")
		h.ServeHTTP(w, r)
	})
}

// Handler returns a new mux serving the daemon's HTTP API as CKE's
// (/metrics, /health, /version); more handlers can be added to it.
// /metrics serves the daemon's registry and ckegen_build_info with the
// mode "daemon"; /version names ckegen's version and commit and the CKE
// release it is built for.
func (d *Daemon) Handler() *http.ServeMux {
	build := prometheus.NewRegistry()
	build.MustRegister(version.BuildInfo(version.ModeDaemon))
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(prometheus.Gatherers{d.cfg.Registry, build}, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /health", d.serveHealth)
	mux.HandleFunc("GET /version", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, version.Current())
	})
	return mux
}

// serveHealth answers as CKE does, {"health":"healthy"} with 200 while
// etcd answers and {"health":"unhealthy"} with 500 when it does not;
// ckegen's own detail is in the other keys: etcd (ok or the error),
// leader, and the last tick's status when this daemon leads.
func (d *Daemon) serveHealth(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), HealthTimeout)
	defer cancel()
	st := d.cfg.Storage
	body := map[string]any{"health": "healthy", "etcd": "ok", "leader": d.Leading()}
	code := http.StatusOK
	if _, err := st.Client.Get(ctx, st.Key("health")); err != nil {
		code = http.StatusInternalServerError
		body["health"], body["etcd"] = "unhealthy", err.Error()
	}
	if last := d.Status(); d.Leading() && !last.Time.IsZero() {
		body["lastTick"] = last
	}
	writeJSON(w, code, body)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
