// Package labels holds the rules that turn a sabakan machine into a node's
// labels and annotations, the keys the generator owns, and the syntax checks
// for Kubernetes label and annotation keys and values.
package labels

import (
	"errors"
	"maps"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/validate/content"

	"github.com/ckegen/ckegen/machine"
)

// Label keys set by the generator (SPEC section 2) or read from templates.
const (
	Role         = "cke.cybozu.com/role"
	Weight       = "cke.cybozu.com/weight"
	Rack         = "cke.cybozu.com/rack"
	IndexInRack  = "cke.cybozu.com/index-in-rack"
	RegisterMon  = "cke.cybozu.com/register-month"
	RetireMon    = "cke.cybozu.com/retire-month"
	Zone         = "topology.kubernetes.io/zone"
	ZoneBeta     = "failure-domain.beta.kubernetes.io/zone"
	NodeRoleBase = "node-role.kubernetes.io/"
	Master       = NodeRoleBase + "master"
	ControlPlane = NodeRoleBase + "control-plane"
	// SabakanPrefix prefixes every label copied from sabakan.
	SabakanPrefix = "sabakan.cke.cybozu.com/"
)

// Annotation keys set by the generator.
const (
	AnnotationSerial       = "cke.cybozu.com/serial"
	AnnotationRegisterDate = "cke.cybozu.com/register-date"
	AnnotationRetireDate   = "cke.cybozu.com/retire-date"
)

var reservedLabels = []string{Rack, IndexInRack, RegisterMon, RetireMon, Zone, ZoneBeta}

var reservedAnnotations = []string{AnnotationSerial, AnnotationRegisterDate, AnnotationRetireDate}

// IsReservedLabel reports whether key is a label the generator owns, which a
// template may not set.
func IsReservedLabel(key string) bool {
	for _, k := range reservedLabels {
		if key == k {
			return true
		}
	}
	return strings.HasPrefix(key, NodeRoleBase) || strings.HasPrefix(key, SabakanPrefix)
}

// IsReservedAnnotation reports whether key is an annotation the generator
// owns.
func IsReservedAnnotation(key string) bool {
	for _, k := range reservedAnnotations {
		if key == k {
			return true
		}
	}
	return false
}

// ValidateKey checks a label, annotation or taint key.
func ValidateKey(key string) error {
	return joinMessages(content.IsLabelKey(key))
}

// ValidateValue checks a label or taint value.
func ValidateValue(value string) error {
	return joinMessages(content.IsLabelValue(value))
}

// ValidateSabakanLabel checks that a sabakan label can become the node label
// SabakanPrefix+name=value.
func ValidateSabakanLabel(name, value string) error {
	if err := ValidateKey(SabakanPrefix + name); err != nil {
		return err
	}
	return ValidateValue(value)
}

func joinMessages(msgs []string) error {
	if len(msgs) == 0 {
		return nil
	}
	return errors.New(strings.Join(msgs, "; "))
}

// Template is the part of a node template that rendering reads.
type Template struct {
	Labels      map[string]string
	Annotations map[string]string
}

// Render returns the labels and annotations of the node for machine m made
// from template t, in SPEC section 2's order (later wins on equal keys):
// sabakan labels, the template's labels except the weight, the machine's
// fields, and for control planes the node-role labels.
func Render(m *machine.Machine, t Template, controlPlane bool) (map[string]string, map[string]string) {
	spec := &m.Spec
	ls := make(map[string]string, len(spec.Labels)+len(t.Labels)+12)
	for _, l := range spec.Labels {
		ls[SabakanPrefix+l.Name] = l.Value
	}
	for k, v := range t.Labels {
		if k != Weight {
			ls[k] = v
		}
	}
	rack := strconv.Itoa(spec.Rack)
	ls[Rack] = rack
	ls[IndexInRack] = strconv.Itoa(spec.IndexInRack)
	ls[Role] = spec.Role
	ls[RegisterMon] = spec.RegisterDate.UTC().Format("2006-01")
	ls[RetireMon] = spec.RetireDate.UTC().Format("2006-01")
	if spec.Role != "" {
		ls[NodeRoleBase+spec.Role] = "true"
	}
	ls[Zone] = "rack" + rack
	ls[ZoneBeta] = "rack" + rack
	if controlPlane {
		ls[Master] = "true"
		ls[ControlPlane] = "true"
	}

	as := make(map[string]string, len(t.Annotations)+3)
	maps.Copy(as, t.Annotations)
	as[AnnotationSerial] = spec.Serial
	as[AnnotationRegisterDate] = spec.RegisterDate.UTC().Format(time.RFC3339)
	as[AnnotationRetireDate] = spec.RetireDate.UTC().Format(time.RFC3339)
	return ls, as
}
