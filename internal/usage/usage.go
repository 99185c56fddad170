// Package usage is how every binary of ckegen (ckegen, ckegenctl,
// fakesabakan, demo, and cke) tells a command line it refuses from a
// failure: exit status 2 for the first, as Go's flag package has it, 1 for
// the second, 0 on success; and how the cobra-based ones print their
// version and suggest flags.
package usage

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ckegen/ckegen/internal/suggest"
	"github.com/ckegen/ckegen/internal/version"
)

// The exit statuses of every binary.
const (
	ExitFailure = 1
	ExitUsage   = 2
)

// Help says the exit statuses, for the --help of a binary that takes
// flags only.
const Help = `Exit status: 0 on success, 1 on failure, 2 on a usage error (an unknown
flag, a flag value refused, an argument where none is taken), as every
ckegen binary.`

// HelpCommands is Help for a binary with commands.
const HelpCommands = `Exit status: 0 on success, 1 on failure, 2 on a usage error (an unknown
command or flag, a wrong number of arguments, a flag value refused), as
every ckegen binary.`

// Error is an error in how a binary was called: an unknown command or
// flag, a wrong number of arguments, a flag value refused or flags that
// do not go together. Its text is the wrapped error's.
type Error struct{ err error }

func (e *Error) Error() string { return e.err.Error() }
func (e *Error) Unwrap() error { return e.err }

// Errorf is an *Error.
func Errorf(format string, args ...any) error {
	return &Error{fmt.Errorf(format, args...)}
}

// Wrap makes err an *Error; nil stays nil.
func Wrap(err error) error {
	if err == nil {
		return nil
	}
	return &Error{err}
}

// Code is the exit status for err, the error a run ended with: 0 for nil,
// ExitUsage for an *Error, ExitFailure for any other.
func Code(err error) int {
	var ue *Error
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		return ExitUsage
	}
	return ExitFailure
}

// Cobra gives cmd, the root of a cobra-based binary called name, the
// conventions of every binary: --version prints version.Line(name); an
// unknown flag gets suggest.FlagError's "did you mean"; flag errors and
// the errors of every command's check of its arguments are *Errors. Call
// it once the commands are added.
func Cobra(cmd *cobra.Command, name string) {
	cmd.Version = version.Line(name)
	cmd.SetVersionTemplate("{{.Version}}\n")
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return Wrap(suggest.FlagError(c.Flags(), err))
	})
	wrapArgs(cmd)
}

// wrapArgs makes the errors of the argument checks of cmd and the
// commands under it *Errors.
func wrapArgs(cmd *cobra.Command) {
	if check := cmd.Args; check != nil {
		cmd.Args = func(c *cobra.Command, args []string) error {
			return Wrap(check(c, args))
		}
	}
	for _, c := range cmd.Commands() {
		wrapArgs(c)
	}
}
