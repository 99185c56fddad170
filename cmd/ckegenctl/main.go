// Command ckegenctl controls ckegen: it stores the template, URL, query
// variables and constraints the daemon works from, shows what it produced,
// and runs the generator offline with `ckegenctl sabakan generate`.
package main

import (
	"bytes"
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
//
// What a command prints goes out in one write when it ends. A script
// that stops reading at the line it waits for, `ckegenctl sabakan status |
// grep -q '^RESULT *ok'` under `set -o pipefail`, then finds the whole
// output in the pipe (up to the pipe's 64 KiB) instead of killing
// ckegenctl with SIGPIPE at its second write and failing the pipeline.
// No command prompts or streams, so nothing waits on the buffer.
func runWithConfig(configFile string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cmd := newRootCmd(configFile)
	var out bytes.Buffer
	err := oneDashFlag(cmd, args)
	if err == nil {
		cmd.SetArgs(args)
		cmd.SetIn(stdin)
		cmd.SetOut(&out)
		cmd.SetErr(stderr)
		err = cmd.Execute()
	}
	if _, werr := stdout.Write(out.Bytes()); werr != nil && err == nil {
		err = fmt.Errorf("writing the output: %w", werr)
	}
	if err != nil && !errors.Is(err, errReported) {
		fmt.Fprintf(stderr, "ckegenctl: %v\n", err)
	}
	return usage.Code(err)
}
