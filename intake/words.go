package intake

import (
	"regexp"
	"slices"
)

// Inside CKE's server, the operator has CKE's ckecli: the status names
// ckecli's commands for what CKE's ckecli does, and ckegenctl only for
// what needs it (the trigger, the quiet time, the policy, takeover...).

// ckecliCommands are CKE v1.35.4's ckecli commands that act on what
// ckegen reads, as ckegenctl names them too.
var ckecliCommands = []string{
	"sabakan enable", "sabakan disable", "sabakan is-enabled",
	"sabakan set-url", "sabakan get-url", "sabakan set-template", "sabakan get-template",
	"sabakan set-variables", "sabakan get-variables",
	"constraints set", "constraints show", "cluster get", "leader",
}

// ckegenctlCommand is a command of ckegenctl named in a text, with the
// word after it.
var ckegenctlCommand = regexp.MustCompile(`\bckegenctl ((?:sabakan |constraints |cluster )?[a-z-]+)( [a-z-]+)?`)

// InCKEWords is text with the ckegenctl commands that CKE's ckecli has
// named as ckecli's. CKE v1.35.4's ckecli constraints set knows no count
// key (minimum-workers, maximum-workers): setting one stays ckegenctl's.
func InCKEWords(text string) string {
	return ckegenctlCommand.ReplaceAllStringFunc(text, func(m string) string {
		sub := ckegenctlCommand.FindStringSubmatch(m)
		cmd, arg := sub[1], sub[2]
		if cmd == "constraints set" && (arg == " minimum-workers" || arg == " maximum-workers") {
			return m
		}
		if slices.Contains(ckecliCommands, cmd) {
			return "ckecli " + cmd + arg
		}
		return m
	})
}
