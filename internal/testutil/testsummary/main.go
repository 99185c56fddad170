// Command testsummary runs go test with -json and says what happened as
// go test without -v does, and what go test without -v does not say:
// which tests skipped, and why.
//
//	go run ./internal/testutil/testsummary 'go test -json ./...' ['go test -json ./other/...' ...]
//	go test -json ./... | go run ./internal/testutil/testsummary
//
// Each argument is a command, run by sh -c one after the other; without
// arguments the stream is read from the standard input. It prints a line
// per package as its tests end (ok, FAIL, no test files), the output of
// every failed test in full (and of a test still running when its
// package failed, as on a timeout), build failures, and at the end one
// line per skipped test, "SKIPPED: package Test: reason", one per
// failure, "FAILED: package Test", and the counts, "tests: N passed, N
// failed, N skipped". A line of a command that is not go test's JSON is
// printed as it comes; when it reads "WHAT: SKIPPED: reason" it is listed
// with the skips as "SKIPPED: WHAT: reason".
//
// It exits 1 when a test or a build failed, or a command failed.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
)

func main() {
	s := newSummary(os.Stdout)
	if len(os.Args) < 2 {
		if err := s.read(os.Stdin); err != nil {
			s.commandFailed("reading the standard input", err)
		}
	}
	for _, command := range os.Args[1:] {
		s.run(command)
	}
	if !s.finish() {
		os.Exit(1)
	}
}

// event is one line of go test -json (cmd/test2json), or of a build's
// output.
type event struct {
	Action      string
	Package     string
	Test        string
	Output      string
	ImportPath  string
	FailedBuild string
}

// summary follows the events of one or more go test runs.
type summary struct {
	out      io.Writer
	packages map[string]*pkg
	// builds is the output of each build, by its import path, until it
	// is printed.
	builds map[string][]string

	skips, failures []string
	passed, failed  int
}

// pkg is a package whose tests are running.
type pkg struct {
	tests  map[string]*test
	order  []string
	output []string
}

type test struct {
	output []string
	// result is pass, fail or skip; "" while it runs.
	result string
}

func newSummary(out io.Writer) *summary {
	return &summary{out: out, packages: map[string]*pkg{}, builds: map[string][]string{}}
}

// run runs command with sh -c and reads its standard output.
func (s *summary) run(command string) {
	failures := len(s.failures)
	cmd := exec.Command("sh", "-c", command)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		s.commandFailed(command, err)
		return
	}
	if err := cmd.Start(); err != nil {
		s.commandFailed(command, err)
		return
	}
	readErr := s.read(stdout)
	err = cmd.Wait()
	if err == nil {
		err = readErr
	}
	// A command that failed without a failed test or build to show for
	// it (go vet, a package that does not exist) is a failure of its own.
	if err != nil && len(s.failures) == failures {
		s.commandFailed(command, err)
	}
}

func (s *summary) commandFailed(command string, err error) {
	s.failures = append(s.failures, fmt.Sprintf("%q: %v", command, err))
	s.failed++
	fmt.Fprintf(s.out, "FAIL\t%q: %v\n", command, err)
}

// read reads a stream of go test -json.
func (s *summary) read(r io.Reader) error {
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			s.line(line)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// plainSkip is a line that says something was skipped, not a test.
var plainSkip = regexp.MustCompile(`^(\S+): SKIPPED: (.*)$`)

func (s *summary) line(line string) {
	var e event
	if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &e) != nil || e.Action == "" {
		io.WriteString(s.out, line)
		if !strings.HasSuffix(line, "\n") {
			io.WriteString(s.out, "\n")
		}
		if m := plainSkip.FindStringSubmatch(strings.TrimRight(line, "\r\n")); m != nil {
			s.skips = append(s.skips, m[1]+": "+m[2])
		}
		return
	}
	switch e.Action {
	case "build-output":
		s.builds[e.ImportPath] = append(s.builds[e.ImportPath], e.Output)
		return
	case "build-fail":
		s.printBuild(e.ImportPath)
		return
	}
	if e.Package == "" {
		return
	}
	p := s.packages[e.Package]
	if p == nil {
		p = &pkg{tests: map[string]*test{}}
		s.packages[e.Package] = p
	}
	if e.Test == "" {
		switch e.Action {
		case "output":
			p.output = append(p.output, e.Output)
		case "pass", "skip":
			s.printLast(p.output)
			delete(s.packages, e.Package)
		case "fail":
			s.packageFailed(e.Package, p, e.FailedBuild)
			delete(s.packages, e.Package)
		}
		return
	}
	t := p.tests[e.Test]
	if t == nil {
		t = &test{}
		p.tests[e.Test] = t
		p.order = append(p.order, e.Test)
	}
	switch e.Action {
	case "output":
		t.output = append(t.output, e.Output)
	case "pass":
		t.result = e.Action
		s.passed++
	case "skip":
		t.result = e.Action
		s.skips = append(s.skips, e.Package+" "+e.Test+": "+skipReason(t.output))
	case "fail":
		t.result = e.Action
		s.failed++
		s.failures = append(s.failures, e.Package+" "+e.Test)
	}
}

// packageFailed prints the output of the package's failed tests and of
// those that never ended, then its own output; a package that failed
// without a failed test (its build, a timeout, TestMain) is a failure of
// its own.
func (s *summary) packageFailed(name string, p *pkg, failedBuild string) {
	failedTests := false
	for _, id := range p.order {
		t := p.tests[id]
		switch t.result {
		case "fail":
			failedTests = true
		case "":
			failedTests = true
			s.failed++
			s.failures = append(s.failures, name+" "+id+" (still running when the package failed)")
		default:
			continue
		}
		for _, o := range t.output {
			io.WriteString(s.out, o)
		}
	}
	if failedBuild != "" {
		s.printBuild(failedBuild)
		s.failed++
		s.failures = append(s.failures, name+" [build failed]")
	} else if !failedTests {
		s.failed++
		s.failures = append(s.failures, name)
	}
	for _, o := range p.output {
		io.WriteString(s.out, o)
	}
}

// printBuild prints a build's output, once.
func (s *summary) printBuild(importPath string) {
	for _, o := range s.builds[importPath] {
		io.WriteString(s.out, o)
	}
	delete(s.builds, importPath)
}

// printLast prints the last line of a package's output: "ok  pkg 0.1s"
// or "?   pkg [no test files]".
func (s *summary) printLast(output []string) {
	for i := len(output) - 1; i >= 0; i-- {
		if strings.TrimSpace(output[i]) != "" {
			io.WriteString(s.out, output[i])
			return
		}
	}
}

// finish prints what is left (builds never reported as failed, packages
// that never ended), the skips, the failures and the counts, and reports
// whether everything passed.
func (s *summary) finish() bool {
	for path := range s.builds {
		s.printBuild(path)
	}
	for name, p := range s.packages {
		fmt.Fprintf(s.out, "FAIL\t%s: no end of its tests in the output\n", name)
		s.packageFailed(name, p, "")
	}
	if len(s.skips) > 0 || len(s.failures) > 0 {
		fmt.Fprintln(s.out)
	}
	for _, skip := range s.skips {
		fmt.Fprintf(s.out, "SKIPPED: %s\n", skip)
	}
	for _, f := range s.failures {
		fmt.Fprintf(s.out, "FAILED: %s\n", f)
	}
	fmt.Fprintf(s.out, "tests: %d passed, %d failed, %d skipped\n", s.passed, s.failed, len(s.skips))
	return len(s.failures) == 0
}

// logLine starts what a test logged: its file and line, indented.
var logLine = regexp.MustCompile(`^\s+\S+\.go:\d+: `)

// maxReason is the most of a skip's reason the summary shows: a reason
// may carry a build's output.
const maxReason = 500

// skipReason is what a skipped test logged last (t.Skip's message, with
// its following lines), on one line of at most maxReason bytes.
func skipReason(output []string) string {
	lines := strings.Split(strings.Join(output, ""), "\n")
	start := -1
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "--- SKIP") {
			break
		}
		if logLine.MatchString(l) {
			start = i
		}
	}
	if start < 0 {
		return "(no reason given)"
	}
	var reason []string
	for i, l := range lines[start:] {
		if i > 0 && (logLine.MatchString(l) || strings.HasPrefix(strings.TrimSpace(l), "--- ") || strings.HasPrefix(l, "=== ")) {
			break
		}
		if i == 0 {
			l = logLine.ReplaceAllString(l, "")
		}
		if l = strings.TrimSpace(l); l != "" {
			reason = append(reason, l)
		}
	}
	r := strings.Join(reason, " ")
	if len(r) > maxReason {
		r = strings.ToValidUTF8(r[:maxReason], "") + " [...]"
	}
	return r
}
