// Command demo runs ckegen end to end on one machine: the
// sabakan-compatible server with the bundled data center, the daemon with
// an embedded etcd, and ckegenctl as the operator. It shows the cluster
// converging, then flips machines to UNREACHABLE and RETIRING and shows the
// taints and replacements that follow. Everything it starts is stopped and
// removed when it ends.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/internal/child"
	"github.com/ckegen/ckegen/internal/strictjson"
	"github.com/ckegen/ckegen/internal/usage"
	"github.com/ckegen/ckegen/sabakan"
)

func main() {
	if err := newCmd().Execute(); err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		os.Exit(usage.Code(err))
	}
}

// newCmd is the demo's command line, with the flag conventions of the
// other binaries: --flags, --help on stdout and exit 0, a "did you mean"
// for an unknown flag, a usage error (exit 2) for a command line refused.
func newCmd() *cobra.Command {
	var examples string
	var interval time.Duration
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "run ckegen end to end on the bundled data center (make demo)",
		Long: `demo builds ckegen, ckegenctl and fakesabakan, starts the sabakan-compatible server
with the bundled data center and the daemon with an embedded etcd, configures
them with ckegenctl, shows the cluster converging, then turns machines
UNREACHABLE and RETIRING in sabakan and shows what the daemon does. It stops
and removes everything it started. Run it from the repository root.

` + usage.Help,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(*cobra.Command, []string) error {
			return run(examples, interval)
		},
	}
	cmd.Flags().StringVar(&examples, "examples", "examples", "directory with template.yml, constraints.json and machines.json")
	cmd.Flags().DurationVar(&interval, "interval", time.Second, "the daemon's tick interval")
	usage.Cobra(cmd, "demo")
	return cmd
}

type demo struct {
	ctx      context.Context
	bin      string
	etcdURL  string
	sabURL   string
	lastTick time.Time
	history  int
}

// run is the demo: build, start the servers, configure, converge, flip
// machines, converge again and explain. Every step prints what it does;
// the deferred calls stop the processes and remove the work directory.
func run(examples string, interval time.Duration) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()

	work, err := os.MkdirTemp("", "ckegen-demo-")
	if err != nil {
		return err
	}
	defer func() {
		if err := os.RemoveAll(work); err != nil {
			fmt.Fprintln(os.Stderr, "demo:", err)
		}
	}()
	d := &demo{ctx: ctx, bin: filepath.Join(work, "bin")}

	step("Build ckegen, ckegenctl and fakesabakan")
	say("go build compiles them with their dependencies (etcd, Kubernetes' API types,",
		"Prometheus' client...): about two minutes on a cold build cache, seconds after.")
	if err := d.build(); err != nil {
		return err
	}
	sab, err := d.startSabakan(examples)
	if err != nil {
		return err
	}
	defer child.Stop(sab)
	daemon, err := d.startDaemon(work, interval)
	if err != nil {
		return err
	}
	defer child.Stop(daemon)
	if err := d.configure(examples); err != nil {
		return err
	}
	cl, err := d.firstConvergence()
	if err != nil {
		return err
	}
	if err := d.flipMachines(cl); err != nil {
		return err
	}
	if err := d.showHistoryAndStatus(); err != nil {
		return err
	}
	step("Done: processes stopped, temporary files removed")
	say("README.md's \"Run it yourself\" runs the same by hand and keeps it running.")
	return nil
}

// startSabakan starts the sabakan-compatible server on a free port with
// the bundled machines, and keeps its URL.
func (d *demo) startSabakan(examples string) (*exec.Cmd, error) {
	step("Start the sabakan-compatible server with the bundled data center (12 racks x 20 machines)")
	sab, sabAddr, err := d.start("fakesabakan", regexp.MustCompile(`msg=serving address=(\S+)`),
		"--listen", "127.0.0.1:0", "--machines", filepath.Join(examples, "machines.json"))
	if err != nil {
		return nil, err
	}
	d.sabURL = "http://" + sabAddr
	return sab, nil
}

// startDaemon starts the daemon with an embedded etcd in work, on free
// ports, and keeps the etcd URL that ckegenctl talks to.
func (d *demo) startDaemon(work string, interval time.Duration) (*exec.Cmd, error) {
	step("Start the daemon with an embedded etcd")
	ports, err := child.FreePorts(3)
	if err != nil {
		return nil, err
	}
	d.etcdURL = fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	daemon, _, err := d.start("ckegen", regexp.MustCompile(`info: "serving"`),
		"--embedded-etcd-dir", filepath.Join(work, "etcd"),
		"--embedded-etcd-client-url", d.etcdURL,
		"--embedded-etcd-peer-url", fmt.Sprintf("http://127.0.0.1:%d", ports[1]),
		"--http", fmt.Sprintf("127.0.0.1:%d", ports[2]),
		"--interval", interval.String(), "--retire-wait", "5s", "--name", "demo-daemon")
	if err != nil {
		return nil, err
	}
	say(fmt.Sprintf("It ticks every %s: reads its settings from etcd, queries sabakan, and writes", interval),
		"cluster.yml when the membership should change, one step per tick.",
		fmt.Sprintf("Its page is at http://127.0.0.1:%d/ while the demo runs.", ports[2]))
	return daemon, nil
}

// configure sets sabakan's URL, the constraints of constraints.json and
// the template with ckegenctl, showing each command.
func (d *demo) configure(examples string) error {
	step("Configure the integration with ckegenctl")
	c, err := readConstraints(examples)
	if err != nil {
		return err
	}
	for _, args := range configCommands(d.sabURL, c, filepath.Join(examples, "template.yml")) {
		if _, err := d.ckegenctl(true, args...); err != nil {
			return err
		}
	}
	return nil
}

// readConstraints reads the constraints of the examples directory: a
// JSON object of integers, each error at its line and column.
func readConstraints(examples string) (map[string]int, error) {
	file := filepath.Join(examples, "constraints.json")
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var c map[string]int
	if err := strictjson.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return c, nil
}

// configCommands are the ckegenctl commands that configure the integration:
// sabakan's URL, the constraints given, a look at them, and the template
// last, as it is what lets the daemon generate.
func configCommands(sabURL string, constraints map[string]int, template string) [][]string {
	cmds := [][]string{{"sabakan", "set-url", sabURL}}
	for _, k := range []string{"control-plane-count", "minimum-workers", "maximum-workers"} {
		if v, ok := constraints[k]; ok {
			cmds = append(cmds, []string{"constraints", "set", k, fmt.Sprint(v)})
		}
	}
	return append(cmds, []string{"constraints", "show"}, []string{"sabakan", "set-template", template})
}

// firstConvergence waits for the daemon to build the cluster, then shows
// its first node as cluster.yml has it and every node in a table.
func (d *demo) firstConvergence() (*cluster.Cluster, error) {
	step("Wait for the daemon to converge (one line per tick)")
	if err := d.converge(); err != nil {
		return nil, err
	}
	cl, err := d.cluster()
	if err != nil {
		return nil, err
	}
	out, err := d.ckegenctl(false, "cluster", "get")
	if err != nil {
		return nil, err
	}
	fmt.Printf("$ ckegenctl cluster get   # first node of %d shown\n", len(cl.Nodes))
	printFirstNode(out)
	say("Each node is a sabakan machine: its labels come from the template and the",
		"machine (rack, role, retire date); the serial is an annotation. In the table",
		"below, STATE TAINT is the cke.cybozu.com/state taint ckegen puts on a node",
		"whose machine is UNREACHABLE (NoSchedule) or RETIRING/RETIRED (NoExecute).")
	if err := d.summarize(cl); err != nil {
		return nil, err
	}
	return cl, nil
}

// flipMachines turns a worker and a control plane UNREACHABLE and another
// worker RETIRING in sabakan, waits for the daemon to converge again,
// checks that the control plane was replaced and says what happened.
func (d *demo) flipMachines(cl *cluster.Cluster) error {
	step("Flip machines in sabakan: a worker UNREACHABLE, a control plane UNREACHABLE, a worker RETIRING")
	cp, w1, w2 := flipTargets(cl)
	say("sabakan's REST API takes the state in lower case (GraphQL's setMachineState",
		"mutation takes UNREACHABLE); an operator or sabakan's own health checks do this.")
	for _, f := range []struct {
		n     *cluster.Node
		state string
	}{{w1, "unreachable"}, {cp, "unreachable"}, {w2, "retiring"}} {
		serial := f.n.Annotations["cke.cybozu.com/serial"]
		fmt.Printf("$ curl -X PUT -d %s %s/api/v1/state/%s   # %s\n", f.state, d.sabURL, serial, f.n.Address)
		if err := d.putState(serial, f.state); err != nil {
			return err
		}
	}
	if err := d.converge(); err != nil {
		return err
	}
	cl, err := d.cluster()
	if err != nil {
		return err
	}
	if err := d.summarize(cl); err != nil {
		return err
	}
	if stillControlPlane(cl, cp.Address) {
		return fmt.Errorf("the UNREACHABLE control plane %s was not replaced", cp.Address)
	}
	say(fmt.Sprintf("What happened: the UNREACHABLE control plane %s was demoted, and the best", cp.Address),
		"candidate promoted in its place (replace control plane). It stays in the cluster",
		"as a worker with the unreachable:NoSchedule taint: as in CKE, a node leaves only",
		"when its machine leaves sabakan or has been RETIRED for the retire wait; an",
		"UNREACHABLE machine may come back, and Kubernetes schedules nothing on it meanwhile.",
		fmt.Sprintf("The UNREACHABLE worker %s stays the same way; the RETIRING worker %s", w1.Address, w2.Address),
		"gets retiring:NoExecute, which evicts its pods. minimum-workers counts HEALTHY",
		"workers only, so the daemon added workers (increase worker) until enough are",
		"HEALTHY again: the cluster now has more workers than the minimum, the tainted ones",
		"included.")
	return nil
}

// flipTargets are the nodes whose machines the demo flips: the first
// control plane and the first two workers, in the cluster's order.
func flipTargets(cl *cluster.Cluster) (cp, w1, w2 *cluster.Node) {
	for _, n := range cl.Nodes {
		switch {
		case n.ControlPlane && cp == nil:
			cp = n
		case !n.ControlPlane && w1 == nil:
			w1 = n
		case !n.ControlPlane && w2 == nil:
			w2 = n
		}
	}
	return cp, w1, w2
}

// stillControlPlane reports whether the node of address is a control
// plane of cl.
func stillControlPlane(cl *cluster.Cluster, address string) bool {
	return slices.ContainsFunc(cl.Nodes, func(n *cluster.Node) bool { return n.Address == address && n.ControlPlane })
}

// showHistoryAndStatus shows and explains ckegenctl's history of cluster
// writes and the last tick's status.
func (d *demo) showHistoryAndStatus() error {
	if _, err := d.ckegenctl(true, "sabakan", "history"); err != nil {
		return err
	}
	say("One line per cluster write: TEMPLATE REV is the etcd revision of the template",
		"the cluster was built from (a new template regenerates), CLUSTER REV the etcd",
		"revision of the write itself (CKE's cluster-revision).")
	if _, err := d.ckegenctl(true, "sabakan", "status"); err != nil {
		return err
	}
	say("The last tick's result: the operation, each change with its score and reason,",
		"and nothing pending (settled). WARNINGS would list what the operator should fix",
		"although the tick went on, such as a template role that matches no machine.")
	return nil
}

// say prints the lines as the demo's commentary.
func say(lines ...string) {
	for _, l := range lines {
		fmt.Println("   " + l)
	}
}

// build runs go build, saying every 10 seconds how far it is: a cold
// build takes minutes and prints nothing otherwise.
func (d *demo) build() error {
	start := time.Now()
	cmd := exec.CommandContext(d.ctx, "go", "build", "-v", "-o", d.bin+"/", "./cmd/ckegen", "./cmd/ckegenctl", "./cmd/fakesabakan")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	var lines []string // read once done is closed
	var compiled atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines = append(lines, sc.Text())
			compiled.Add(1)
		}
	}()
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	for waiting := true; waiting; {
		select {
		case <-done:
			waiting = false
		case <-tick.C:
			fmt.Printf("   ... building: packages compiled so far: %d (%s)\n", compiled.Load(), time.Since(start).Round(time.Second))
		}
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, strings.Join(lines, "\n"))
	}
	fmt.Printf("   built in %s (packages compiled: %d; the rest came from the build cache)\n", time.Since(start).Round(time.Second), len(lines))
	return nil
}

func step(s string) { fmt.Printf("\n== %s\n", s) }

// start runs a built binary and waits for the log line matching re; it
// returns the first submatch, if any.
func (d *demo) start(name string, re *regexp.Regexp, args ...string) (*exec.Cmd, string, error) {
	cmd, m, err := child.Start(d.ctx, filepath.Join(d.bin, name), re, args...)
	if err == nil {
		fmt.Printf("   %s started (pid %d)\n", name, cmd.Process.Pid)
	}
	return cmd, m, err
}

// ckegenctl runs ckegenctl against the demo's etcd; with show, it prints the
// command and its output.
func (d *demo) ckegenctl(show bool, args ...string) (string, error) {
	out, err := exec.CommandContext(d.ctx, filepath.Join(d.bin, "ckegenctl"), append([]string{"--endpoints", d.etcdURL}, args...)...).CombinedOutput()
	if show {
		fmt.Printf("$ ckegenctl %s\n%s", strings.Join(args, " "), out)
	}
	if err != nil {
		return string(out), fmt.Errorf("ckegenctl %v: %v: %s", args, err, out)
	}
	return string(out), nil
}

type status struct {
	Result          string    `json:"result"`
	Reason          string    `json:"reason"`
	Message         string    `json:"message"`
	Time            time.Time `json:"time"`
	LastOp          string    `json:"lastOp"`
	LastChangeCount int       `json:"lastChangeCount"`
	LastChanges     []struct {
		Action  string `json:"action"`
		Address string `json:"address"`
	} `json:"lastChanges"`
}

// converge prints a line per tick until two ticks in a row change nothing.
func (d *demo) converge() error {
	quiet := 0
	deadline := time.Now().Add(2 * time.Minute)
	for quiet < 2 {
		if time.Now().After(deadline) {
			return errors.New("no convergence within 2 minutes")
		}
		time.Sleep(200 * time.Millisecond)
		out, err := d.ckegenctl(false, "sabakan", "status", "-o", "json")
		if err != nil {
			continue // no tick yet
		}
		var st status
		if err := strictjson.UnmarshalIgnoringUnknown([]byte(out), &st); err != nil {
			return fmt.Errorf("ckegenctl sabakan status -o json: %w", err)
		}
		if !st.Time.After(d.lastTick) {
			continue
		}
		d.lastTick = st.Time
		hout, err := d.ckegenctl(false, "sabakan", "history", "-o", "json")
		if err != nil {
			return err
		}
		var h []json.RawMessage
		if err := strictjson.Unmarshal([]byte(hout), &h); err != nil {
			return fmt.Errorf("ckegenctl sabakan history -o json: %w", err)
		}
		changed := len(h) != d.history
		d.history = len(h)
		switch {
		case st.Result != "ok":
			fmt.Printf("   tick %s: %s %s: %s\n", st.Time.Format("15:04:05"), st.Result, st.Reason, st.Message)
			quiet = 0
		case changed:
			var acts []string
			for _, c := range st.LastChanges {
				acts = append(acts, c.Action+" "+c.Address)
			}
			if len(acts) > 4 {
				acts = append(acts[:4], fmt.Sprintf("... %d in all", st.LastChangeCount))
			}
			fmt.Printf("   tick %s: %s: %s\n", st.Time.Format("15:04:05"), st.LastOp, strings.Join(acts, ", "))
			quiet = 0
		default:
			fmt.Printf("   tick %s: nothing to do\n", st.Time.Format("15:04:05"))
			quiet++
		}
	}
	return nil
}

// cluster is the cluster the daemon wrote, as ckegenctl reads it.
func (d *demo) cluster() (*cluster.Cluster, error) {
	out, err := d.ckegenctl(false, "cluster", "get", "-o", "json")
	if err != nil {
		return nil, err
	}
	c, err := cluster.Parse([]byte(out))
	if err != nil {
		return nil, fmt.Errorf("ckegenctl cluster get -o json: %w", err)
	}
	return c, nil
}

func (d *demo) putState(serial, state string) error {
	req, err := http.NewRequestWithContext(d.ctx, http.MethodPut, d.sabURL+"/api/v1/state/"+serial, strings.NewReader(state))
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }() // what was read is the answer
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("PUT state %s=%s: %s: %s", serial, state, resp.Status, body)
	}
	return nil
}

func printFirstNode(yaml string) {
	seen := 0
	for _, l := range strings.Split(yaml, "\n") {
		if strings.HasPrefix(l, "- address:") {
			if seen++; seen == 2 {
				fmt.Println("  ...")
				return
			}
		}
		fmt.Println(l)
	}
}

// summarize prints the nodes, one a line: role, rack, the machine's
// state and the state taint; then the workers by role and by state.
func (d *demo) summarize(c *cluster.Cluster) error {
	states, err := d.states()
	if err != nil {
		return err
	}
	byRole := map[string]int{}
	byState := map[string]int{}
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "   ADDRESS\tKIND\tROLE\tRACK\tSTATE\tSTATE TAINT")
	for _, n := range c.Nodes {
		kind := "worker"
		state := states[n.Annotations["cke.cybozu.com/serial"]]
		if n.ControlPlane {
			kind = "control-plane"
		} else {
			byRole[n.Labels["cke.cybozu.com/role"]]++
			byState[state]++
		}
		taint := "-"
		for _, t := range n.Taints {
			if t.Key == "cke.cybozu.com/state" {
				taint = t.Value + ":" + t.Effect
			}
		}
		fmt.Fprintf(tw, "   %s\t%s\t%s\t%s\t%s\t%s\n", n.Address, kind, n.Labels["cke.cybozu.com/role"], n.Labels["cke.cybozu.com/rack"], state, taint)
	}
	_ = tw.Flush()
	fmt.Printf("   workers by role (every state): %s\n", counts(byRole))
	fmt.Printf("   workers by machine state: %s (minimum-workers counts the HEALTHY ones)\n", counts(byState))
	return nil
}

// counts is "a 1, b 2", sorted by name.
func counts(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// states reads every machine's state from sabakan, by serial, with the
// daemon's query (the variables of the demo: none).
func (d *demo) states() (map[string]string, error) {
	c, err := sabakan.NewClient(d.sabURL+"/graphql", sabakan.Options{})
	if err != nil {
		return nil, err
	}
	ms, err := c.SearchMachines(d.ctx, sabakan.Variables{})
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(ms))
	for _, m := range ms {
		out[m.Spec.Serial] = string(m.Status.State)
	}
	return out, nil
}
