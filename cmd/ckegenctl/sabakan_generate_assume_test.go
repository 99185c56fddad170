package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckegen/ckegen/machine"
)

// editedMachines writes the bundled machines file with the machines that
// match turned to state, as sabakan would return them right after the
// change (duration 0 for a machine whose state changed), and returns its
// path.
func editedMachines(t *testing.T, match func(m *machine.Machine) bool, state machine.State) string {
	t.Helper()
	data, err := os.ReadFile("../../examples/machines.json")
	if err != nil {
		t.Fatal(err)
	}
	var ms []machine.Machine
	if err := json.Unmarshal(data, &ms); err != nil {
		t.Fatal(err)
	}
	n := 0
	for i := range ms {
		if match(&ms[i]) {
			n++
			if ms[i].Status.State != state {
				ms[i].Status.Duration = 0
			}
			ms[i].Status.State = state
		}
	}
	if n == 0 {
		t.Fatal("the edit matches no machine")
	}
	out, err := json.MarshalIndent(ms, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "machines.json")
	if err := os.WriteFile(p, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// withMachines replaces the --machines of args.
func withMachines(args []string, path string) []string {
	out := append([]string(nil), args...)
	for i := range out {
		if out[i] == "--machines" {
			out[i+1] = path
		}
	}
	return out
}

// dropAssumed removes the lines at the head of s that say what was
// assumed, and the blank line after them.
func dropAssumed(s string) string {
	lines := strings.Split(s, "\n")
	n := 0
	for n < len(lines) && strings.HasPrefix(lines[n], "assume ") {
		n++
	}
	if n > 0 && n < len(lines) && lines[n] == "" {
		n++
	}
	return strings.Join(lines[n:], "\n")
}

// TestAssumeIsTheEditedInventory: for a serial, a rack and a label, in
// either case of the state, generate (one step, with and without --plan)
// and resilience answer with --assume exactly what they answer on a
// machines file edited that way, and say first what was assumed and how
// many machines it matched.
func TestAssumeIsTheEditedInventory(t *testing.T) {
	for _, tc := range []struct {
		assume  string
		matched string
		match   func(m *machine.Machine) bool
		state   machine.State
	}{
		{"S000092:unreachable", "assume S000092:unreachable: 1 machine", func(m *machine.Machine) bool { return m.Spec.Serial == "S000092" }, machine.StateUnreachable},
		{"rack=4:RETIRING", "assume rack=4:RETIRING: 20 machines", func(m *machine.Machine) bool { return m.Spec.Rack == 4 }, machine.StateRetiring},
		{"product=R600:UNHEALTHY", "assume product=R600:UNHEALTHY: 72 machines", func(m *machine.Machine) bool {
			return len(m.Spec.Labels) > 0 && m.Spec.Labels[0].Name == "product" && m.Spec.Labels[0].Value == "R600"
		}, machine.StateUnhealthy},
	} {
		edited := editedMachines(t, tc.match, tc.state)
		current := []string{"--current", "../../examples/cluster-rack4.yml"}
		for _, args := range [][]string{
			exampleArgs(append(current, "--explain", "text")...),
			exampleArgs(append(current, "--plan")...),
			exampleArgs("--plan", "-o", "json"),
			resilienceArgs(current...),
			resilienceArgs(append(current, "-o", "json")...),
		} {
			out, errOut, code := runCLI(t, append(args, "--assume", tc.assume)...)
			wantOut, wantErr, wantCode := runCLI(t, withMachines(args, edited)...)
			if code != wantCode || code != 0 {
				t.Fatalf("%s %v: exit %d, on the edited file %d: %s", tc.assume, args, code, wantCode, errOut)
			}
			said := errOut
			if strings.HasPrefix(out, "assume ") {
				said = out
			}
			if !strings.HasPrefix(said, tc.matched+"\n") && !strings.Contains(out, `"assume": "`+tc.assume+`"`) {
				t.Errorf("%s %v: does not begin by saying what was assumed:\nstdout %.300s\nstderr %.300s", tc.assume, args, out, errOut)
			}
			if strings.Contains(out, `"assumed"`) {
				var doc map[string]json.RawMessage
				if err := json.Unmarshal([]byte(out), &doc); err != nil {
					t.Fatal(err)
				}
				delete(doc, "assumed")
				data, _ := json.MarshalIndent(doc, "", "  ")
				var want map[string]json.RawMessage
				_ = json.Unmarshal([]byte(wantOut), &want)
				wantData, _ := json.MarshalIndent(want, "", "  ")
				out, wantOut = string(data), string(wantData)
			}
			if dropAssumed(out) != wantOut || dropAssumed(errOut) != wantErr {
				t.Errorf("%s %v: differs from the edited file:\nstdout\n%.2000s\nwant\n%.2000s\nstderr %q want %q", tc.assume, args, out, wantOut, errOut, wantErr)
			}
		}
	}
}

// TestAssumeRefused: a WHICH that matches no machine and a STATE that is
// not one are refused naming them, and nothing goes to stdout, in every
// command that takes --assume.
func TestAssumeRefused(t *testing.T) {
	for _, base := range [][]string{exampleArgs(), exampleArgs("--plan"), exampleArgs("--explain", "json"), resilienceArgs()} {
		for _, tc := range []struct {
			assume string
			code   int
			want   string
		}{
			{"rack=99:RETIRING", 1, "--assume rack=99:RETIRING: no machine has rack 99"},
			{"S999999:RETIRING", 1, "--assume S999999:RETIRING: no machine has serial S999999"},
			{"rack=4:RETRING", 2, `--assume "rack=4:RETRING": unknown machine state "RETRING"`},
			{"rack=4", 2, `--assume "rack=4": want WHICH:STATE`},
		} {
			out, errOut, code := runCLI(t, append(base, "--assume", tc.assume)...)
			if code != tc.code || out != "" || !strings.Contains(errOut, tc.want) {
				t.Errorf("%v --assume %s: exit %d (want %d), stdout %.100q, stderr %q (want %q)", base, tc.assume, code, tc.code, out, errOut, tc.want)
			}
		}
	}
}

// withoutMachines writes the bundled machines file without the machines
// that match, as the default query answers once they are RETIRED, and
// returns its path.
func withoutMachines(t *testing.T, match func(m *machine.Machine) bool) string {
	t.Helper()
	data, err := os.ReadFile("../../examples/machines.json")
	if err != nil {
		t.Fatal(err)
	}
	var ms, kept []machine.Machine
	if err := json.Unmarshal(data, &ms); err != nil {
		t.Fatal(err)
	}
	for i := range ms {
		if !match(&ms[i]) {
			kept = append(kept, ms[i])
		}
	}
	out, _ := json.MarshalIndent(kept, "", "  ")
	p := filepath.Join(t.TempDir(), "machines.json")
	if err := os.WriteFile(p, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestAssumeRetiredLeavesTheAnswer: offline, rack 4's two control planes
// assumed RETIRED leave the input as they leave the default query's
// answer: generate (one step, and --plan in text and JSON) and
// resilience answer as on a machines file without them, the plan is
// refused with TOO_MANY_NONEXISTENT_CONTROL_PLANES, and the output says
// that the query leaves them out and in which order the change would not
// be refused. The same machines assumed RETIRING stay, and the plan
// replaces them.
func TestAssumeRetiredLeavesTheAnswer(t *testing.T) {
	cps := func(m *machine.Machine) bool { return m.Spec.Serial == "S000092" || m.Spec.Serial == "S000094" }
	without := withoutMachines(t, cps)
	assumed := []string{"--assume", "S000092:RETIRED", "--assume", "S000094:RETIRED"}
	left := "assume S000092:RETIRED: 1 machine left out of the query's answer (the default query leaves out RETIRED machines)\n" +
		"assume S000094:RETIRED: 1 machine left out of the query's answer (the default query leaves out RETIRED machines)\n"
	avoid := "note: to avoid it, set S000092, S000094 RETIRING first and wait until ckegen has replaced them (one per tick), then RETIRED"
	current := []string{"--current", "../../examples/cluster-rack4.yml"}
	for _, args := range [][]string{
		exampleArgs(current...),
		exampleArgs(append(current, "--plan")...),
		exampleArgs(append(current, "--plan", "-o", "json")...),
		resilienceArgs(current...),
	} {
		out, errOut, code := runCLI(t, append(args, assumed...)...)
		wantOut, wantErr, wantCode := runCLI(t, withMachines(args, without)...)
		if code != wantCode {
			t.Fatalf("%v: exit %d, without the machines %d: %s", args, code, wantCode, errOut)
		}
		said := errOut
		if strings.HasPrefix(out, "assume ") {
			said = out
		}
		if !strings.HasPrefix(said, left) {
			t.Errorf("%v: does not say the query leaves them out:\nstdout %.400s\nstderr %.400s", args, out, errOut)
		}
		refused := strings.Contains(out+errOut, "too many non-existent control plane nodes: 2 of 3")
		if args[1] == "generate" && (!refused || !strings.Contains(said, avoid)) {
			t.Errorf("%v: not refused, or without the order that avoids it:\nstdout %.600s\nstderr %.600s", args, out, errOut)
		}
		if got := dropAdvice(dropAssumed(out)); got != wantOut || dropAdvice(dropAssumed(errOut)) != wantErr {
			t.Errorf("%v: differs from the answer without the machines:\nstdout\n%.1500s\nwant\n%.1500s\nstderr %q want %q", args, got, wantOut, errOut, wantErr)
		}
	}
	out, errOut, _ := runCLI(t, append(exampleArgs("--current", "../../examples/cluster-rack4.yml", "--explain", "json"), assumed...)...)
	if !strings.Contains(errOut, `"assumed":[{"assume":"S000092:RETIRED","machines":1,"leftOut":1,"leftOutBecause":"the default query leaves out RETIRED machines"}`) || out != "" {
		t.Errorf("--explain json: stdout %q, stderr %s", out, errOut)
	}
	// Workers left out make no refusal: no order to avoid is said.
	out, errOut, _ = runCLI(t, exampleArgs("--current", "../../examples/cluster-rack4.yml", "--plan", "--assume", "rack=7:RETIRED")...)
	if !strings.Contains(out+errOut, "left out of the query's answer") || strings.Contains(out+errOut, "to avoid it") {
		t.Errorf("rack=7:RETIRED:\nstdout %.600s\nstderr %.600s", out, errOut)
	}
	out, _, _ = runCLI(t, exampleArgs("--current", "../../examples/cluster-rack4.yml", "--plan", "--assume", "S000092:RETIRING", "--assume", "S000094:retiring")...)
	if !strings.Contains(out, "step 1: replace control plane") || strings.Contains(out, "left out") || strings.Contains(out, "avoid") {
		t.Errorf("RETIRING:\n%s", out)
	}
}

// dropAdvice removes the line that says which order avoids a refusal,
// and the blank line that then begins s.
func dropAdvice(s string) string {
	lines := strings.Split(s, "\n")
	out := lines[:0]
	for _, l := range lines {
		if !strings.HasPrefix(l, "note: to avoid it") {
			out = append(out, l)
		}
	}
	return strings.TrimPrefix(strings.Join(out, "\n"), "\n")
}

// TestAssumeNoteIsTheModels: the note that says which order avoids the
// refusal is the model's in force, in the text of generate and of
// generate --plan, and online of sabakan plan (the stored constraints,
// and --constraints of the other model): RETIRING first in the count model
// (its rule 5 replaces a RETIRING control plane), one machine at a time in
// the rate model (which replaces a control plane only in the write that
// removes it).
func TestAssumeNoteIsTheModels(t *testing.T) {
	count := "note: to avoid it, set S000092, S000094 RETIRING first and wait until ckegen has replaced them (one per tick), then RETIRED"
	rate := "note: to avoid it, retire S000092, S000094 one machine at a time, RETIRING then RETIRED, the next only after the write that removes the previous one: " +
		"in the rate model (minimum-workers-rate) a control plane is not replaced while it is RETIRING"
	for _, tc := range []struct {
		model, template, constraints, want, not string
	}{
		{"count", "../../examples/template.yml", "../../examples/constraints.json", count, rate},
		{"rate", "../../examples/template-rate.yml", "../../examples/constraints-rate.json", rate, count},
	} {
		for _, plan := range [][]string{nil, {"--plan"}} {
			args := append([]string{"sabakan", "generate", "--template", tc.template, "--machines", "../../examples/machines.json",
				"--constraints", tc.constraints, "--now", "2026-01-02T00:00:00Z", "--current", "../../examples/cluster-rack4.yml",
				"--assume", "S000092:RETIRED", "--assume", "S000094:RETIRED"}, plan...)
			out, errOut, _ := runCLI(t, args...)
			if said := out + errOut; !strings.Contains(said, tc.want) || strings.Contains(said, tc.not) {
				t.Errorf("%s model %v: the note is not the model's:\nstdout %.800s\nstderr %.800s", tc.model, plan, out, errOut)
			}
		}
	}
	s := newRack4Site(t)
	for _, tc := range []struct {
		model string
		args  []string
		want  string
		not   string
	}{
		{"count", nil, count, rate},
		{"rate", []string{"--constraints", "../../examples/constraints-rate.json", "--template", "../../examples/template-rate.yml"}, rate, count},
	} {
		out, errOut, _ := s.run(append([]string{"sabakan", "plan", "--assume", "S000092:RETIRED", "--assume", "S000094:RETIRED"}, tc.args...)...)
		if !strings.Contains(out, tc.want) || strings.Contains(out, tc.not) {
			t.Errorf("sabakan plan, %s model: the note is not the model's:\nstdout %.800s\nstderr %.800s", tc.model, out, errOut)
		}
	}
}
