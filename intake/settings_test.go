package intake

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/ckegen/ckegen/storage"
)

var update = flag.Bool("update", false, "rewrite the settings table of docs/daemon.md from intake.Table")

const (
	daemonDoc     = "../docs/daemon.md"
	settingsBegin = "<!-- settings: begin -->\n"
	settingsEnd   = "<!-- settings: end -->"
)

// settingsTable is docs/daemon.md's table of settings, one line per row
// of Table, in its order.
func settingsTable() string {
	var b strings.Builder
	b.WriteString("| key | what it is | kind | a change wakes the leader | refused with | ckegenctl |\n|---|---|---|---|---|---|\n")
	for _, row := range Table {
		key := "`" + row.Key + "`"
		if row.Prefix != "" {
			key = "`" + row.Prefix + "` (every key under it)"
		}
		var codes []string
		if row.Missing != "" {
			codes = append(codes, "`"+row.Missing+"` (missing)")
		}
		if row.Reason != "" {
			codes = append(codes, "`"+row.Reason+"`")
		}
		var verbs []string
		for _, v := range row.Verbs {
			verbs = append(verbs, "`"+strings.TrimSpace(v.Path+" "+v.Args)+"`")
		}
		wakes := "no"
		if row.Wakes {
			wakes = "yes"
		}
		cells := []string{key, row.About, row.Kind.String(), wakes, strings.Join(codes, ", "), strings.Join(verbs, ", ")}
		for i, c := range cells {
			// A "|" in a cell, even in code, ends it unless escaped.
			cells[i] = strings.ReplaceAll(c, "|", `\|`)
		}
		fmt.Fprintf(&b, "| %s |\n", strings.Join(cells, " | "))
	}
	return b.String()
}

// TestSettingsDocumented: docs/daemon.md's table of settings is the
// table's rows, each with its key, kind, watch, reason codes and
// commands; -update rewrites it.
func TestSettingsDocumented(t *testing.T) {
	data, err := os.ReadFile(daemonDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	before, rest, ok := strings.Cut(doc, settingsBegin)
	got, after, ok2 := strings.Cut(rest, settingsEnd)
	if !ok || !ok2 {
		t.Fatalf("%s has no settings table between %q and %q", daemonDoc, settingsBegin, settingsEnd)
	}
	want := settingsTable()
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(daemonDoc, []byte(before+settingsBegin+want+settingsEnd+after), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	gotLines, wantLines := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(gotLines), len(wantLines)) {
		var g, w string
		if i < len(gotLines) {
			g = gotLines[i]
		}
		if i < len(wantLines) {
			w = wantLines[i]
		}
		if g != w {
			t.Errorf("%s's settings table, line %d:\n got  %s\n want %s", daemonDoc, i+1, g, w)
		}
	}
	t.Log("go test ./intake -run TestSettingsDocumented -update rewrites it from intake.Table")
}

// TestSettingsTable: the table says each row's facts; a row changed is a
// line changed.
func TestSettingsTable(t *testing.T) {
	table := settingsTable()
	for _, want := range []string{
		"| `sabakan/quiet-time` | how long the inventory must be still before a write (a Go duration; 0 or absent: off) | holding | yes | `INVALID_QUIET_TIME` | `sabakan set-quiet-time DURATION`, `sabakan get-quiet-time` |\n",
		"| `sabakan/template` | the cluster template (JSON, with CKE's defaults) | input | yes | `NO_TEMPLATE` (missing), `INVALID_TEMPLATE` | `sabakan set-template FILE`, `sabakan get-template` |\n",
		"| `" + storage.KeyRebootsData + "` (every key under it) | ",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("the settings table has no line %q:\n%s", want, table)
		}
	}
	if n := strings.Count(table, "\n"); n != len(Table)+2 {
		t.Errorf("the settings table has %d lines for %d rows", n, len(Table))
	}
}
