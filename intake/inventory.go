package intake

import (
	"context"

	"github.com/ckegen/ckegen/labels"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/policy"
)

// Sanitize makes sabakan's answer (or a machines file) the inventory's
// machines: each machine checked, those unusable left out and bad labels
// dropped, with a warning for each. It also returns the roles of every
// machine as given, for the generator's typo guard.
func Sanitize(raw []machine.Machine) (ms []*machine.Machine, roles []string, warnings []string) {
	roles = machine.Roles(raw)
	ms, warnings = machine.Sanitize(raw, labels.ValidateSabakanLabel)
	return ms, roles, warnings
}

// FetchMetrics gets the values of the policy's metrics for the machines,
// once, before any decision (docs/design.md 12.3); nil without a policy or
// without metrics. It returns what each provider did, and the warnings
// for the operator: what Prometheus warned about, and a metric no machine
// has a value of.
func FetchMetrics(ctx context.Context, pol *policy.Policy, ms []*machine.Machine) (*policy.Values, []MetricStat, []string, error) {
	if pol == nil || len(pol.Metrics()) == 0 {
		return nil, nil, nil, nil
	}
	vals, stats, err := fetchMetrics(ctx, pol, ms)
	if err != nil {
		return nil, nil, nil, err
	}
	return vals, stats, metricWarnings(stats, len(ms)), nil
}
