// Package goldentest runs the project's golden files: txtar archives of
// inputs and want/ sections holding the expected outputs. A test computes
// its outputs and hands them to Check, which compares them with the
// want/ sections or, with -update, rewrites those sections. Machines reads
// the compact machine table the cases share.
package goldentest

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"

	"github.com/ckegen/ckegen/machine"
)

var update = flag.Bool("update", false, "rewrite the want/ sections of golden files")

// Cases lists the golden files that match pattern, and fails the test when
// there is none (a wrong pattern must not pass as "no case failed").
func Cases(t *testing.T, pattern string) []string {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no golden cases match %s", pattern)
	}
	return files
}

// Name is a case's name for t.Run: its file name without ".txtar".
func Name(file string) string {
	return strings.TrimSuffix(filepath.Base(file), ".txtar")
}

// Check compares got, the outputs as want/ sections ("want/stdout", ...),
// with those of the archive read from file: each must be there and equal.
// With -update it writes got in their place instead, in got's order, the
// other files kept as they are.
func Check(t *testing.T, file string, ar *txtar.Archive, got []txtar.File) {
	t.Helper()
	if *update {
		var kept []txtar.File
		for _, f := range ar.Files {
			if !strings.HasPrefix(f.Name, "want/") {
				kept = append(kept, f)
			}
		}
		ar.Files = append(kept, got...)
		if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want := map[string]string{}
	for _, f := range ar.Files {
		want[f.Name] = string(f.Data)
	}
	for _, g := range got {
		w, ok := want[g.Name]
		if !ok {
			t.Errorf("%s: no %s section (run with -update to create it)", file, g.Name)
			continue
		}
		if diff := cmp.Diff(w, string(g.Data)); diff != "" {
			t.Errorf("%s mismatch (-want +got):\n%s", g.Name, diff)
		}
	}
}

// Machines reads the compact machine table of golden cases, one machine a
// line:
//
//	SERIAL ADDRESS RACK ROLE STATE RETIRE-DATE [key=value ...]
//
// ROLE "-" is the empty role, ADDRESS "-" no address; STATE is taken as it
// is (a case may test a state sabakan does not have). Dates are YYYY-MM-DD
// (midnight UTC) or RFC3339 with its offset and fractional seconds, as
// sabakan returns them (2031-08-01T05:00:00.5+09:00). Keys: idx (index in
// rack, default the line number), reg (register date, default
// 2024-01-01), dur (status duration in seconds, default 0), label:NAME (a
// sabakan label). Lines starting with # are comments.
func Machines(data []byte) ([]machine.Machine, error) {
	var ms []machine.Machine
	for n, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		m, err := machineOf(f, n+1)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n+1, err)
		}
		ms = append(ms, m)
	}
	return ms, nil
}

func machineOf(f []string, line int) (machine.Machine, error) {
	var m machine.Machine
	if len(f) < 6 {
		return m, fmt.Errorf("want SERIAL ADDRESS RACK ROLE STATE RETIRE-DATE, got %q", strings.Join(f, " "))
	}
	rack, err := strconv.Atoi(f[2])
	if err != nil {
		return m, fmt.Errorf("rack: %w", err)
	}
	retire, err := date(f[5])
	if err != nil {
		return m, fmt.Errorf("retire date: %w", err)
	}
	m.Spec = machine.Spec{
		Serial: f[0], Rack: rack, IndexInRack: line, Role: f[3],
		IPv4:         []string{f[1]},
		RegisterDate: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC),
		RetireDate:   retire,
		BMC:          machine.BMC{BMCType: "IPMI-2.0"},
	}
	m.Status.State = machine.State(f[4])
	if f[3] == "-" {
		m.Spec.Role = ""
	}
	if f[1] == "-" {
		m.Spec.IPv4 = nil
	}
	for _, kv := range f[6:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return m, fmt.Errorf("%q: want key=value", kv)
		}
		switch {
		case k == "idx":
			m.Spec.IndexInRack, err = strconv.Atoi(v)
		case k == "reg":
			m.Spec.RegisterDate, err = date(v)
		case k == "dur":
			m.Status.Duration, err = strconv.ParseFloat(v, 64)
		case strings.HasPrefix(k, "label:"):
			m.Spec.Labels = append(m.Spec.Labels, machine.Label{Name: strings.TrimPrefix(k, "label:"), Value: v})
		default:
			err = fmt.Errorf("unknown key")
		}
		if err != nil {
			return m, fmt.Errorf("%s: %w", k, err)
		}
	}
	return m, nil
}

// date reads a date of the table: YYYY-MM-DD, or RFC3339 whose offset is
// kept.
func date(s string) (time.Time, error) {
	if strings.Contains(s, "T") {
		return time.Parse(time.RFC3339, s)
	}
	return time.Parse(time.DateOnly, s)
}
