package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// TestFlagsDocumented: docs/daemon.md's table of flags has a row for
// every flag of ckegen --help, in its order, with its default, and no
// row for a flag that is gone.
func TestFlagsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/daemon.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(doc), "<!-- flags: begin -->")
	table, _, ok2 := strings.Cut(table, "<!-- flags: end -->")
	if !ok || !ok2 {
		t.Fatal("docs/daemon.md has no table of flags between its markers")
	}
	row := regexp.MustCompile("(?m)^\\| `--([a-z-]+)` \\| *(`[^`]*`)? *\\|")
	rows := row.FindAllStringSubmatch(table, -1)
	var flags []*pflag.Flag
	flagSet(&options{}).VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			flags = append(flags, f)
		}
	})
	if len(rows) != len(flags) {
		t.Errorf("docs/daemon.md lists %d flags, ckegen has %d", len(rows), len(flags))
	}
	for i, f := range flags {
		if i >= len(rows) {
			t.Errorf("docs/daemon.md has no row for --%s (default %q)", f.Name, f.DefValue)
			continue
		}
		name, def := rows[i][1], strings.Trim(rows[i][2], "`")
		if name != f.Name {
			t.Errorf("docs/daemon.md row %d is --%s, want --%s, in the order of ckegen --help", i+1, name, f.Name)
			continue
		}
		if !sameDefault(f, def) {
			t.Errorf("docs/daemon.md: --%s defaults to %q, the flag to %q", f.Name, def, f.DefValue)
		}
	}
}

// sameDefault reports whether a default as the document writes it (empty
// for none) is the flag's.
func sameDefault(f *pflag.Flag, doc string) bool {
	switch f.Value.Type() {
	case "bool":
		return doc == "" && f.DefValue == "false"
	case "duration":
		a, err1 := time.ParseDuration(doc)
		b, err2 := time.ParseDuration(f.DefValue)
		return err1 == nil && err2 == nil && a == b
	}
	return doc == f.DefValue
}
