package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/storage"
)

// TestVerbsOfTheTable: every command a row of intake.Table names exists,
// with the usage line, help and choices its row gives it (where one
// does), and every setting command of ckegenctl is named by a row: a
// setting has its commands and their help from its row.
func TestVerbsOfTheTable(t *testing.T) {
	root := newRootCmd(defaultConfigFile)
	named := map[string]bool{}
	helped := 0
	for _, row := range intake.Table {
		for _, v := range row.Verbs {
			named[v.Path] = true
			cmd, rest, err := root.Find(strings.Fields(v.Path))
			if err != nil || len(rest) > 0 || cmd.CommandPath() != "ckegenctl "+v.Path {
				t.Errorf("%s: verb %q is not a command of ckegenctl (%v)", row.Setting, v.Path, err)
				continue
			}
			if v.Short == "" {
				continue
			}
			helped++
			if cmd.Use != v.Use() || cmd.Short != v.Short || cmd.Long != v.Long || strings.Join(cmd.ValidArgs, " ") != strings.Join(v.Choices, " ") {
				t.Errorf("%s: %q has usage %q, short %q, long %q, choices %v; its row says %q, %q, %q, %v",
					row.Setting, v.Path, cmd.Use, cmd.Short, cmd.Long, cmd.ValidArgs, v.Use(), v.Short, v.Long, v.Choices)
			}
		}
	}
	if helped < 19 {
		t.Errorf("only %d commands take their help from the table", helped)
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		path := strings.TrimPrefix(c.CommandPath(), "ckegenctl ")
		name := c.Name()
		if (strings.HasPrefix(name, "set-") || strings.HasPrefix(name, "get-") || name == "trigger") && !named[path] {
			t.Errorf("%q sets or shows a setting, and no row of intake.Table names it", path)
		}
	}
	walk(root)
}

// TestScalarSettings: the commands of the settings that one value sets
// check the value with the row's parse, store it as the tick reads it,
// and show it as read; an invalid value stores nothing.
func TestScalarSettings(t *testing.T) {
	f := newPlanFixture(t)
	for _, c := range []struct {
		set            []string
		key, stored    string
		get, shown     []string
		bad, badPrefix string
	}{
		{[]string{"sabakan", "set-url", "http://sabakan:10080"}, storage.KeySabakanURL, "http://sabakan:10080/graphql",
			[]string{"sabakan", "get-url"}, []string{"http://sabakan:10080/graphql"}, "ftp://x", `URL "ftp://x": must be an absolute http or https URL`},
		{[]string{"sabakan", "trigger", "planning"}, storage.KeySabakanTrigger, "planning",
			[]string{"sabakan", "trigger"}, []string{"planning"}, "plannning", "trigger: must be planning"},
		{[]string{"sabakan", "set-quiet-time", "90s"}, storage.KeySabakanQuietTime, "1m30s",
			[]string{"sabakan", "get-quiet-time"}, []string{"1m30s"}, "-1s", "quiet-time: must not be negative"},
		{[]string{"sabakan", "set-max-unhealthy", "40%"}, storage.KeySabakanMaxUnhealthy, "40%",
			[]string{"sabakan", "get-max-unhealthy"}, []string{"40%"}, "lots", "max-unhealthy: want a count"},
		{[]string{"sabakan", "set-max-unhealthy", "off"}, storage.KeySabakanMaxUnhealthy, "<none>",
			[]string{"sabakan", "get-max-unhealthy"}, []string{"off"}, "", ""},
	} {
		if _, errOut, code := f.run(c.set...); code != 0 {
			t.Fatalf("%v: exit %d: %s", c.set, code, errOut)
		}
		if got := f.raw(c.key); got != c.stored {
			t.Errorf("%v stored %q, want %q", c.set, got, c.stored)
		}
		out, errOut, code := f.run(c.get...)
		if code != 0 || strings.TrimSpace(out) != strings.Join(c.shown, "\n") {
			t.Errorf("%v: exit %d, %q %q; want %q", c.get, code, out, errOut, c.shown)
		}
		if c.bad == "" {
			continue
		}
		bad := append(append([]string{}, c.set[:len(c.set)-1]...), c.bad)
		if _, errOut, code := f.run(bad...); code != 1 || !strings.Contains(errOut, c.badPrefix) || f.raw(c.key) != c.stored {
			t.Errorf("%v: exit %d, %q, stored %q; want 1, %q, nothing stored", bad, code, errOut, f.raw(c.key), c.badPrefix)
		}
	}
	// A stored value a tick refuses is refused by the get command, with
	// the tick's words.
	if _, err := f.st.Client.Put(context.Background(), f.st.Key(storage.KeySabakanQuietTime), "soon"); err != nil {
		t.Fatal(err)
	}
	want := `ckegenctl: stored sabakan/quiet-time: invalid stored value: quiet-time: want a duration such as 10m or 1h30m (0 turns it off), got "soon" (set it with ckegenctl sabakan set-quiet-time)` + "\n"
	if _, errOut, code := f.run("sabakan", "get-quiet-time"); code != 1 || errOut != want {
		t.Errorf("get-quiet-time of an invalid value: exit %d, %q; want 1, %q", code, errOut, want)
	}
}

// TestConstraintsSetLosesARace: constraints set is a read-modify-write
// guarded on the document it read: when another set lands in between,
// its write loses, says so and writes nothing.
func TestConstraintsSetLosesARace(t *testing.T) {
	f := newPlanFixture(t)
	ctx := context.Background()
	put := func(doc string) {
		if _, err := f.st.Client.Put(ctx, f.st.Key(storage.KeyConstraints), doc); err != nil {
			t.Fatal(err)
		}
	}
	put(`{"control-plane-count":3,"minimum-workers":2}`)
	c, guard, err := constraintsToSet(ctx, &strings.Builder{}, f.st, constraints.MinimumWorkers)
	if err != nil || c.MinimumWorkers != 2 || guard.Key != storage.KeyConstraints || guard.ModRevision == 0 {
		t.Fatalf("read %+v, guard %+v (%v)", c, guard, err)
	}
	// Another ckegenctl (or CKE's) sets a constraint meanwhile.
	put(`{"control-plane-count":5,"minimum-workers":2}`)
	if err := c.Set(constraints.MinimumWorkers, 4); err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(c)
	err = storeConstraints(ctx, f.st, guard, data)
	if err == nil || !strings.Contains(err.Error(), "the constraints changed while they were set") || !strings.Contains(err.Error(), "nothing was written") {
		t.Errorf("a write on a stale read: %v", err)
	}
	if got := f.raw(storage.KeyConstraints); got != `{"control-plane-count":5,"minimum-workers":2}` {
		t.Errorf("stored %s after the lost race", got)
	}
	// Nothing stored yet: the guard is on the key's absence.
	if _, err := f.st.Client.Delete(ctx, f.st.Key(storage.KeyConstraints)); err != nil {
		t.Fatal(err)
	}
	_, guard, err = constraintsToSet(ctx, &strings.Builder{}, f.st, constraints.MinimumWorkers)
	if err != nil || guard.ModRevision != 0 {
		t.Fatalf("no constraints: guard %+v (%v)", guard, err)
	}
	put(`{"control-plane-count":1}`)
	if err := storeConstraints(ctx, f.st, guard, data); err == nil {
		t.Error("a first set that raced another wrote over it")
	}
	if got := f.raw(storage.KeyConstraints); got != `{"control-plane-count":1}` {
		t.Errorf("stored %s after the lost race on an absent key", got)
	}
}
