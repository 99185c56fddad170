// Command ckegenctl controls ckegen: it stores the template, URL, query
// variables and constraints the daemon works from, shows what it produced,
// and runs the generator offline with `ckegenctl sabakan generate`.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// errReported is returned by a command that has already written its error
// (as JSON, say); main only sets the exit status.
var errReported = errors.New("error already reported")

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runWithConfig(defaultConfigFile, args, stdin, stdout, stderr)
}

// runWithConfig runs ckegenctl with configFile in place of CKE's default
// configuration file.
func runWithConfig(configFile string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cmd := newRootCmd(configFile)
	err := oneDashFlag(cmd, args)
	if err == nil {
		cmd.SetArgs(args)
		cmd.SetIn(stdin)
		cmd.SetOut(stdout)
		cmd.SetErr(stderr)
		err = cmd.Execute()
	}
	if err != nil && !errors.Is(err, errReported) {
		fmt.Fprintf(stderr, "ckegenctl: %v\n", err)
	}
	return exitCode(err)
}

// Exit statuses: 0 on success, exitUsage when ckegenctl was called wrong
// (a usageError), exitFailure on any other error.
const (
	exitFailure = 1
	exitUsage   = 2
)

// exitCode is the exit status for err, the error of a run.
func exitCode(err error) int {
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		return exitUsage
	}
	return exitFailure
}
