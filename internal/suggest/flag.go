package suggest

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"
)

// FlagError adds "did you mean" to a parse error of fs about a flag that
// does not exist: `--etcd-endpoint` gets "did you mean --etcd-endpoints?",
// and a long flag written with one dash (`-listen`, which the parser reads
// as the shorthands l, i, s, ...) gets "flags take two dashes: did you mean
// --listen?". Other errors, and names near no flag, are returned as they
// are. Hidden and deprecated flags are never suggested.
func FlagError(fs *pflag.FlagSet, err error) error {
	var ne *pflag.NotExistError
	if fs == nil || err == nil || !errors.As(err, &ne) {
		return err
	}
	var known []string
	fs.VisitAll(func(f *pflag.Flag) {
		if !f.Hidden && f.Deprecated == "" {
			known = append(known, f.Name)
		}
	})
	if group := ne.GetSpecifiedShortnames(); group != "" {
		// -listen or -listen=x: one dash before a long name.
		name, _, _ := strings.Cut(group, "=")
		for _, k := range known {
			if k == name {
				return fmt.Errorf("%w; flags take two dashes: did you mean --%s?", err, k)
			}
		}
		if s, ok := Closest(name, known); ok && len(name) > 1 {
			return fmt.Errorf("%w; flags take two dashes: did you mean --%s?", err, s)
		}
		return err
	}
	name, _, _ := strings.Cut(ne.GetSpecifiedName(), "=")
	if s, ok := Closest(name, known); ok {
		return fmt.Errorf("%w; did you mean --%s?", err, s)
	}
	// A name that is the start of exactly one flag (--machine for
	// --machines, --etcd for --etcd-endpoints) is most likely that flag.
	var prefixed []string
	for _, k := range known {
		if len(name) >= 3 && strings.HasPrefix(k, name) {
			prefixed = append(prefixed, k)
		}
	}
	if len(prefixed) == 1 {
		return fmt.Errorf("%w; did you mean --%s?", err, prefixed[0])
	}
	return err
}
