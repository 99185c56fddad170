package decision

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/storage"
)

// maxLastMoved is how many of the machines that moved last the status
// names.
const maxLastMoved = 5

// quietness is the inventory's stillness at a tick (docs/design.md 11.3).
type quietness struct {
	// quiet: writes may proceed (always so when the quiet time is 0).
	quiet bool
	// remaining is the time left before they may; 0 when quiet.
	remaining time.Duration
	status    storage.QuietStatus
	// message says why the inventory is not quiet.
	message string
	// inventory is what the memory keeps of the set of serials.
	inventory InventoryMemory
}

// evaluateQuiet decides whether the inventory has been still for
// quietTime at now: every machine's state unchanged for that long
// (status.duration), and the set of serials unchanged for that long. The
// set is known by its digest; prev (the memory of the last tick,
// possibly another leader's) says since when the leader has seen it. The
// digest is kept even with no quiet time, so that setting one counts from
// the last change rather than from then.
func evaluateQuiet(ms []*machine.Machine, quietTime time.Duration, prev InventoryMemory, now time.Time) quietness {
	digest := machine.SerialsDigest(ms)
	since := now
	if prev.Digest == digest && !prev.Since.IsZero() && !prev.Since.After(now) {
		since = prev.Since
	}
	q := quietness{quiet: true, status: storage.QuietStatus{QuietTime: quietTime.String(), InventorySince: since},
		inventory: InventoryMemory{Digest: digest, Since: since}}
	if quietTime <= 0 {
		return q
	}

	// The machines that moved less than quietTime ago, most recent first.
	var moved []*machine.Machine
	for _, m := range ms {
		if m.StateAge() < quietTime {
			moved = append(moved, m)
		}
	}
	slices.SortFunc(moved, func(a, b *machine.Machine) int {
		return cmp.Or(cmp.Compare(a.Status.Duration, b.Status.Duration), strings.Compare(a.Spec.Serial, b.Spec.Serial))
	})
	setAge := now.Sub(since)
	if len(moved) == 0 && setAge >= quietTime {
		return q
	}

	q.quiet = false
	q.remaining = quietTime - setAge
	var parts []string
	if len(moved) > 0 {
		q.remaining = max(q.remaining, quietTime-moved[0].StateAge())
		for _, m := range moved[:min(len(moved), maxLastMoved)] {
			q.status.LastMoved = append(q.status.LastMoved, fmt.Sprintf("%s (serial %s) %s for %s",
				m.Address(), m.Spec.Serial, m.Status.State, m.StateAge().Round(time.Second)))
		}
		what := "last moved: " + strings.Join(q.status.LastMoved, ", ")
		if more := len(moved) - maxLastMoved; more > 0 {
			what += fmt.Sprintf(" and %d more", more)
		}
		parts = append(parts, what)
	}
	if setAge < quietTime {
		parts = append(parts, fmt.Sprintf("machines joined or left the query's result %s ago", setAge.Round(time.Second)))
	}
	q.status.Remaining = q.remaining.Round(time.Second).String()
	q.message = fmt.Sprintf("the inventory has not been quiet for the quiet time %s: %s left; %s",
		quietTime, q.status.Remaining, strings.Join(parts, "; "))
	return q
}
