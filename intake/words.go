package intake

import (
	"regexp"
	"strings"
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

// ckegenctlCommand is a command of ckegenctl named in a text.
var ckegenctlCommand = regexp.MustCompile(`\bckegenctl ((?:sabakan |constraints |cluster )?[a-z-]+)`)

// InCKEWords is text with the ckegenctl commands that CKE's ckecli has
// named as ckecli's.
func InCKEWords(text string) string {
	return ckegenctlCommand.ReplaceAllStringFunc(text, func(m string) string {
		cmd := strings.TrimPrefix(m, "ckegenctl ")
		for _, c := range ckecliCommands {
			if cmd == c {
				return "ckecli " + cmd
			}
		}
		return m
	})
}
