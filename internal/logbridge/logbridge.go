// Package logbridge sends the log/slog events of ckegen's packages and the
// zap log of etcd's libraries to one logger: cybozu-go/log's, which
// github.com/cybozu-go/well configures from CKE's --logfile, --loglevel
// and --logformat flags.
package logbridge

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/cybozu-go/log"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// NewHandler returns a slog.Handler that writes to l. Attribute keys
// become l's field names (lower case letters, digits and '_'; a group's
// name and '_' before its attributes); slog's levels map to l's
// severities (ERROR: error, WARN: warning, INFO: info, DEBUG: debug).
func NewHandler(l *log.Logger) slog.Handler {
	return &handler{l: l}
}

type handler struct {
	l      *log.Logger
	prefix string         // the open groups' names, each followed by '_'
	fields map[string]any // from WithAttrs
}

func (h *handler) Enabled(_ context.Context, level slog.Level) bool {
	return h.l.Enabled(severity(level))
}

func (h *handler) Handle(_ context.Context, r slog.Record) error {
	fields := make(map[string]any, len(h.fields)+r.NumAttrs())
	maps.Copy(fields, h.fields)
	r.Attrs(func(a slog.Attr) bool {
		addField(fields, h.prefix, a)
		return true
	})
	return h.l.Log(severity(r.Level), r.Message, fields)
}

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	fields := maps.Clone(h.fields)
	if fields == nil {
		fields = make(map[string]any, len(attrs))
	}
	for _, a := range attrs {
		addField(fields, h.prefix, a)
	}
	return &handler{l: h.l, prefix: h.prefix, fields: fields}
}

func (h *handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &handler{l: h.l, prefix: h.prefix + name + "_", fields: h.fields}
}

func addField(fields map[string]any, prefix string, a slog.Attr) {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return
	}
	if a.Value.Kind() == slog.KindGroup {
		if a.Key != "" {
			prefix += a.Key + "_"
		}
		for _, g := range a.Value.Group() {
			addField(fields, prefix, g)
		}
		return
	}
	fields[fieldName(prefix+a.Key)] = fieldValue(a.Value)
}

// fieldName makes k a valid field name: lower case, characters other than
// letters, digits and '_' replaced by '_', and a leading '_' when it
// would start with a digit or be one of the names the formats reserve.
func fieldName(k string) string {
	k = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_':
			return r
		case r >= 'A' && r <= 'Z':
			return r - 'A' + 'a'
		}
		return '_'
	}, k)
	if k == "" || (k[0] >= '0' && k[0] <= '9') || log.ReservedKey(k) {
		k = "_" + k
	}
	return k
}

func fieldValue(v slog.Value) any {
	switch v.Kind() {
	case slog.KindDuration:
		return v.Duration().String()
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return err.Error()
		}
	}
	return v.Any()
}

func severity(level slog.Level) int {
	switch {
	case level >= slog.LevelError:
		return log.LvError
	case level >= slog.LevelWarn:
		return log.LvWarn
	case level >= slog.LevelInfo:
		return log.LvInfo
	}
	return log.LvDebug
}

// NewZap returns a zap logger that passes its entries at level and above
// to h, each field an attribute (in key order).
func NewZap(h slog.Handler, level zapcore.Level) *zap.Logger {
	return zap.New(&zapCore{h: h, level: level})
}

type zapCore struct {
	h      slog.Handler
	level  zapcore.Level
	fields []zapcore.Field
}

func (c *zapCore) Enabled(l zapcore.Level) bool {
	return l >= c.level && c.h.Enabled(context.Background(), slogLevel(l))
}

func (c *zapCore) With(fs []zapcore.Field) zapcore.Core {
	return &zapCore{h: c.h, level: c.level, fields: append(slices.Clip(c.fields), fs...)}
}

func (c *zapCore) Check(ent zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(ent.Level) {
		return ce.AddCore(ent, c)
	}
	return ce
}

func (c *zapCore) Write(ent zapcore.Entry, fs []zapcore.Field) error {
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range c.fields {
		f.AddTo(enc)
	}
	for _, f := range fs {
		f.AddTo(enc)
	}
	r := slog.NewRecord(ent.Time, slogLevel(ent.Level), ent.Message, 0)
	if ent.LoggerName != "" {
		r.AddAttrs(slog.String("logger", ent.LoggerName))
	}
	for _, k := range slices.Sorted(maps.Keys(enc.Fields)) {
		r.AddAttrs(slog.Any(k, enc.Fields[k]))
	}
	return c.h.Handle(context.Background(), r)
}

func (c *zapCore) Sync() error { return nil }

func slogLevel(l zapcore.Level) slog.Level {
	switch {
	case l >= zapcore.ErrorLevel:
		return slog.LevelError
	case l >= zapcore.WarnLevel:
		return slog.LevelWarn
	case l >= zapcore.InfoLevel:
		return slog.LevelInfo
	}
	return slog.LevelDebug
}
