package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ckegen/ckegen/internal/version"
	"github.com/ckegen/ckegen/storage"
)

// warnSkew warns once per run, on w, when the ckegen that leads (its
// daemon, or CKE's server with ckegen inside, as its record of presence
// says) is of another minor version than this ckegenctl: the two may not
// read each other's records alike (docs/install.md). Versions that are
// not vMAJOR.MINOR.PATCH (a development build) are not compared. A
// failure to read is no warning: the command itself reads etcd next and
// says what failed.
func (e *env) warnSkew(ctx context.Context, st storage.Storage, w io.Writer) {
	if e.skewChecked {
		return
	}
	e.skewChecked = true
	l, err := st.ReadLeaders(ctx)
	if err != nil {
		return
	}
	if msg := skewWarning(l, version.String()); msg != "" {
		fmt.Fprintln(w, msg)
	}
}

// skewWarning is the warning for a ckegenctl of version mine beside the
// leaders l ("": none).
func skewWarning(l storage.Leaders, mine string) string {
	var p storage.Presence
	var where string
	switch {
	case l.CKEGen != nil && hasPresence(l, l.CKEGen):
		p, where = l.Presences[l.CKEGen.Lease], "ckegen's leading daemon"
	case l.CKE != nil && hasPresence(l, l.CKE):
		p, where = l.Presences[l.CKE.Lease], "CKE's leading server (ckegen inside)"
	default:
		return ""
	}
	theirs, ok1 := minor(p.Version)
	ours, ok2 := minor(mine)
	if !ok1 || !ok2 || theirs == ours {
		return ""
	}
	return fmt.Sprintf("warning: this ckegenctl is %s, and %s %s runs ckegen %s: their minor versions differ; use a ckegenctl of the leader's release (docs/install.md)",
		mine, where, p.Name, p.Version)
}

func hasPresence(l storage.Leaders, e *storage.Elected) bool {
	_, ok := l.Presences[e.Lease]
	return ok
}

// minor is "MAJOR.MINOR" of vMAJOR.MINOR.PATCH[-...]; false when v is not
// such a version.
func minor(v string) (string, bool) {
	f := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	if !strings.HasPrefix(v, "v") || len(f) != 3 {
		return "", false
	}
	for _, n := range f[:2] {
		if _, err := strconv.Atoi(n); err != nil {
			return "", false
		}
	}
	return f[0] + "." + f[1], true
}
