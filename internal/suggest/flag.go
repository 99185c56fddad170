package suggest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/spf13/pflag"
)

// Suggested is the annotation of a hidden flag that is still suggested
// for a name near it: an older spelling that scripts use (ckegenctl's
// --endpoints for --etcd-endpoints). Give it any value.
const Suggested = "suggest-hidden-flag"

// FlagError adds "did you mean" to a parse error of fs about a flag that
// does not exist: `--etcd-endpoint` gets "did you mean --etcd-endpoints?",
// and a long flag written with one dash (`-listen`, which the parser reads
// as the shorthands l, i, s, ...) gets "flags take two dashes: did you mean
// --listen?". The flags suggested are those of For, and else those whose
// last words are within MaxTypo edits of the name (`--endpiont`: "did you
// mean --etcd-endpoints?"). Other errors, and names near no flag, are
// returned as they are. Hidden and deprecated flags are never suggested,
// but for hidden ones annotated Suggested.
func FlagError(fs *pflag.FlagSet, err error) error {
	var ne *pflag.NotExistError
	if fs == nil || err == nil || !errors.As(err, &ne) {
		return err
	}
	var known []string
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Deprecated == "" && (!f.Hidden || f.Annotations[Suggested] != nil) {
			known = append(known, f.Name)
		}
	})
	if group := ne.GetSpecifiedShortnames(); group != "" {
		// -listen or -listen=x: one dash before a long name.
		name, _, _ := strings.Cut(group, "=")
		if utf8.RuneCountInString(name) < 2 {
			return err
		}
		if slices.Contains(known, name) {
			return fmt.Errorf("%w; flags take two dashes: did you mean --%s?", err, name)
		}
		if s := flagsFor(name, known); len(s) > 0 {
			return fmt.Errorf("%w; flags take two dashes: did you mean %s?", err, Or("--", s))
		}
		return err
	}
	name, _, _ := strings.Cut(ne.GetSpecifiedName(), "=")
	if s := flagsFor(name, known); len(s) > 0 {
		return fmt.Errorf("%w; did you mean %s?", err, Or("--", s))
	}
	return err
}

// flagsFor are the flags of known to suggest for name: For's, else the
// flags whose last words (after a "-") are nearest name, within MaxTypo
// edits (--endpiont: etcd-endpoints, whose last word is endpoints).
func flagsFor(name string, known []string) []string {
	if s := For(name, known); len(s) > 0 {
		return s
	}
	lower := strings.ToLower(name)
	n := utf8.RuneCountInString(name)
	return nearest(known, func(k string) int {
		best := MaxTypo + 1
		for i, c := range k {
			if c != '-' {
				continue
			}
			if d := Distance(lower, strings.ToLower(k[i+1:])); d < best && d < n {
				best = d
			}
		}
		return best
	})
}

// For is what to suggest for name, a flag or a command that is not known:
// the names of known within MaxTypo edits (Near), else the one name of
// known that starts with name when name has three characters or more
// (--machine: machines; --etcd: etcd-endpoints). Nil when there is none.
func For(name string, known []string) []string {
	if s := Near(name, known); len(s) > 0 {
		return s
	}
	var prefixed []string
	for _, k := range known {
		if utf8.RuneCountInString(name) >= 3 && strings.HasPrefix(strings.ToLower(k), strings.ToLower(name)) {
			prefixed = append(prefixed, k)
		}
	}
	if len(prefixed) == 1 {
		return prefixed
	}
	return nil
}

// OneDash refuses a long flag of fs written with one dash in args
// (-interval, -http=x, as Go's flag package takes them), which pflag
// would read as shorthands: -interval fails on i, but -http is -h, a
// request for help that exits 0 with the command line unread. Arguments
// after "--" are not looked at.
func OneDash(fs *pflag.FlagSet, args []string) error {
	for _, a := range args {
		if a == "--" {
			return nil
		}
		if len(a) < 3 || a[0] != '-' || a[1] == '-' {
			continue
		}
		if name, _, _ := strings.Cut(a[1:], "="); fs.Lookup(name) != nil {
			return fmt.Errorf("%s: flags take two dashes: did you mean --%s?", a, name)
		}
	}
	return nil
}
