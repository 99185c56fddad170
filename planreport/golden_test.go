package planreport_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/internal/testutil/goldentest"
	"github.com/ckegen/ckegen/labels"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/planreport"
	"github.com/ckegen/ckegen/template"
)

var goldenNow = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// defaultTemplate is used by golden cases that have no template.yml.
const defaultTemplate = `name: test
nodes:
- {user: cybozu, control_plane: true}
- {user: cybozu}
service_subnet: 10.68.0.0/16
`

// TestGolden computes the plan of every testdata/*.txtar case twice and
// compares its text and JSON (and YAML when the case asks) with the case's
// want/ sections; the JSON read back must give the same text.
//
// A case holds the data center now (machines.txt, template.yml,
// constraints.json) and the cluster the plan starts from: current.yml, or
// the settled plan of the data center before (before/machines.txt,
// before/template.yml, before/constraints.json, each defaulting to the file
// of now), or none (a new cluster). The template counts as changed when
// before/template.yml is given. An "args" file may hold max-steps=N,
// rebooting=ADDR,..., retire-wait=DURATION and yaml.
func TestGolden(t *testing.T) {
	for _, file := range goldentest.Cases(t, "testdata/*.txtar") {
		t.Run(goldentest.Name(file), func(t *testing.T) {
			t.Parallel()
			runGolden(t, file)
		})
	}
}

type goldenCase struct {
	files    map[string][]byte
	in       generator.Input
	changed  bool
	maxSteps int
	formats  []string
}

func runGolden(t *testing.T, file string) {
	ar, err := txtar.ParseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	c := &goldenCase{files: map[string][]byte{}, maxSteps: generator.DefaultMaxSteps, formats: []string{"text", "json"}}
	for _, f := range ar.Files {
		c.files[f.Name] = f.Data
	}
	if err := c.load(); err != nil {
		t.Fatalf("%s: %v", file, err)
	}

	var outs [2]map[string]string
	for i := range outs {
		p, err := generator.Run(c.in, nil, c.changed, c.maxSteps, generator.Tick)
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		d := planreport.New(p)
		d.SetModel(c.in.Constraints, len(c.in.Machines))
		outs[i] = map[string]string{}
		for _, format := range c.formats {
			var b bytes.Buffer
			if err := planreport.Write(&b, d, format); err != nil {
				t.Fatalf("Write %s: %v", format, err)
			}
			outs[i]["want/"+format] = b.String()
		}
	}
	if diff := cmp.Diff(outs[0], outs[1]); diff != "" {
		t.Fatalf("two plans of the same input differ:\n%s", diff)
	}
	got := outs[0]

	// A stored plan (its JSON) is shown as the plan itself.
	var stored planreport.Document
	if err := json.Unmarshal([]byte(got["want/json"]), &stored); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(got["want/text"], string(stored.Text())); diff != "" {
		t.Errorf("text of the plan read back from JSON differs (-plan +read back):\n%s", diff)
	}

	var sections []txtar.File
	for _, format := range c.formats {
		sections = append(sections, txtar.File{Name: "want/" + format, Data: []byte(got["want/"+format])})
	}
	goldentest.Check(t, file, ar, sections)
}

// load builds the plan's input from the case's files.
func (c *goldenCase) load() error {
	if err := c.parseArgs(); err != nil {
		return err
	}
	in, err := c.world("")
	if err != nil {
		return err
	}
	in.Rebooting, in.RetireWait = c.in.Rebooting, c.in.RetireWait
	c.in = in
	_, c.changed = c.files["before/template.yml"]
	switch {
	case c.files["current.yml"] != nil:
		if c.in.Current, err = cluster.Parse(c.files["current.yml"]); err != nil {
			return fmt.Errorf("current.yml: %w", err)
		}
	case c.has("before/"):
		before, err := c.world("before/")
		if err != nil {
			return err
		}
		p, err := generator.Run(before, nil, false, generator.DefaultMaxSteps, generator.Tick)
		if err != nil {
			return fmt.Errorf("the cluster before: %w", err)
		}
		if p.Result != generator.PlanSettled {
			return fmt.Errorf("the cluster before: %s (%v)", p.Result, p.Err)
		}
		c.in.Current = p.Cluster
	}
	return nil
}

func (c *goldenCase) has(prefix string) bool {
	for name := range c.files {
		if strings.HasPrefix(name, prefix) {
			return true
		}
	}
	return false
}

// file returns prefix+name, or the file of now when the case has none.
func (c *goldenCase) file(prefix, name string) ([]byte, bool) {
	if data, ok := c.files[prefix+name]; ok {
		return data, true
	}
	data, ok := c.files[name]
	return data, ok
}

// world is the data center and settings of now (prefix "") or before
// (prefix "before/").
func (c *goldenCase) world(prefix string) (generator.Input, error) {
	in := generator.Input{Now: goldenNow, RetireWait: generator.DefaultRetireWait, Constraints: constraints.CountDefaults()}
	doc, ok := c.file(prefix, "template.yml")
	if !ok {
		doc = []byte(defaultTemplate)
	}
	var err error
	if in.Template, err = template.Parse(doc); err != nil {
		return in, fmt.Errorf("%stemplate.yml: %w", prefix, err)
	}
	if data, ok := c.file(prefix, "constraints.json"); ok {
		if in.Constraints, err = constraints.Parse(data); err != nil {
			return in, fmt.Errorf("%sconstraints.json: %w", prefix, err)
		}
	}
	table, ok := c.file(prefix, "machines.txt")
	if !ok {
		return in, fmt.Errorf("%smachines.txt: missing", prefix)
	}
	raw, err := goldentest.Machines(table)
	if err != nil {
		return in, fmt.Errorf("%smachines.txt: %w", prefix, err)
	}
	// The machines as sabakan returned them give the generator the
	// inventory's roles, for the misspelt role guard.
	in.InventoryRoles = machine.Roles(raw)
	var warnings []string
	in.Machines, warnings = machine.Sanitize(raw, labels.ValidateSabakanLabel)
	if len(warnings) > 0 {
		return in, fmt.Errorf("%smachines.txt: %s", prefix, strings.Join(warnings, "; "))
	}
	return in, nil
}

func (c *goldenCase) parseArgs() error {
	for _, arg := range strings.Fields(string(c.files["args"])) {
		k, v, _ := strings.Cut(arg, "=")
		var err error
		switch k {
		case "max-steps":
			c.maxSteps, err = strconv.Atoi(v)
		case "rebooting":
			c.in.Rebooting = map[string]bool{}
			for _, a := range strings.Split(v, ",") {
				c.in.Rebooting[a] = true
			}
		case "retire-wait":
			c.in.RetireWait, err = time.ParseDuration(v)
		case "yaml":
			c.formats = append(c.formats, "yaml")
		default:
			err = fmt.Errorf("unknown argument")
		}
		if err != nil {
			return fmt.Errorf("args: %s: %w", arg, err)
		}
	}
	if c.in.RetireWait == 0 {
		c.in.RetireWait = generator.DefaultRetireWait
	}
	return nil
}
