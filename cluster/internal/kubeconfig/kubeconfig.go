// Package kubeconfig mirrors the Kubernetes component configurations that
// CKE decodes a cluster's options.kubelet.config, options.kube-scheduler.config
// and options.kube-proxy.config into (KubeletConfiguration v1beta1,
// KubeSchedulerConfiguration v1, KubeProxyConfiguration v1alpha1), so that
// Cluster.Validate can decode them exactly as CKE does without ckegen's module
// requiring k8s.io/kubelet, k8s.io/kube-scheduler, k8s.io/kube-proxy and
// k8s.io/component-base.
//
// zz_generated.go is written by the reference module's test
// (cd ckeref && go test -run TestValidateKubeConfigMirror -update-kubeconfig),
// which also fails while it is out of date with the versions CKE v1.35.4
// requires. The mirror keeps every field, JSON name, Go kind, embedding and
// nesting, and uses k8s.io/api's, k8s.io/apimachinery's and the standard
// library's types as they are, so that encoding/json treats both alike: the
// same fields (matched ignoring case as encoding/json does), the same type
// errors, the same custom decoders. The one custom decoder of a mirrored
// package is written here by hand.
package kubeconfig

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TimeOrMetaDuration mirrors k8s.io/component-base/logs/api/v1's type of
// the same name (logging.flushFrequency): a JSON string is a duration as
// metav1.Duration reads it ("1s"; an empty or bad one is refused), anything
// else a number of nanoseconds as an int64 (null included, which sets
// nothing).
type TimeOrMetaDuration struct {
	Duration metav1.Duration
}

// UnmarshalJSON decodes b as the mirrored type does.
func (t *TimeOrMetaDuration) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &t.Duration)
	}
	if err := json.Unmarshal(b, &t.Duration.Duration); err != nil {
		// encoding/json's words name the Go type.
		return fmt.Errorf(`invalid duration %s: want a string such as "1s" or an integer of nanoseconds`, b)
	}
	return nil
}
