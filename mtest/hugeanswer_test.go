package mtest

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestHugeAnswer: a sabakan that answers 400 MB (streamed, with no
// Content-Length) fails the tick with QUERY_ERROR, "answer larger than
// 128 MiB", without decoding it; the daemons' peak RSS stays under 1 GB,
// and the next good answer recovers.
func TestHugeAnswer(t *testing.T) {
	e := newEnv(t)
	e.converge(90 * time.Second)

	one := `{"spec":{"serial":"` + strings.Repeat("s", 200) + `","labels":[],"rack":1,"indexInRack":1,"role":"compute","ipv4":["10.0.0.1"],` +
		`"registerDate":"2024-01-01T00:00:00Z","retireDate":"2030-01-01T00:00:00Z","bmc":{"bmcType":"IPMI-2.0"}},"status":{"state":"HEALTHY","duration":1}},`
	const total = 400 << 20
	huge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		bw := bufio.NewWriterSize(w, 1<<20)
		_, _ = io.WriteString(bw, `{"data":{"searchMachines":[`)
		for n := 0; n < total; n += len(one) {
			if _, err := io.WriteString(bw, one); err != nil {
				return // the client stopped reading
			}
		}
		_, _ = io.WriteString(bw, `{}]}}`)
		_ = bw.Flush()
	}))
	defer huge.Close()

	e.mustCtl("sabakan", "set-url", huge.URL+"/graphql")
	st := e.waitStatus("failing", "QUERY_ERROR", "answer larger than 128 MiB (--sabakan-max-bytes)", 60*time.Second)
	t.Logf("status: %s", st.Message)
	for i, d := range e.daemons {
		hwm := peakRSS(t, d.cmd.Process.Pid)
		t.Logf("ckegen-%d peak RSS after a 400 MB answer: %d MiB", i, hwm>>20)
		if hwm >= 1<<30 {
			t.Errorf("ckegen-%d peak RSS %d MiB, want under 1 GiB", i, hwm>>20)
		}
	}
	e.mustCtl("sabakan", "set-url", "http://"+e.sabAddr)
	e.waitStatus("ok", "", "", 60*time.Second)
}

// peakRSS is a process's peak resident set size in bytes (VmHWM).
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("VmHWM %q: %v", v, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}
