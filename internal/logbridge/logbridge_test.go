package logbridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/cybozu-go/log"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// jsonLogger is a cybozu-go/log logger writing JSON lines to buf.
func jsonLogger(buf *bytes.Buffer, level string) *log.Logger {
	l := log.NewLogger()
	l.SetOutput(buf)
	l.SetFormatter(log.JSONFormat{})
	if err := l.SetThresholdByName(level); err != nil {
		panic(err)
	}
	return l
}

func lines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		out = append(out, m)
	}
	return out
}

func TestHandler(t *testing.T) {
	var buf bytes.Buffer
	lg := slog.New(NewHandler(jsonLogger(&buf, "info")))
	lg.Debug("not shown")
	lg.With("name", "d1").WithGroup("tick").Info("cluster updated",
		"op", "new", "nodes", 23, "changes", []string{"add 10.0.0.1"}, "took", 1500*time.Millisecond,
		slog.Group("score", "total", 42), "error", errors.New("boom"),
		"lastTick", true, "message", "mine", "9lives", 1, "data-dir", "/x")
	lg.Warn("w")
	lg.Error("e")

	got := lines(t, &buf)
	if len(got) != 3 {
		t.Fatalf("%d lines, want 3 (debug dropped):\n%s", len(got), buf.String())
	}
	l := got[0]
	want := map[string]any{
		"message": "cluster updated", "severity": "info",
		"name": "d1", "tick_op": "new", "tick_nodes": 23.0, "tick_changes": []any{"add 10.0.0.1"},
		"tick_took": "1.5s", "tick_score_total": 42.0, "tick_error": "boom", "tick_lasttick": true,
		"tick_message": "mine", "tick_9lives": 1.0, "tick_data_dir": "/x",
	}
	for k, v := range want {
		if gv, _ := json.Marshal(l[k]); string(gv) != mustJSON(v) {
			t.Errorf("%s = %s, want %s", k, gv, mustJSON(v))
		}
	}
	if got[1]["severity"] != "warning" || got[2]["severity"] != "error" {
		t.Errorf("severities %v, %v", got[1]["severity"], got[2]["severity"])
	}

	// Keys that would be reserved or start with a digit at the top level.
	buf.Reset()
	slog.New(NewHandler(jsonLogger(&buf, "debug"))).Debug("d", "message", "m", "topic", "t", "1", 1)
	ls := lines(t, &buf)
	if len(ls) != 1 {
		t.Fatalf("%d lines, want 1:\n%s", len(ls), buf.String())
	}
	l = ls[0]
	if l["message"] != "d" || l["_message"] != "m" || l["_topic"] != "t" || l["_1"] != 1.0 || l["severity"] != "debug" {
		t.Errorf("line %v", l)
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestZap(t *testing.T) {
	var buf bytes.Buffer
	lg := NewZap(NewHandler(jsonLogger(&buf, "info")), zapcore.ErrorLevel).Named("etcd-client")
	lg.Warn("retrying", zap.Error(errors.New("unavailable")))
	lg.With(zap.String("member-id", "8e9e")).Error("serving failed", zap.Error(errors.New("disk full")), zap.Int("attempt", 3))
	got := lines(t, &buf)
	if len(got) != 1 {
		t.Fatalf("%d lines, want 1 (the warning is below the level):\n%s", len(got), buf.String())
	}
	l := got[0]
	if l["message"] != "serving failed" || l["severity"] != "error" || l["error"] != "disk full" ||
		l["member_id"] != "8e9e" || l["attempt"] != 3.0 || l["logger"] != "etcd-client" {
		t.Errorf("line %v", l)
	}
}
