// Command demo runs ckegen end to end on one machine: the
// sabakan-compatible server with the bundled data center, the daemon with
// an embedded etcd, and ckecli as the operator. It shows the cluster
// converging, then flips machines to UNREACHABLE and RETIRING and shows the
// taints and replacements that follow. Everything it starts is stopped and
// removed when it ends.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		os.Exit(1)
	}
}

type demo struct {
	ctx      context.Context
	bin      string
	etcdURL  string
	sabURL   string
	lastTick time.Time
	history  int
}

func run() error {
	examples := flag.String("examples", "examples", "directory with template.yml, constraints.json and machines.json")
	interval := flag.Duration("interval", time.Second, "the daemon's tick interval")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()

	work, err := os.MkdirTemp("", "ckegen-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	d := &demo{ctx: ctx, bin: filepath.Join(work, "bin")}

	step("Build cke, ckecli and fakesabakan")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", d.bin+"/", "./cmd/cke", "./cmd/ckecli", "./cmd/fakesabakan").CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, out)
	}

	step("Start the sabakan-compatible server with the bundled data center (12 racks x 20 machines)")
	sab, sabAddr, err := d.start("fakesabakan", regexp.MustCompile(`msg=serving address=(\S+)`),
		"--listen", "127.0.0.1:0", "--machines", filepath.Join(*examples, "machines.json"))
	if err != nil {
		return err
	}
	defer stopProcess(sab)
	d.sabURL = "http://" + sabAddr

	step("Start the daemon with an embedded etcd")
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	d.etcdURL = fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	cke, _, err := d.start("cke", regexp.MustCompile(`info: "serving"`),
		"--embedded-etcd-dir", filepath.Join(work, "etcd"),
		"--embedded-etcd-client-url", d.etcdURL,
		"--embedded-etcd-peer-url", fmt.Sprintf("http://127.0.0.1:%d", ports[1]),
		"--http", fmt.Sprintf("127.0.0.1:%d", ports[2]),
		"--interval", interval.String(), "--retire-wait", "5s", "--name", "demo-daemon")
	if err != nil {
		return err
	}
	defer stopProcess(cke)

	step("Configure the integration with ckecli")
	cons, err := os.ReadFile(filepath.Join(*examples, "constraints.json"))
	if err != nil {
		return err
	}
	var c map[string]int
	if err := json.Unmarshal(cons, &c); err != nil {
		return fmt.Errorf("constraints.json: %w", err)
	}
	// The template goes last: it is what lets the daemon generate.
	cmds := [][]string{{"sabakan", "set-url", d.sabURL}}
	for _, k := range []string{"control-plane-count", "minimum-workers", "maximum-workers"} {
		if v, ok := c[k]; ok {
			cmds = append(cmds, []string{"constraints", "set", k, fmt.Sprint(v)})
		}
	}
	cmds = append(cmds, []string{"constraints", "show"}, []string{"sabakan", "set-template", filepath.Join(*examples, "template.yml")})
	for _, args := range cmds {
		if _, err := d.ckecli(true, args...); err != nil {
			return err
		}
	}

	step("Wait for the daemon to converge (one line per tick)")
	if err := d.converge(); err != nil {
		return err
	}
	cl, err := d.cluster()
	if err != nil {
		return err
	}
	out, err := d.ckecli(false, "cluster", "get")
	if err != nil {
		return err
	}
	fmt.Printf("$ ckecli cluster get   # first node of %d shown\n", len(cl.Nodes))
	printFirstNode(out)
	summarize(cl)

	step("Flip machines in sabakan: a worker UNREACHABLE, a control plane UNREACHABLE, a worker RETIRING")
	var cp, w1, w2 *node
	for i := range cl.Nodes {
		n := &cl.Nodes[i]
		switch {
		case n.ControlPlane && cp == nil:
			cp = n
		case !n.ControlPlane && w1 == nil:
			w1 = n
		case !n.ControlPlane && w2 == nil:
			w2 = n
		}
	}
	for _, f := range []struct {
		n     *node
		state string
	}{{w1, "unreachable"}, {cp, "unreachable"}, {w2, "retiring"}} {
		serial := f.n.Annotations["cke.cybozu.com/serial"]
		fmt.Printf("$ curl -X PUT %s/api/v1/state/%s -d %s   # %s\n", d.sabURL, serial, f.state, f.n.Address)
		if err := d.putState(serial, f.state); err != nil {
			return err
		}
	}
	if err := d.converge(); err != nil {
		return err
	}
	cl, err = d.cluster()
	if err != nil {
		return err
	}
	summarize(cl)
	for _, n := range cl.Nodes {
		if n.Address == cp.Address && n.ControlPlane {
			return fmt.Errorf("the UNREACHABLE control plane %s was not replaced", cp.Address)
		}
	}
	if _, err := d.ckecli(true, "sabakan", "history"); err != nil {
		return err
	}
	if _, err := d.ckecli(true, "sabakan", "status"); err != nil {
		return err
	}
	step("Done: processes stopped, temporary files removed")
	return nil
}

func step(s string) { fmt.Printf("\n== %s\n", s) }

// start runs a built binary and waits for the log line matching re; it
// returns the first submatch, if any.
func (d *demo) start(name string, re *regexp.Regexp, args ...string) (*exec.Cmd, string, error) {
	cmd := exec.CommandContext(d.ctx, filepath.Join(d.bin, name), args...)
	// cke, as CKE, waits CANCELLATION_DELAY_SECONDS (5 by default) after
	// SIGTERM before it stops: the demo need not.
	cmd.Env = append(os.Environ(), "CANCELLATION_DELAY_SECONDS=0")
	pipe, err := cmd.StderrPipe()
	if err != nil {
		return nil, "", err
	}
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	r := bufio.NewReader(pipe)
	for {
		line, err := r.ReadString('\n')
		if m := re.FindStringSubmatch(line); m != nil {
			go func() { _, _ = io.Copy(io.Discard, r) }()
			fmt.Printf("   %s started (pid %d)\n", name, cmd.Process.Pid)
			if len(m) > 1 {
				return cmd, m[1], nil
			}
			return cmd, "", nil
		}
		if err != nil {
			stopProcess(cmd)
			return nil, "", fmt.Errorf("%s exited before serving: %s", name, line)
		}
	}
}

func stopProcess(cmd *exec.Cmd) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

func freePorts(n int) ([]int, error) {
	var ports []int
	for i := 0; i < n; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer ln.Close()
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// ckecli runs ckecli against the demo's etcd; with show, it prints the
// command and its output.
func (d *demo) ckecli(show bool, args ...string) (string, error) {
	out, err := exec.CommandContext(d.ctx, filepath.Join(d.bin, "ckecli"), append([]string{"--endpoints", d.etcdURL}, args...)...).CombinedOutput()
	if show {
		fmt.Printf("$ ckecli %s\n%s", strings.Join(args, " "), out)
	}
	if err != nil {
		return string(out), fmt.Errorf("ckecli %v: %v: %s", args, err, out)
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
		out, err := d.ckecli(false, "sabakan", "status", "-o", "json")
		if err != nil {
			continue // no tick yet
		}
		var st status
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			return fmt.Errorf("status: %w", err)
		}
		if !st.Time.After(d.lastTick) {
			continue
		}
		d.lastTick = st.Time
		hout, err := d.ckecli(false, "sabakan", "history", "-o", "json")
		if err != nil {
			return err
		}
		var h []json.RawMessage
		if err := json.Unmarshal([]byte(hout), &h); err != nil {
			return fmt.Errorf("history: %w", err)
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

type node struct {
	Address      string            `json:"address"`
	ControlPlane bool              `json:"control_plane"`
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	Taints       []struct {
		Key    string `json:"key"`
		Value  string `json:"value"`
		Effect string `json:"effect"`
	} `json:"taints"`
}

type clusterDoc struct {
	Nodes []node `json:"nodes"`
}

func (d *demo) cluster() (*clusterDoc, error) {
	out, err := d.ckecli(false, "cluster", "get", "-o", "json")
	if err != nil {
		return nil, err
	}
	var c clusterDoc
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	return &c, nil
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
	defer resp.Body.Close()
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

// summarize prints the nodes, one a line: role, rack and taints.
func summarize(c *clusterDoc) {
	counts := map[string]int{}
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "   ADDRESS\tKIND\tROLE\tRACK\tSTATE TAINT")
	for _, n := range c.Nodes {
		kind := "worker"
		if n.ControlPlane {
			kind = "control-plane"
		} else {
			counts[n.Labels["cke.cybozu.com/role"]]++
		}
		taint := "-"
		for _, t := range n.Taints {
			if t.Key == "cke.cybozu.com/state" {
				taint = t.Value + ":" + t.Effect
			}
		}
		fmt.Fprintf(tw, "   %s\t%s\t%s\t%s\t%s\n", n.Address, kind, n.Labels["cke.cybozu.com/role"], n.Labels["cke.cybozu.com/rack"], taint)
	}
	_ = tw.Flush()
	roles := make([]string, 0, len(counts))
	for r := range counts {
		roles = append(roles, r)
	}
	sort.Strings(roles)
	var parts []string
	for _, r := range roles {
		parts = append(parts, fmt.Sprintf("%s %d", r, counts[r]))
	}
	fmt.Printf("   workers by role: %s\n", strings.Join(parts, ", "))
}
