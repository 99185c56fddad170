package policy

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strings"

	"github.com/ckegen/ckegen/internal/strictjson"
	"github.com/ckegen/ckegen/labels"
	"github.com/ckegen/ckegen/template"
)

// Validate checks everything that does not need a template (docs/design.md 12.1,
// 20): constraints parse, metrics are defined with a known provider,
// min < max, numbers are finite, provider types are known and have what
// their type needs, group names are unique, stickiness is >= 0, a spread
// fits its placement's kind, the failure domain's label is a label name. Every
// problem is reported, each naming its path; the order is fixed.
func (d *Document) Validate() error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	for _, k := range sortedKeys(d.Placements) {
		d.validatePlacement(root.Key("placements").Key(k), k, d.Placements[k], add)
	}
	for _, k := range sortedKeys(d.Metrics) {
		d.validateMetric(root.Key("metrics").Key(k), k, d.Metrics[k], add)
	}
	for _, k := range sortedKeys(d.Providers) {
		d.validateProvider(root.Key("providers").Key(k), d.Providers[k], add)
	}
	s := float64(d.Stickiness)
	if math.IsNaN(s) || math.IsInf(s, 0) || s < 0 {
		add(pathErr(root.Key("stickiness"), "must be a finite number >= 0 (0: never rebalance), got %v", s))
	}
	if fd := d.FailureDomain; fd != nil {
		switch {
		case fd.Label == "":
			add(pathErr(root.Key("failureDomain").Key("label"), "required: the sabakan label whose value is a machine's failure domain, such as power-feed (leave failureDomain out for the rack)"))
		case labels.ValidateKey(labels.SabakanPrefix+fd.Label) != nil:
			add(pathErr(root.Key("failureDomain").Key("label"), "%q is not a sabakan label name a node can carry: %v", fd.Label, labels.ValidateKey(labels.SabakanPrefix+fd.Label)))
		}
	}
	return errors.Join(errs...)
}

func (d *Document) validatePlacement(path strictjson.Path, key string, p *PlacementSpec, add func(error)) {
	if p == nil {
		add(pathErr(path, "must be an object, got null"))
		return
	}
	if sp := p.Spread; sp != nil {
		switch {
		case key == ControlPlane && !sp.Quorum:
			add(pathErr(path.Key("spread"), "the control plane spreads with spread: quorum (no failure domain holds more control planes than etcd's quorum survives losing); maxSkew is for worker templates"))
		case key != ControlPlane && sp.Quorum:
			add(pathErr(path.Key("spread"), "quorum is the control plane's spread (etcd runs there); a worker template takes {maxSkew: N}"))
		}
	}
	d.validateConstraints(path, p.Constraints, p.MetricConstraints, add)
	if len(p.Groups) > MaxGroups {
		add(pathErr(path.Key("groups"), "at most %d groups, got %d", MaxGroups, len(p.Groups)))
	}
	seen := map[string]int{}
	for i, g := range p.Groups {
		gpath := path.Key("groups").Index(i)
		switch prev, dup := seen[g.Name]; {
		case g.Name == "":
			add(pathErr(gpath.Key("name"), "required: a name for the group, shown in explanations and status"))
		case dup:
			add(pathErr(gpath.Key("name"), "%q is already the name of groups[%d]: group names must be unique", g.Name, prev))
		case strings.ContainsFunc(g.Name, func(r rune) bool { return r < ' ' || r == 0x7f }):
			add(pathErr(gpath.Key("name"), "must not hold control characters, got %q", g.Name))
		default:
			seen[g.Name] = i
		}
		d.validateConstraints(gpath, g.Constraints, g.MetricConstraints, add)
	}
	scored := map[string]int{}
	for i, m := range p.Metrics {
		mpath := path.Key("metrics").Index(i)
		if prev, dup := scored[m.Name]; dup {
			add(pathErr(mpath.Key("name"), "metric %q is already scored at metrics[%d]", m.Name, prev))
		} else {
			scored[m.Name] = i
		}
		if err := d.checkMetricDefined(m.Name); err != nil {
			add(pathErr(mpath.Key("name"), "%v", err))
		}
		if w := float64(m.Weight); math.IsNaN(w) || math.IsInf(w, 0) {
			add(pathErr(mpath.Key("weight"), "must be a finite number, got %v", w))
		}
	}
}

func (d *Document) validateConstraints(path strictjson.Path, cs, mcs []string, add func(error)) {
	for i, s := range cs {
		if _, err := ParseLabelConstraint(s); err != nil {
			add(pathErr(path.Key("constraints").Index(i), "%v (in %q)%s", err, s, flowListHint(s)))
		}
	}
	for i, s := range mcs {
		cpath := path.Key("metricConstraints").Index(i)
		c, err := ParseMetricConstraint(s)
		if err != nil {
			add(pathErr(cpath, "%v (in %q)", err, s))
			continue
		}
		if err := d.checkMetricDefined(c.Metric); err != nil {
			add(pathErr(cpath, "%v", err))
		}
	}
}

// flowListHint explains the usual cause of a list cut in two: a YAML flow
// sequence, [a in (x, y)], splits at the comma.
func flowListHint(s string) string {
	open, closed := strings.Contains(s, "("), strings.Contains(s, ")")
	if open == closed {
		return ""
	}
	return "; in a YAML flow list [...] a comma ends the item: quote the constraint or write one \"- ...\" per line"
}

func (d *Document) checkMetricDefined(name string) error {
	if _, ok := d.Metrics[name]; ok {
		return nil
	}
	if len(d.Metrics) == 0 {
		return fmt.Errorf("metric %q is not defined: define it under metrics", name)
	}
	return fmt.Errorf("metric %q is not defined (defined: %s)", name, strings.Join(sortedKeys(d.Metrics), ", "))
}

func (d *Document) validateMetric(path strictjson.Path, name string, m *MetricSpec, add func(error)) {
	if m == nil {
		add(pathErr(path, "must be an object, got null"))
		return
	}
	if !metricName.MatchString(name) {
		add(pathErr(path, "invalid metric name: want a letter or _, then letters, digits, _ : . -"))
	}
	prov, ok := d.Providers[m.Provider]
	switch {
	case m.Provider == "":
		add(pathErr(path.Key("provider"), "required: the name of one of providers"))
	case !ok:
		add(pathErr(path.Key("provider"), "provider %q is not defined (defined: %s)", m.Provider, strings.Join(sortedKeys(d.Providers), ", ")))
	case prov != nil && prov.Type == ProviderPrometheus && strings.TrimSpace(m.Query) == "":
		add(pathErr(path.Key("query"), "required with a prometheus provider: the PromQL instant query"))
	case prov != nil && prov.Type == ProviderStatic && m.Query != "":
		add(pathErr(path.Key("query"), "not used with a static provider (its values are given by serial under the provider)"))
	}
	lo, hi := float64(m.Min), float64(m.Max)
	for _, f := range []struct {
		name string
		v    float64
	}{{"min", lo}, {"max", hi}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			add(pathErr(path.Key(f.name), "must be a finite number, got %v", f.v))
		}
	}
	if lo >= hi {
		add(pathErr(path, "min (%v) must be less than max (%v): values are normalized from [min, max] to [0, 1]", lo, hi))
	}
}

func (d *Document) validateProvider(path strictjson.Path, p *ProviderSpec, add func(error)) {
	if p == nil {
		add(pathErr(path, "must be an object, got null"))
		return
	}
	switch p.Type {
	case ProviderPrometheus:
		if p.URL == "" {
			add(pathErr(path.Key("url"), "required: the Prometheus server's URL, such as http://127.0.0.1:9090"))
		} else if u, err := url.Parse(p.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			add(pathErr(path.Key("url"), "must be an absolute http or https URL, got %q", p.URL))
		}
		if p.Timeout < 0 {
			add(pathErr(path.Key("timeout"), "must be > 0, got %s", p.Timeout.String()))
		}
		if p.Values != nil {
			add(pathErr(path.Key("values"), "only a static provider has values"))
		}
	case ProviderStatic:
		if p.URL != "" {
			add(pathErr(path.Key("url"), "only a prometheus provider has a url"))
		}
		if p.Timeout != 0 {
			add(pathErr(path.Key("timeout"), "only a prometheus provider has a timeout"))
		}
		for _, serial := range sortedKeys(p.Values) {
			spath := path.Key("values").Key(serial)
			for _, name := range sortedKeys(p.Values[serial]) {
				vpath := spath.Key(name)
				if v := float64(p.Values[serial][name]); math.IsNaN(v) || math.IsInf(v, 0) {
					add(pathErr(vpath, "must be a finite number, got %v", v))
				}
				// A value of a metric that another provider serves is
				// kept for when the metric is pointed here; an unknown
				// name is a typo.
				if err := d.checkMetricDefined(name); err != nil {
					add(pathErr(vpath, "%v", err))
				}
			}
		}
	case "":
		add(pathErr(path.Key("type"), "required: %s or %s", ProviderPrometheus, ProviderStatic))
	default:
		add(pathErr(path.Key("type"), "unknown provider type %q (known: %s, %s)", p.Type, ProviderPrometheus, ProviderStatic))
	}
}

// CheckTemplate checks that every placement names a template of t: the
// control plane (ControlPlane) or a worker template's role ("" for a
// single worker template without a role).
func (d *Document) CheckTemplate(t *template.Template) error {
	keys := Keys(t)
	var errs []error
	for _, k := range sortedKeys(d.Placements) {
		if !slices.Contains(keys, k) {
			errs = append(errs, pathErr(root.Key("placements").Key(k), "no template takes this placement (placements of this template: %s)", describeKeys(keys)))
		}
	}
	return errors.Join(errs...)
}

// Keys lists the placement keys of t's templates: ControlPlane, then each
// worker template's role in the template's order.
func Keys(t *template.Template) []string {
	keys := []string{ControlPlane}
	for _, w := range t.Workers {
		keys = append(keys, w.Role)
	}
	return keys
}

// Key is the placement key of a template node.
func Key(nt *template.NodeTemplate) string {
	if nt.Node != nil && nt.Node.ControlPlane {
		return ControlPlane
	}
	return nt.Role
}

func describeKeys(keys []string) string {
	q := make([]string, len(keys))
	for i, k := range keys {
		q[i] = fmt.Sprintf("%q", k)
	}
	return strings.Join(q, ", ")
}
