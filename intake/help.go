package intake

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/ckegen/ckegen/constraints"
)

// The longer help of the rows' commands.

// switchHelp ends the help of enable, disable and is-enabled: which of
// the two switches they act on (docs/beside-cke.md).
const switchHelp = `

While ckegen owns the integration (sabakan/owner ckegen, see ckegenctl sabakan
owner), this acts on ckegen's own switch sabakan/ckegen/disabled and never on
CKE's sabakan/disabled (which takeover set to true to stop CKE's own
integration). Otherwise it acts on sabakan/disabled, as CKE's ckecli does. The
switch acted on is named on stderr.`

// constraintMeaning says what a constraint name of CKE's means to ckegen.
func constraintMeaning(name string) string {
	switch name {
	case constraints.ControlPlaneCount:
		return "number of control planes (1 when nothing is stored; keep it odd for etcd's quorum)"
	case constraints.MinimumWorkers:
		return "count model: fewest workers the cluster may have (1 when left out)"
	case constraints.MaximumWorkers:
		return "count model: most workers the cluster may have; 0 means no limit (0 when left out)"
	case constraints.MinimumWorkersRate:
		return "rate model (CKE v1.35): every HEALTHY machine a worker template accepts is a worker; " +
			"a RETIRED worker leaves only while (workers - 1) / machines * 100 >= this percentage (0 to 100; 80 when nothing is stored)"
	case constraints.MaximumUnreachableNodesForReboot:
		return "CKE's reboot queue setting: stored and kept, unused by ckegen"
	case constraints.MaximumRepairQueueEntries, constraints.WaitSecondsToRepairRebooting:
		return "CKE's auto-repair setting: unused by ckegen's daemons; inside CKE's server, its auto-repair (which ckegen runs) uses it"
	}
	return ""
}

// constraintsSetHelp is the help of constraints set: what it does, and
// each name with its meaning.
func constraintsSetHelp() string {
	var b strings.Builder
	b.WriteString("set NAME VALUE sets one constraint. The constraints that result are\n" +
		"validated before they are stored; nothing is stored on error. VALUE is an\n" +
		"integer (a negative one is taken as VALUE, not as a flag). Before storing,\n" +
		"the generator runs dry on the current inventory with the new constraints,\n" +
		"as --dry-run does, and prints its warnings on stderr; the constraints are\n" +
		"stored all the same. With --dry-run nothing is stored: the plan the daemon\n" +
		"would follow with the new constraints is printed instead.\n\n" +
		"The stored keys choose the model of the workers: minimum-workers and\n" +
		"maximum-workers the count model, minimum-workers-rate the rate model of CKE\n" +
		"v1.35. Setting a key of the other model switches models in one write:\n" +
		"minimum-workers-rate replaces minimum-workers and maximum-workers, and\n" +
		"minimum-workers or maximum-workers replaces minimum-workers-rate (the other\n" +
		"count key takes its default). The stored document then holds the keys of one\n" +
		"model only, as CKE v1.35's ckecli stores them. With no constraints stored, set\n" +
		"starts from CKE v1.35.4's defaults, as its ckecli does (control-plane-count 1,\n" +
		"minimum-workers-rate 80: the rate model); set minimum-workers 1 stores the\n" +
		"count model's defaults (control-plane-count 1, minimum-workers 1,\n" +
		"maximum-workers 0).\n\nNAME is one of:\n")
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	for _, n := range constraints.Names {
		fmt.Fprintf(tw, "  %s\t%s\n", n, constraintMeaning(n))
	}
	_ = tw.Flush() // a strings.Builder does not fail
	return b.String()
}
