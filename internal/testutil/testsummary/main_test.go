package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testdata/run.jsonl is go test -json (go 1.26) of a module with a
// package that passes with a skipped test and a skipped subtest (one with
// a reason on two lines), one with a failed test that printed, one that
// does not build, one without test files, and one that timed out.

// TestSummary: every package gets its line, every failure its output in
// full, and the end lists each skip with its reason, each failure, and
// the counts; the summary fails.
func TestSummary(t *testing.T) {
	input, err := os.ReadFile(filepath.Join("testdata", "run.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// A package whose tests all passed and that failed all the same (its
	// TestMain, or the race detector after the tests), and a line that is
	// not JSON, saying what it skipped.
	input = append(input, []byte(`{"Action":"start","Package":"example.com/rec/main"}
{"Action":"run","Package":"example.com/rec/main","Test":"TestOK"}
{"Action":"pass","Package":"example.com/rec/main","Test":"TestOK"}
{"Action":"output","Package":"example.com/rec/main","Output":"WARNING: DATA RACE\n"}
{"Action":"output","Package":"example.com/rec/main","Output":"FAIL\texample.com/rec/main\t0.010s\n"}
{"Action":"fail","Package":"example.com/rec/main","Elapsed":0.01}
ckeref: SKIPPED: github.com/cybozu-go/cke v1.35.4 cannot be downloaded here
`)...)
	var out bytes.Buffer
	s := newSummary(&out)
	if err := s.read(bytes.NewReader(input)); err != nil {
		t.Fatal(err)
	}
	if s.finish() {
		t.Error("the summary passed")
	}
	got := out.String()
	t.Logf("summary:\n%s", got)

	for _, want := range []string{
		// Each package's line.
		"ok  \texample.com/rec/good\t0.004s\n",
		"?   \texample.com/rec/empty\t[no test files]\n",
		"FAIL\texample.com/rec/bad\t0.004s\n",
		"FAIL\texample.com/rec/broken [build failed]\n",
		"FAIL\texample.com/rec/hang\t2.006s\n",
		// The failed test's output in full, what it printed included.
		"=== RUN   TestFail\nprinted by the test\n    bad_test.go:9: got 1, want 2\n--- FAIL: TestFail (0.00s)\n",
		// The build's errors.
		"broken/broken_test.go:5:28: undefined: undefined\n",
		// The test running at the timeout, and the panic.
		"    hang_test.go:8: waiting\npanic: test timed out after 2s\n",
		"WARNING: DATA RACE\n",
		// The end.
		"\nSKIPPED: example.com/rec/good TestSkip: skipped: no chromium in PATH (apt-get install chromium)\n" +
			"SKIPPED: example.com/rec/good TestSub/b: needs a kube-apiserver: second line\n" +
			"SKIPPED: ckeref: github.com/cybozu-go/cke v1.35.4 cannot be downloaded here\n" +
			"FAILED: example.com/rec/broken [build failed]\n" +
			"FAILED: example.com/rec/bad TestFail\n" +
			"FAILED: example.com/rec/hang TestHang (still running when the package failed)\n" +
			"FAILED: example.com/rec/main\n" +
			"tests: 6 passed, 4 failed, 3 skipped\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the summary lacks %q", want)
		}
	}
	// What passed stays quiet, as go test without -v.
	for _, quiet := range []string{"good_test.go:5: fine", "=== RUN   TestPass", "--- PASS"} {
		if strings.Contains(got, quiet) {
			t.Errorf("the summary has %q of a test that passed", quiet)
		}
	}
	if !strings.HasSuffix(got, "tests: 6 passed, 4 failed, 3 skipped\n") {
		t.Error("the summary does not end with the counts")
	}

	// Whatever the expectations above say, no skip and no failure of the
	// stream is lost: each is named at the end.
	sc := bufio.NewScanner(bytes.NewReader(input))
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Test == "" {
			continue
		}
		switch e.Action {
		case "skip":
			if !strings.Contains(got, "SKIPPED: "+e.Package+" "+e.Test+": ") {
				t.Errorf("the skip of %s %s is lost", e.Package, e.Test)
			}
		case "fail":
			if !strings.Contains(got, "FAILED: "+e.Package+" "+e.Test+"\n") {
				t.Errorf("the failure of %s %s is lost", e.Package, e.Test)
			}
		}
	}
}

// TestSummaryPasses: a run that only passes and skips passes.
func TestSummaryPasses(t *testing.T) {
	var out bytes.Buffer
	s := newSummary(&out)
	s.read(strings.NewReader(`{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"--- SKIP: TestA (0.00s)\n"}
{"Action":"skip","Package":"p","Test":"TestA"}
{"Action":"run","Package":"p","Test":"TestB"}
{"Action":"pass","Package":"p","Test":"TestB"}
{"Action":"output","Package":"p","Output":"ok  \tp\t0.1s\n"}
{"Action":"pass","Package":"p"}
`))
	if !s.finish() {
		t.Errorf("a run that passed failed:\n%s", out.String())
	}
	if want := "ok  \tp\t0.1s\n\nSKIPPED: p TestA: (no reason given)\ntests: 1 passed, 0 failed, 1 skipped\n"; out.String() != want {
		t.Errorf("summary %q, want %q", out.String(), want)
	}
}

// TestSummaryCommands: the commands run one after the other; one that
// fails without a failed test is a failure, named; one cut off in the
// middle of a package is one too.
func TestSummaryCommands(t *testing.T) {
	run := func(commands ...string) (string, bool) {
		var out bytes.Buffer
		s := newSummary(&out)
		for _, c := range commands {
			s.run(c)
		}
		ok := s.finish()
		return out.String(), ok
	}
	pass := `printf '%s\n' '{"Action":"run","Package":"p","Test":"TestA"}' '{"Action":"pass","Package":"p","Test":"TestA"}' '{"Action":"output","Package":"p","Output":"ok  \tp\t0.1s\n"}' '{"Action":"pass","Package":"p"}'`
	if out, ok := run(pass, "echo plain"); !ok || !strings.Contains(out, "ok  \tp\t0.1s\nplain\n") {
		t.Errorf("two commands that pass: %v\n%s", ok, out)
	}
	out, ok := run(pass, "test -n '' || exit 3")
	if ok || !strings.Contains(out, "FAILED: \"test -n '' || exit 3\": exit status 3\n") || !strings.HasSuffix(out, "tests: 1 passed, 1 failed, 0 skipped\n") {
		t.Errorf("a command that fails: %v\n%s", ok, out)
	}
	out, ok = run(`printf '%s\n' '{"Action":"run","Package":"p","Test":"TestA"}' '{"Action":"output","Package":"p","Test":"TestA","Output":"started\n"}'; exit 2`)
	if ok || !strings.Contains(out, "FAIL\tp: no end of its tests in the output\nstarted\n") || !strings.Contains(out, "FAILED: p TestA (still running when the package failed)\n") {
		t.Errorf("a command cut off: %v\n%s", ok, out)
	}
}

// TestSkipReason: a long reason (a build's output) is cut; a reason's
// lines are joined; what the test logged before t.Skip is not its reason.
func TestSkipReason(t *testing.T) {
	long := "    x_test.go:3: skipped: the build failed:\n" + strings.Repeat("        undefined: x\n", 100) + "--- SKIP: TestX (0.00s)\n"
	if r := skipReason([]string{long}); len(r) > maxReason+6 || !strings.HasPrefix(r, "skipped: the build failed: undefined: x undefined: x") || !strings.HasSuffix(r, " [...]") {
		t.Errorf("a long reason: %q", r)
	}
	out := []string{"=== RUN   TestY\n", "    y_test.go:5: built in 3s\n", "    y_test.go:9: no tool\n", "        here\n", "--- SKIP: TestY (0.00s)\n"}
	if r := skipReason(out); r != "no tool here" {
		t.Errorf("reason %q, want %q", r, "no tool here")
	}
}
