package main

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// faults breaks /graphql on purpose, for failure tests. It is not part of
// sabakan's API and is off unless --faults is given.
type faults struct {
	mu    sync.Mutex
	mode  string
	delay time.Duration
}

// withFaults serves PUT /-/fault with a body of "none", "slow DURATION",
// "garbage" (a 200 response that is not JSON) or "error" (HTTP 500), and
// applies the mode to /graphql.
func withFaults(next http.Handler) http.Handler {
	f := &faults{mode: "none"}
	mux := http.NewServeMux()
	mux.HandleFunc("PUT /-/fault", func(w http.ResponseWriter, r *http.Request) {
		// A mode is a few words: a longer body is refused, not read.
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1024))
		if err != nil {
			http.Error(w, "a fault mode is at most 1 KiB: "+err.Error(), http.StatusRequestEntityTooLarge)
			return
		}
		fields := strings.Fields(string(body))
		if len(fields) == 0 {
			http.Error(w, "want none, slow DURATION, garbage or error", http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		switch {
		case fields[0] == "slow" && len(fields) == 2:
			d, err := time.ParseDuration(fields[1])
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			f.mode, f.delay = "slow", d
		case len(fields) == 1 && (fields[0] == "none" || fields[0] == "garbage" || fields[0] == "error"):
			f.mode = fields[0]
		default:
			http.Error(w, fmt.Sprintf("unknown fault %q", body), http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	mux.HandleFunc("/graphql", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		mode, delay := f.mode, f.delay
		f.mu.Unlock()
		switch mode {
		case "slow":
			select {
			case <-time.After(delay):
			case <-r.Context().Done():
				return
			}
		case "garbage":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"data": {"searchMachines": [{"spec":`)
			return
		case "error":
			http.Error(w, "injected failure", http.StatusInternalServerError)
			return
		}
		next.ServeHTTP(w, r)
	})
	mux.Handle("/", next)
	return mux
}
