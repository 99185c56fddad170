package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/internal/testutil/dcgen/dcfiles"
)

// A run of `ckegenctl sabakan generate` on the files of a synthetic data
// center (internal/testutil/dcgen/dcfiles) in the rate model, beside the
// reading of its input files alone: reading and decoding every file the
// run reads (intake.ReadFiles: the template, the machines, the
// constraints and, for an Update, the current cluster), without
// sanitizing, generating or writing anything. The run is to stay within a
// small multiple of that reading.

// filesRun is one run of the command on the files of dir: its arguments
// and the files it reads.
type filesRun struct {
	name  string
	args  []string
	files intake.Files
}

// filesRuns are the runs BenchmarkGenerateFiles times: Generate (a first
// cluster), Update from the count model's cluster in YAML (about 8,900
// workers added at 20,000 machines), and the same Update from and to JSON.
func filesRuns(dir string) []filesRun {
	path := func(name string) string { return filepath.Join(dir, name) }
	base := []string{"sabakan", "generate",
		"--template", path("template.yml"), "--machines", path("machines.json"),
		"--constraints", path("constraints-rate.json"),
		"--now", dcfiles.Now.Format(time.RFC3339)}
	files := func(current string) intake.Files {
		f := intake.Files{
			Template:    intake.File("--template", path("template.yml")),
			Machines:    intake.File("--machines", path("machines.json")),
			Constraints: intake.File("--constraints", path("constraints-rate.json")),
		}
		if current != "" {
			f.Current = intake.File("--current", path(current))
		}
		return f
	}
	return []filesRun{
		{"generate", append(base[:len(base):len(base)], "-o", "yaml"), files("")},
		{"update", append(base[:len(base):len(base)], "--current", path("current.yml"), "-o", "yaml"), files("current.yml")},
		{"update-json", append(base[:len(base):len(base)], "--current", path("current.json"), "-o", "json"), files("current.json")},
	}
}

// BenchmarkGenerateFiles times each run of filesRuns at 2,000 and 20,000
// machines (read: the reading of its files alone, with the command's
// collector settings; run: the command).
func BenchmarkGenerateFiles(b *testing.B) {
	for _, racks := range []int{50, 500} {
		dir := b.TempDir()
		if err := dcfiles.Write(dir, racks, "../../examples/template.yml"); err != nil {
			b.Fatal(err)
		}
		for _, r := range filesRuns(dir) {
			b.Run(fmt.Sprintf("machines=%d/%s/read", racks*40, r.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					fresh(b)
					// The command's collector settings, as in run.
					restore := collectLess(r.files.Machines.Path, r.files.Current.Path)
					_, _, err := intake.ReadFiles(r.files)
					restore()
					if err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(fmt.Sprintf("machines=%d/%s/run", racks*40, r.name), func(b *testing.B) {
				b.ReportAllocs()
				var stdout, stderr bytes.Buffer
				for b.Loop() {
					fresh(b)
					stdout.Reset()
					stderr.Reset()
					if code := run(r.args, strings.NewReader(""), &stdout, &stderr); code != 0 {
						b.Fatalf("exit %d: %s", code, stderr.String())
					}
				}
				b.SetBytes(int64(stdout.Len()))
			})
		}
	}
}

// fresh collects the garbage of the last run, outside the timer, so that
// each run starts as a process does: a run does not collect its own
// garbage (collectLess), and would meet the last one's.
func fresh(b *testing.B) {
	b.StopTimer()
	runtime.GC()
	b.StartTimer()
}

// TestMain runs the test binary as a command when CKEGENCTL_TEST_MODE says
// so, to time whole processes of the same binary:
//
//	CKEGENCTL_TEST_MODE=ckegenctl ckegenctl.test ARGS...  is ckegenctl ARGS...
//	CKEGENCTL_TEST_MODE=read ckegenctl.test --template T --machines M
//	    [--constraints C] [--current K]  reads and decodes the files
//	    (intake.ReadFiles), with the command's collector settings, and
//	    writes nothing
func TestMain(m *testing.M) {
	switch mode := os.Getenv("CKEGENCTL_TEST_MODE"); mode {
	case "":
		os.Exit(m.Run())
	case "ckegenctl":
		os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	case "read":
		os.Exit(readMain(os.Args[1:], os.Stderr))
	default:
		fmt.Fprintf(os.Stderr, "CKEGENCTL_TEST_MODE: unknown mode %q (ckegenctl or read)\n", mode)
		os.Exit(2)
	}
}

// readMain reads the input files of `ckegenctl sabakan generate` named by
// args (ReadFiles' part of the command) and writes nothing.
func readMain(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("read", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var template, machines, cstr, current string
	fs.StringVar(&template, "template", "", "")
	fs.StringVar(&machines, "machines", "", "")
	fs.StringVar(&cstr, "constraints", "", "")
	fs.StringVar(&current, "current", "", "")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	// The command's collector settings (collectLess) for the same files.
	defer collectLess(machines, current)()
	_, _, err := intake.ReadFiles(intake.Files{
		Template:    fileFlag("--template", template),
		Machines:    fileFlag("--machines", machines),
		Constraints: fileFlag("--constraints", cstr),
		Current:     fileFlag("--current", current),
	})
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}
