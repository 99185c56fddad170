// Package labels holds the rules that turn a sabakan machine into a node's
// labels and annotations, the keys the generator owns, and the syntax checks
// for Kubernetes label and annotation keys and values.
package labels

import (
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/validate/content"

	"github.com/ckegen/ckegen/machine"
)

// Label keys set by the generator (docs/design.md section 2) or read from templates.
const (
	Role        = "cke.cybozu.com/role"
	Weight      = "cke.cybozu.com/weight"
	Rack        = "cke.cybozu.com/rack"
	IndexInRack = "cke.cybozu.com/index-in-rack"
	RegisterMon = "cke.cybozu.com/register-month"
	RetireMon   = "cke.cybozu.com/retire-month"
	RetireYear  = "cke.cybozu.com/retire-year"
	Zone        = "topology.kubernetes.io/zone"
	// ZoneBeta is the deprecated name of Zone. Neither CKE (since its
	// Kubernetes 1.20 update) nor ckegen renders it; it stays reserved
	// (ReservedLabelReason says why).
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

var reservedLabels = []string{Rack, IndexInRack, RegisterMon, RetireMon, RetireYear, Zone}

var reservedAnnotations = []string{AnnotationSerial, AnnotationRegisterDate, AnnotationRetireDate}

// ReservedLabelReason says why a template may not set label key, or is ""
// when it may: the labels the generator sets (docs/design.md section 2),
// and ZoneBeta, which it no longer sets but which would contradict the
// zone it does set.
func ReservedLabelReason(key string) string {
	switch {
	case key == ZoneBeta:
		return "the deprecated name of " + Zone + ", which the generator sets to the machine's rack (rack<N>): " +
			"a template's value, the same in every rack, would contradict it; neither CKE (since Kubernetes 1.20) " +
			"nor ckegen writes it: remove it from the template"
	case slices.Contains(reservedLabels, key), strings.HasPrefix(key, NodeRoleBase), strings.HasPrefix(key, SabakanPrefix):
		return "the generator sets it"
	}
	return ""
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
// from template t, in docs/design.md section 2's order (later wins on equal keys):
// sabakan labels, the template's labels (the weight included, as CKE copies
// every one), the machine's fields, and for control planes the node-role
// labels.
//
// Dates are rendered in the UTC offset sabakan returned them with (docs/design.md
// 1.5), as CKE does: 2031-08-01T05:00:00+09:00 gives the retire month
// 2031-08, the retire year 2031 and that same annotation, to the second.
func Render(m *machine.Machine, t Template, controlPlane bool) (map[string]string, map[string]string) {
	spec := &m.Spec
	// An exact size keeps the map in the smallest table that fits.
	ls := make(map[string]string, labelCount(spec, t, controlPlane))
	for _, l := range spec.Labels {
		ls[SabakanPrefix+l.Name] = l.Value
	}
	maps.Copy(ls, t.Labels)
	registered := FormatDate(spec.RegisterDate)
	retires := FormatDate(spec.RetireDate)
	rack := strconv.Itoa(spec.Rack)
	ls[Rack] = rack
	ls[IndexInRack] = strconv.Itoa(spec.IndexInRack)
	ls[Role] = spec.Role
	ls[RegisterMon] = month(registered)
	ls[RetireMon] = month(retires)
	ls[RetireYear] = year(retires)
	if spec.Role != "" {
		ls[NodeRoleBase+spec.Role] = "true"
	}
	ls[Zone] = "rack" + rack
	if controlPlane {
		ls[Master] = "true"
		ls[ControlPlane] = "true"
	}

	as := make(map[string]string, len(t.Annotations)+3)
	maps.Copy(as, t.Annotations)
	as[AnnotationSerial] = spec.Serial
	as[AnnotationRegisterDate] = registered
	as[AnnotationRetireDate] = retires
	return ls, as
}

// FormatDate is a date as the node annotations carry it: RFC3339 to the
// second (fractional seconds dropped), in the date's own UTC offset, "Z"
// for UTC.
func FormatDate(t time.Time) string {
	return t.Format(time.RFC3339)
}

// yearEnd is the length of the year of an RFC3339 date: four digits, or
// the full form of years outside 0000-9999.
func yearEnd[S string | []byte](rfc3339 S) int {
	for i := 1; i < len(rfc3339); i++ {
		if rfc3339[i] == '-' {
			return i
		}
	}
	return len(rfc3339)
}

// year returns yyyy of an RFC3339 date.
func year(rfc3339 string) string { return rfc3339[:yearEnd(rfc3339)] }

// month returns yyyy-MM of an RFC3339 date.
func month(rfc3339 string) string { return rfc3339[:yearEnd(rfc3339)+3] }

func yearBytes(rfc3339 []byte) []byte  { return rfc3339[:yearEnd(rfc3339)] }
func monthBytes(rfc3339 []byte) []byte { return rfc3339[:yearEnd(rfc3339)+3] }

// Equal reports whether ls and as are exactly what Render would return for
// the same arguments, without building them: the generator keeps a current
// node as is when it already matches, which saves re-rendering thousands of
// unchanged nodes every tick. It may answer false for maps that are equal
// (then the caller renders anew), never true for maps that differ.
func Equal(ls, as map[string]string, m *machine.Machine, t Template, controlPlane bool) bool {
	spec := &m.Spec
	// Count: Render's keys are distinct except for repeated sabakan label
	// names; give up on those rather than count them.
	if repeatsName(spec.Labels) {
		return false
	}
	if len(ls) != labelCount(spec, t, controlPlane) || len(as) != len(t.Annotations)+3 {
		return false
	}

	// One pass over each map: walking a map's slots in order touches far
	// less memory than probing it key by key, which matters when ten
	// thousand nodes are checked every tick. Every key is then accounted
	// for: the count is Render's distinct keys, each is matched, and the
	// lengths are equal.
	var bufs fieldBuffers
	f := formatFields(spec, &bufs)
	return labelsMatch(ls, spec, t, controlPlane, &f) && annotationsMatch(as, spec, t, &f)
}

// repeatsName reports whether two sabakan labels have the same name.
func repeatsName(ls []machine.Label) bool {
	for i := range ls {
		for j := i + 1; j < len(ls); j++ {
			if ls[i].Name == ls[j].Name {
				return true
			}
		}
	}
	return false
}

// labelCount is the number of labels Render returns when the machine's
// sabakan label names are distinct: Render sizes its map with it, and
// Equal checks the length of the labels against it.
func labelCount(spec *machine.Spec, t Template, controlPlane bool) int {
	n := len(spec.Labels) + len(t.Labels) + 7
	if _, ok := t.Labels[Role]; ok {
		n-- // overwritten by the machine's role
	}
	if spec.Role != "" {
		n++
	}
	if controlPlane {
		n += 2
	}
	return n
}

// fieldBuffers hold the bytes of fields, in the caller's frame, so that
// Equal allocates nothing.
type fieldBuffers struct {
	rack, zone, index, registered, retires [40]byte
}

// fields are the machine's fields as Render writes them into labels and
// annotations.
type fields struct {
	rack, zone, index, registered, retires []byte
}

// formatFields formats the machine's fields into b.
func formatFields(spec *machine.Spec, b *fieldBuffers) fields {
	rack := strconv.AppendInt(b.rack[:0], int64(spec.Rack), 10)
	return fields{
		rack:       rack,
		zone:       append(append(b.zone[:0], "rack"...), rack...),
		index:      strconv.AppendInt(b.index[:0], int64(spec.IndexInRack), 10),
		registered: spec.RegisterDate.AppendFormat(b.registered[:0], time.RFC3339),
		retires:    spec.RetireDate.AppendFormat(b.retires[:0], time.RFC3339),
	}
}

// labelsMatch reports whether every label of ls has the value Render gives
// its key.
func labelsMatch(ls map[string]string, spec *machine.Spec, t Template, controlPlane bool, f *fields) bool {
	for k, v := range ls {
		var ok bool
		switch k {
		case Rack:
			ok = v == string(f.rack)
		case Zone:
			ok = v == string(f.zone)
		case IndexInRack:
			ok = v == string(f.index)
		case Role:
			ok = v == spec.Role
		case RegisterMon:
			ok = v == string(monthBytes(f.registered))
		case RetireMon:
			ok = v == string(monthBytes(f.retires))
		case RetireYear:
			ok = v == string(yearBytes(f.retires))
		case Master, ControlPlane:
			ok = controlPlane && v == "true"
		default:
			ok = otherLabelMatches(k, v, spec, t)
		}
		if !ok {
			return false
		}
	}
	return true
}

// otherLabelMatches reports whether Render gives label k, none of the
// machine's fields, the value v: a sabakan label, the node-role label of
// the machine's role, or a template's label (the weight included).
func otherLabelMatches(k, v string, spec *machine.Spec, t Template) bool {
	switch {
	case strings.HasPrefix(k, SabakanPrefix):
		return hasLabel(spec.Labels, k[len(SabakanPrefix):], v)
	case strings.HasPrefix(k, NodeRoleBase):
		return spec.Role != "" && k[len(NodeRoleBase):] == spec.Role && v == "true"
	}
	tv, found := t.Labels[k]
	return found && tv == v
}

// annotationsMatch reports whether every annotation of as has the value
// Render gives its key.
func annotationsMatch(as map[string]string, spec *machine.Spec, t Template, f *fields) bool {
	for k, v := range as {
		var ok bool
		switch k {
		case AnnotationSerial:
			ok = v == spec.Serial
		case AnnotationRegisterDate:
			ok = v == string(f.registered)
		case AnnotationRetireDate:
			ok = v == string(f.retires)
		default:
			tv, found := t.Annotations[k]
			ok = found && tv == v
		}
		if !ok {
			return false
		}
	}
	return true
}

func hasLabel(ls []machine.Label, name, value string) bool {
	for _, l := range ls {
		if l.Name == name {
			return l.Value == value
		}
	}
	return false
}
