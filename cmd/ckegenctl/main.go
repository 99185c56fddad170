// Command ckegenctl controls ckegen: it stores the template, URL, query
// variables and constraints the daemon works from, shows what it produced,
// and runs the generator offline with `ckegenctl sabakan generate`.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/ckegen/ckegen/internal/usage"
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
	return usage.Code(err)
}
