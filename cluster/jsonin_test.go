package cluster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"
	sigsyaml "sigs.k8s.io/yaml"
)

// checkParseFast fails when Parse, which takes parseFast's path where it
// can, reads another cluster than the strict path alone, or gives another
// error. It reports whether the fast path read data.
func checkParseFast(t interface {
	Fatalf(string, ...any)
}, data []byte) bool {
	got, gotErr := Parse(data)
	want, wantErr := parseStrict(data)
	if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
		t.Fatalf("Parse: %v\nthe strict path: %v\nfrom\n%s", gotErr, wantErr, data)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Parse read\n%s\nthe strict path\n%s\nfrom\n%s", dump(got), dump(want), data)
	}
	_, fast := parseFast(data)
	return fast
}

func dump(c *Cluster) string {
	if c == nil {
		return "nil"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%#v\n", *c)
	for _, n := range c.Nodes {
		fmt.Fprintf(&b, "  %#v\n", *n)
	}
	return b.String()
}

// plainStrings are strings the writers write plain or quoted in the
// fast path's styles; drawPlainCluster draws from them mostly.
var plainStrings = []string{
	"10.0.1.1", "10.1.2.3", "cybozu", "cs", "rack3", "true", "false", "yes", "2031", "2031-01", "2031-01-01T00:00:00Z",
	"24", "0", "S000123", "compute", "NoSchedule", "cke.cybozu.com/role", "a:b", "-a", "/x", "_", ".5", "..a", "1:30", "",
	"node-role.kubernetes.io/cs", "1.2.3", "+", "0x1F", "1e3",
}

// tricky, when set, makes drawPlainString draw a tricky string now and
// then.
type plainDraw struct{ tricky bool }

func (d plainDraw) string(t *rapid.T, label string) string {
	if d.tricky && rapid.IntRange(0, 19).Draw(t, label+"-tricky") == 0 {
		return drawString(t, label)
	}
	return rapid.SampledFrom(plainStrings).Draw(t, label)
}

func (d plainDraw) stringMap(t *rapid.T, label string) map[string]string {
	n := rapid.IntRange(0, 5).Draw(t, label+"-len")
	if n == 0 && rapid.Bool().Draw(t, label+"-nil") {
		return nil
	}
	m := map[string]string{}
	for i := range n {
		k := d.string(t, fmt.Sprintf("%s-key%d", label, i))
		if k == "<<" {
			k = "<"
		}
		m[k] = d.string(t, fmt.Sprintf("%s-value%d", label, i))
	}
	return m
}

// drawPlainCluster draws a cluster as a generator writes it, with now and
// then a string that needs another style, a field left out or empty.
func drawPlainCluster(t *rapid.T) *Cluster {
	return drawPlainClusterOf(t, rapid.Bool().Draw(t, "tricky strings"), rapid.Bool().Draw(t, "plain top"), 0)
}

// drawPlainClusterOf draws a cluster as drawPlainCluster does: with tricky
// strings now and then or not, with a plain name, subnet and options or
// drawCluster's, and at least minNodes nodes.
func drawPlainClusterOf(t *rapid.T, tricky, plainTop bool, minNodes int) *Cluster {
	d := plainDraw{tricky: tricky}
	c := drawCluster(t)
	c.Nodes = nil
	if plainTop {
		c.Name, c.ServiceSubnet, c.DNSService = d.string(t, "p-name"), d.string(t, "p-subnet"), ""
		c.ControlPlaneTolerations = nil
		c.Options = json.RawMessage(rapid.SampledFrom([]string{"", `{"kubelet":{"cri_endpoint":"/run/containerd/containerd.sock","extra_args":["--a=b"]}}`,
			`{"etcd":{"volume_name":"etcd-cke","extra_args":[]},"kube-api":{"audit_log_enabled":true,"x":1.5}}`}).Draw(t, "p-options"))
		if len(c.Options) == 0 {
			c.Options = nil
		}
		c.Reboot, c.Sabakan = nil, nil
	}
	for i := range rapid.IntRange(minNodes, 4).Draw(t, "plain nodes") {
		n := &Node{
			Address:      d.string(t, fmt.Sprintf("p-address%d", i)),
			User:         d.string(t, fmt.Sprintf("p-user%d", i)),
			ControlPlane: rapid.Bool().Draw(t, fmt.Sprintf("p-cp%d", i)),
			Labels:       d.stringMap(t, fmt.Sprintf("p-labels%d", i)),
			Annotations:  d.stringMap(t, fmt.Sprintf("p-annotations%d", i)),
		}
		if rapid.IntRange(0, 3).Draw(t, fmt.Sprintf("p-hostname?%d", i)) == 0 {
			n.Hostname = d.string(t, fmt.Sprintf("p-hostname%d", i))
		}
		for j := range rapid.IntRange(0, 2).Draw(t, fmt.Sprintf("p-taints%d", i)) {
			n.Taints = append(n.Taints, Taint{
				Key:    d.string(t, fmt.Sprintf("p-taint%d-%d-key", i, j)),
				Value:  d.string(t, fmt.Sprintf("p-taint%d-%d-value", i, j)),
				Effect: d.string(t, fmt.Sprintf("p-taint%d-%d-effect", i, j)),
			})
		}
		c.Nodes = append(c.Nodes, n)
	}
	return c
}

// writings are the ways a cluster.yml is written: ckegen's YAML and JSON
// writers, and CKE's (sigs.k8s.io/yaml, encoding/json).
var writings = []struct {
	name  string
	write func(*Cluster) ([]byte, error)
}{
	{"MarshalYAML", (*Cluster).MarshalYAML},
	{"MarshalIndentJSON", (*Cluster).MarshalIndentJSON},
	{"AppendJSON", func(c *Cluster) ([]byte, error) { return c.AppendJSON(nil) }},
	{"sigs.k8s.io/yaml", func(c *Cluster) ([]byte, error) { return sigsyaml.Marshal(c) }},
	{"encoding/json", func(c *Cluster) ([]byte, error) { return json.Marshal(c) }},
}

// mutate changes data at a few places in the ways that take a document
// out of the fast path's shape, or keep it in (TestParseFastMatchesStrict
// compares both paths either way).
func mutate(t *rapid.T, data []byte) []byte {
	for range rapid.IntRange(1, 3).Draw(t, "mutations") {
		lines := bytes.SplitAfter(data, []byte("\n"))
		i := rapid.IntRange(0, len(lines)-1).Draw(t, "line")
		switch rapid.IntRange(0, 7).Draw(t, "mutation") {
		case 0: // a line twice
			lines = append(lines[:i+1], lines[i:]...)
		case 1: // a line less
			lines = append(lines[:i], lines[i+1:]...)
		case 2: // two lines swapped
			j := rapid.IntRange(0, len(lines)-1).Draw(t, "other line")
			lines[i], lines[j] = lines[j], lines[i]
		case 3: // indented
			lines[i] = append([]byte(rapid.SampledFrom([]string{" ", "  ", "- ", "\t"}).Draw(t, "indent")), lines[i]...)
		case 4: // dedented
			lines[i] = bytes.TrimPrefix(lines[i], []byte(rapid.SampledFrom([]string{" ", "  ", "- "}).Draw(t, "dedent")))
		default: // a byte inserted, replaced or removed
			l := lines[i]
			at := rapid.IntRange(0, len(l)).Draw(t, "at")
			b := rapid.SampledFrom([]string{"", "\n", " ", "-", ":", "#", "\"", "'", "{", "}", "[", "]", ",", "\t", "&", "*", "!", "|",
				"a", "1", "\\", "null", "~", "\r", "\x00", "é", "?", "<<", "---", "..."}).Draw(t, "byte")
			cut := 0
			if at < len(l) {
				cut = rapid.IntRange(0, 1).Draw(t, "cut")
			}
			l = append(append(append([]byte{}, l[:at]...), b...), l[at+cut:]...)
			lines[i] = l
		}
		data = bytes.Join(lines, nil)
	}
	return data
}

// TestParseFastMatchesStrict: on clusters written by ckegen's and CKE's
// writers, as they are or changed at a few places, Parse reads the cluster
// and gives the error the strict path alone gives (how many the fast path
// read is logged; TestParseFastReadsPlainClusters asserts it reads).
func TestParseFastMatchesStrict(t *testing.T) {
	fast := map[string]int{}
	rapid.Check(t, func(t *rapid.T) {
		var c *Cluster
		if rapid.IntRange(0, 3).Draw(t, "tricky") == 0 {
			c = drawCluster(t)
		} else {
			c = drawPlainCluster(t)
		}
		w := rapid.SampledFrom(writings).Draw(t, "writing")
		data, err := w.write(c)
		if err != nil {
			t.Skip(err)
		}
		mutated := rapid.IntRange(0, 2).Draw(t, "mutated") > 0
		if mutated {
			data = mutate(t, data)
		}
		if checkParseFast(t, data) {
			fast[w.name]++
		}
	})
	t.Logf("the fast path read %v", fast)
}

// TestParseFastReadsPlainClusters: every cluster with nodes whose strings
// the writers write in the fast path's styles, as each writer writes it,
// takes the fast path, and reads as the strict path reads it.
func TestParseFastReadsPlainClusters(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := drawPlainClusterOf(t, false, true, 1)
		w := rapid.SampledFrom(writings).Draw(t, "writing")
		data, err := w.write(c)
		if err != nil {
			t.Fatal(err)
		}
		if !checkParseFast(t, data) {
			t.Fatalf("%s: the fast path gave up on\n%s", w.name, data)
		}
	})
}

// TestParseFastTakesWritersOutput: a generated cluster's shape, as each
// writer writes it, takes the fast path.
func TestParseFastTakesWritersOutput(t *testing.T) {
	c := benchCluster(200)
	c.Nodes[5].Hostname = "host5"
	c.Nodes[6].Labels["cke.cybozu.com/weight"] = "1.5"
	c.Nodes[7].Taints = append(c.Nodes[7].Taints, Taint{Key: "k", Effect: "NoExecute"})
	c.DNSServers = []string{"10.0.0.53"}
	c.Reboot = json.RawMessage(`{"reboot_command":["true"],"boot_check_command":["true"]}`)
	for _, w := range writings {
		data, err := w.write(c)
		if err != nil {
			t.Fatal(err)
		}
		if !checkParseFast(t, data) {
			t.Errorf("%s: the fast path gave up", w.name)
		}
	}
}

// TestPlainStringKnowsTheWords: plainString looks up only the words that
// start with y, n, t, f or o and are at most 5 bytes long: every YAML 1.1
// word that starts with a letter is one of them.
func TestPlainStringKnowsTheWords(t *testing.T) {
	r := yamlIn{w: newYAMLWriter()}
	for w := range yaml11Words {
		c := w[0] | 0x20
		if c < 'a' || c > 'z' {
			continue
		}
		if !strings.ContainsRune("yntfo", rune(c)) || len(w) > 5 {
			t.Errorf("the YAML 1.1 word %q is not among those plainString looks up", w)
		}
		if r.plainString([]byte(w)) {
			t.Errorf("plainString(%q): a string", w)
		}
	}
}

// TestQuickScalarAsScalar: where quickScalar decides a string, it writes
// what scalar writes.
func TestQuickScalarAsScalar(t *testing.T) {
	check := func(t interface{ Fatalf(string, ...any) }, s string, key bool) {
		got, ok := quickScalar([]byte("x"), s, key)
		if !ok {
			return
		}
		want, wantOK := newYAMLWriter().scalar([]byte("x"), s, key)
		if !wantOK || string(got) != string(want) {
			t.Fatalf("quickScalar(%q, key %v) = %q, scalar = %q, %v", s, key, got, want, wantOK)
		}
	}
	for _, s := range append(trickyStrings, plainStrings...) {
		check(t, s, false)
		check(t, s, true)
	}
	for w := range yaml11Words {
		check(t, w, false)
	}
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.StringOf(rapid.SampledFrom([]rune("0123456789.:-+_/aynYNtfoOxe"))).Draw(t, "s")
		check(t, s, rapid.Bool().Draw(t, "key"))
	})
}
