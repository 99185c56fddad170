// Package kubenodes reads the taints of a Kubernetes cluster's Nodes: from
// the API server once per call (a paged list with client-go), or from a file
// for the offline generator (package nodefile, which links no client). Both
// give the generator's input: the taints of every Node, by Node name.
package kubenodes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	yamlv2 "go.yaml.in/yaml/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	"sigs.k8s.io/yaml"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/internal/strictjson"
	"github.com/ckegen/ckegen/internal/strictjson/yamlpos"
	"github.com/ckegen/ckegen/taints"
)

// ErrUnreachable is wrapped by every error of Reader.List that comes from
// the API server or the way to it: no answer in time, no connection, or an
// error status. The error also wraps the cause (errors.Is/As work on both).
var ErrUnreachable = errors.New("Kubernetes API server unreachable") //nolint:staticcheck // ST1005: a proper noun

// Defaults of Options.
const (
	DefaultTimeout  = 10 * time.Second
	DefaultPageSize = 500
)

// Options tune a Reader. Zero values take the defaults.
type Options struct {
	// Timeout bounds one whole List, every page included.
	Timeout time.Duration
	// PageSize is the number of Nodes asked for per request.
	PageSize int64
}

// Reader lists the Nodes of one Kubernetes cluster.
type Reader struct {
	client   rest.Interface
	params   runtime.ParameterCodec
	host     string
	timeout  time.Duration
	pageSize int64
}

// Open returns the reader of the cluster of the kubeconfig file path,
// each List within timeout, as a command's --kubeconfig and
// --kubernetes-timeout give them; nil without a path.
func Open(path string, timeout time.Duration) (*Reader, error) {
	if path == "" {
		return nil, nil
	}
	cfg, err := LoadKubeconfig(path)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig: %w", err)
	}
	r, err := NewReader(cfg, Options{Timeout: timeout})
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", path, err)
	}
	return r, nil
}

// LoadKubeconfig reads a kubeconfig file (its current context), as kubectl
// does with --kubeconfig.
//
// A file client-go refuses as a kubeconfig is reported at the line and
// column of what is wrong, in YAML's and JSON's words (strictjson and
// yamlpos): client-go's own words name Go's types ("cannot unmarshal
// number into Go struct field Config.clusters of type
// []v1.NamedCluster").
func LoadKubeconfig(path string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		if data, rerr := os.ReadFile(path); rerr == nil {
			if werr := kubeconfigError(data); werr != nil {
				return nil, fmt.Errorf("kubeconfig %s: %w", path, werr)
			}
		}
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	return cfg, nil
}

// kubeconfigError is what makes data, a file client-go refused, no
// kubeconfig, as a *strictjson.Error with its line (and column); nil when
// that is not in its shape (a context that does not exist, say), which
// client-go's words then say.
func kubeconfigError(data []byte) error {
	var doc any
	if err := yamlv2.Unmarshal(data, &doc); err != nil {
		return yamlpos.Errors(err, data)
	}
	if doc == nil {
		return nil
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		if k := yamlpos.BadKey(data); k != nil {
			return k
		}
		return nil
	}
	if _, ok := doc.(map[any]any); !ok {
		return yamlpos.Place(strictjson.WrongKind(nil, "an object (a kubeconfig: apiVersion, kind, clusters, users, contexts)", js), data)
	}
	if err := strictjson.UnmarshalIgnoringUnknown(js, new(clientcmdv1.Config)); err != nil {
		return yamlpos.Place(err, data)
	}
	return nil
}

// NewReader returns a Reader of the API server that cfg points to. It does
// not connect: the first List does.
//
// The Reader asks for protobuf (JSON when the server has none), and has no
// client-side rate limit unless cfg sets one: a List is a few sequential
// requests once per call, and the API server's own fairness limits apply.
func NewReader(cfg *rest.Config, o Options) (*Reader, error) {
	if o.Timeout < 0 {
		return nil, fmt.Errorf("timeout: must not be negative, got %s", o.Timeout)
	}
	if o.PageSize < 0 {
		return nil, fmt.Errorf("page size: must not be negative, got %d", o.PageSize)
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.PageSize == 0 {
		o.PageSize = DefaultPageSize
	}
	c := rest.CopyConfig(cfg)
	if c.ContentType == "" {
		c.ContentType = "application/vnd.kubernetes.protobuf"
		c.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	}
	if c.QPS == 0 && c.RateLimiter == nil {
		c.QPS = -1
	}
	if c.UserAgent == "" {
		c.UserAgent = "ckegen"
	}
	// A REST client of core/v1 with a scheme of core/v1 alone: the
	// generated clientset's scheme registers every API group's types, which
	// made each binary that links this package about 17 MB larger.
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("Kubernetes client: %w", err) //nolint:staticcheck // ST1005: a proper noun
	}
	c.APIPath = "/api"
	c.GroupVersion = &corev1.SchemeGroupVersion
	c.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("Kubernetes client for %s: %w", cfg.Host, err) //nolint:staticcheck // ST1005: a proper noun
	}
	return &Reader{client: rc, params: runtime.NewParameterCodec(scheme), host: cfg.Host, timeout: o.Timeout, pageSize: o.PageSize}, nil
}

// Host is the API server's address, for messages.
func (r *Reader) Host() string { return r.host }

// NodeTaints lists every Node, page by page, within the Reader's timeout, and
// returns the taints of each by Node name (every Node has an entry; one
// without taints has a nil slice). The taints keep the Node's order.
//
// When the API server fails or does not answer in time the error wraps
// ErrUnreachable. When ctx itself ends first, the error wraps ctx's error
// and not ErrUnreachable: the server was not the problem.
func (r *Reader) NodeTaints(ctx context.Context) (map[string][]cluster.Taint, error) {
	lctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	var out map[string][]cluster.Taint
	opts := metav1.ListOptions{Limit: r.pageSize}
	for page := 1; ; page++ {
		list := &corev1.NodeList{}
		err := r.client.Get().Resource("nodes").VersionedParams(&opts, r.params).Do(lctx).Into(list)
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("listing Nodes from %s: %w", r.host, context.Cause(ctx))
			}
			if lctx.Err() != nil {
				return nil, fmt.Errorf("%w: %s: no answer within %s (page %d of Nodes): %w", ErrUnreachable, r.host, r.timeout, page, err)
			}
			return nil, fmt.Errorf("%w: %s: listing Nodes (page %d): %w", ErrUnreachable, r.host, page, err)
		}
		if out == nil {
			n := len(list.Items)
			if c := list.RemainingItemCount; c != nil && *c > 0 {
				n += int(*c)
			}
			out = make(map[string][]cluster.Taint, n)
		}
		addNodes(out, list.Items)
		if list.Continue == "" {
			return out, nil
		}
		opts.Continue = list.Continue
	}
}

func addNodes(out map[string][]cluster.Taint, nodes []corev1.Node) {
	for i := range nodes {
		n := &nodes[i]
		var ts []cluster.Taint
		if len(n.Spec.Taints) > 0 {
			ts = make([]cluster.Taint, len(n.Spec.Taints))
			for j, t := range n.Spec.Taints {
				ts[j] = cluster.Taint{Key: t.Key, Value: t.Value, Effect: string(t.Effect)}
			}
		}
		out[n.Name] = ts
	}
}

// CountIntolerable counts the Nodes that carry a taint a control plane may
// not carry (docs/design.md 6.4), given the template's control_plane_tolerations and
// any other key tolerated on control planes.
func CountIntolerable(nodeTaints map[string][]cluster.Taint, tolerations []string) int {
	n := 0
	for _, ts := range nodeTaints {
		if taints.Intolerable(ts, tolerations) != nil {
			n++
		}
	}
	return n
}
