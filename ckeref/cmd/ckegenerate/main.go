// Command ckegenerate runs CKE v1.35.4's own sabakan generator offline on
// the files `ckegenctl sabakan generate` reads, so that both can be timed as
// whole processes on the same inputs
// (internal/testutil/dcgen/genfiles writes a data center's files):
//
//	ckegenerate --template T.yml --machines M.json [--constraints C.json]
//	    [--current cluster.yml] [--now RFC3339] [-o yaml|json]
//
// Each file is read as CKE reads its value: the template as CKE's `ckecli
// sabakan set-template` reads it (YAML into cke.NewCluster, then
// sabakan.ValidateTemplate); the machines with encoding/json into
// sabakan.Machine (a JSON array, or a searchMachines answer
// {"data":{"searchMachines":[...]}}); the constraints with encoding/json
// into cke.Constraints, CKE's defaults without the flag; the current
// cluster with sigs.k8s.io/yaml (YAML or JSON) into cke.Cluster. Without
// --current it runs Generate, with it Update (sabakan/integrate.go's
// runGenerator, without Regenerate), and writes the cluster as CKE's `ckecli
// cluster get` prints it (sigs.k8s.io/yaml) or as CKE stores it
// (encoding/json). Nothing to do is "nothing to do" on stderr and nothing
// on stdout. CKE's log (its generator's record of the changes) goes to
// stderr as CKE writes it.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/cybozu-go/cke"
	ckesabakan "github.com/cybozu-go/cke/sabakan"
	"sigs.k8s.io/yaml"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "ckegenerate:", err)
		os.Exit(1)
	}
}

// options are the command line's.
type options struct {
	tmplPath, machinesPath, cstrPath, currentPath, output string
	now                                                   time.Time
}

// parseArgs reads the command line; usage errors go to stderr.
func parseArgs(args []string, stderr io.Writer) (*options, error) {
	fs := flag.NewFlagSet("ckegenerate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := &options{}
	fs.StringVar(&o.tmplPath, "template", "", "cluster template file (YAML or JSON)")
	fs.StringVar(&o.machinesPath, "machines", "", "machines file: a JSON array of machines or a searchMachines GraphQL response")
	fs.StringVar(&o.cstrPath, "constraints", "", "constraints file (JSON); CKE's defaults when absent")
	fs.StringVar(&o.currentPath, "current", "", "current cluster.yml (YAML or JSON): Update instead of Generate")
	nowFlag := fs.String("now", "", "the time of the decision, RFC3339 (default: the current time)")
	fs.StringVar(&o.output, "o", "yaml", "output format: yaml or json")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if o.tmplPath == "" || o.machinesPath == "" {
		return nil, errors.New("--template and --machines are required")
	}
	if o.output != "yaml" && o.output != "json" {
		return nil, fmt.Errorf("-o: must be yaml or json, got %q", o.output)
	}
	o.now = time.Now()
	if *nowFlag != "" {
		t, err := time.Parse(time.RFC3339, *nowFlag)
		if err != nil {
			return nil, fmt.Errorf("--now: %w", err)
		}
		o.now = t
	}
	return o, nil
}

func run(args []string, stdout, stderr io.Writer) error {
	o, err := parseArgs(args, stderr)
	if err != nil {
		return err
	}
	tmpl, err := readTemplate(o.tmplPath)
	if err != nil {
		return err
	}
	machines, err := readMachines(o.machinesPath)
	if err != nil {
		return fmt.Errorf("--machines: %w", err)
	}
	cstr, err := readConstraints(o.cstrPath)
	if err != nil {
		return err
	}
	current, err := readCurrent(o.currentPath)
	if err != nil {
		return err
	}

	g := ckesabakan.NewGenerator(tmpl, cstr, machines, nil, o.now)
	var c *cke.Cluster
	if current == nil {
		c, err = g.Generate()
	} else {
		c, err = g.Update(current)
	}
	if err != nil {
		return err
	}
	if c == nil {
		_, err := fmt.Fprintln(stderr, "nothing to do")
		return err
	}
	var out []byte
	if o.output == "json" {
		out, err = json.Marshal(c)
	} else {
		out, err = yaml.Marshal(c)
	}
	if err != nil {
		return err
	}
	_, err = stdout.Write(out)
	return err
}

// readTemplate reads the template as CKE's `ckecli sabakan set-template`
// does.
func readTemplate(path string) (*cke.Cluster, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	tmpl := cke.NewCluster()
	if err := yaml.Unmarshal(data, tmpl); err != nil {
		return nil, fmt.Errorf("--template: %w", err)
	}
	if err := ckesabakan.ValidateTemplate(tmpl); err != nil {
		return nil, fmt.Errorf("--template: %w", err)
	}
	return tmpl, nil
}

// readConstraints reads the constraints; CKE's defaults when path is "".
func readConstraints(path string) (*cke.Constraints, error) {
	if path == "" {
		return cke.DefaultConstraints(), nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	cstr := new(cke.Constraints)
	if err := json.Unmarshal(data, cstr); err != nil {
		return nil, fmt.Errorf("--constraints: %w", err)
	}
	return cstr, nil
}

// readCurrent reads the current cluster; nil when path is "".
func readCurrent(path string) (*cke.Cluster, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	current := new(cke.Cluster)
	if err := yaml.Unmarshal(data, current); err != nil {
		return nil, fmt.Errorf("--current: %w", err)
	}
	return current, nil
}

// readMachines reads a JSON array of machines, or a searchMachines answer.
func readMachines(path string) ([]ckesabakan.Machine, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var ms []ckesabakan.Machine
	if err := json.Unmarshal(data, &ms); err == nil {
		return ms, nil
	}
	var resp struct {
		Data struct {
			SearchMachines []ckesabakan.Machine `json:"searchMachines"`
		} `json:"data"`
	}
	if err := json.Unmarshal(data, &resp); err != nil {
		return nil, err
	}
	return resp.Data.SearchMachines, nil
}
