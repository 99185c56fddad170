package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ckegen/ckegen/decision"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/internal/version"
	"github.com/ckegen/ckegen/internal/words"
	"github.com/ckegen/ckegen/liveview"
	"github.com/ckegen/ckegen/planreport"
	"github.com/ckegen/ckegen/storage"
)

func newSabakanStatusCmd(e *env) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "status",
		Short: "print the result of the daemon's last tick",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(output, "table", "yaml", "json"); err != nil {
				return err
			}
			return e.withStorage(func(ctx context.Context, st storage.Storage) error {
				// With what the status cannot say of itself: that its
				// host stopped calling (liveview.Silence), with CKE's phase.
				v, err := liveview.ReadStatus(ctx, st, time.Now())
				if err != nil {
					return absent(err, noStatus(ctx, st))
				}
				if n, err := ckeOwnNote(ctx, e, st, v.Mode); err != nil {
					return err
				} else if n != "" {
					v.Notes = append(v.Notes, n) // CKE's own binary and the count model
				}
				if output == "table" {
					if err := liveStatusTable(cmd.OutOrStdout(), v.Status, v.Acting, v.Writes, v.Notes...); err != nil {
						return err
					}
					return runwayRows(ctx, cmd.OutOrStdout(), st)
				}
				return printData(cmd.OutOrStdout(), v, output)
			})
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table, yaml or json")
	return cmd
}

// noStatus says why there is no status yet as the host that writes it
// is: the ckegen that leads now (ckegen's daemon, or CKE's server with
// ckegen inside, liveview.ReadActor) has not ended a tick; with neither
// leading, that none has ticked and what leads.
func noStatus(ctx context.Context, st storage.Storage) string {
	own, _, _, err := intake.Load(ctx, st, intake.SettingOwner)
	if err != nil {
		return absentStatus
	}
	who, err := liveview.ReadActor(ctx, st, own.Own, time.Now())
	switch {
	case err != nil:
		return absentStatus
	case who.Kind == liveview.InsideCKE:
		return "no status yet: the ckegen inside CKE's server has not ended a tick (CKE's server calls it at each pass of its loop): " + who.Says
	case who.Kind == liveview.Daemon:
		return "no status yet: ckegen's daemon has not ended a tick: " + who.Says
	case who.Kind == liveview.Nobody:
		return absentStatus
	}
	return "no status yet: no ckegen has ended a tick on this etcd and prefix: " + who.Says
}

func newSabakanHistoryCmd(e *env) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "history",
		Short: "print the last applied changes, oldest first",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(output, "table", "yaml", "json"); err != nil {
				return err
			}
			return e.withStorage(func(ctx context.Context, st storage.Storage) error {
				h, err := st.History(ctx)
				if err != nil {
					return err
				}
				if output == "table" {
					return historyTable(cmd.OutOrStdout(), h)
				}
				return printData(cmd.OutOrStdout(), h, output)
			})
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table, yaml or json")
	return cmd
}

func printData(w io.Writer, v any, format string) error {
	var data []byte
	var err error
	if format == "json" {
		data, err = json.MarshalIndent(v, "", "  ")
		data = append(data, '\n')
	} else {
		data, err = yaml.Marshal(v)
	}
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}

func ts(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// modeLine says how ckegen runs and who writes the cluster (docs/
// beside-cke.md), in words read once.
func modeLine(s storage.Status) string {
	switch {
	case s.Mode == decision.ModeInsideCKE:
		return "inside CKE: ckegen is CKE's server's sabakan integration and writes cluster.yml when CKE's server calls it (CKE's sabakan/disabled is the switch)"
	case s.Mode == decision.ModeBesideCKE && s.Owner == intake.OwnerCKEGen:
		return "beside CKE: a CKE server holds leader/, and ckegen writes cluster.yml (sabakan/owner ckegen)"
	case s.Mode == decision.ModeBesideCKE:
		return "beside CKE: a CKE server holds leader/, and its own integration writes cluster.yml (sabakan/owner cke); ckegen holds"
	case s.Owner == intake.OwnerCKEGen:
		return "standalone: ckegen writes cluster.yml (sabakan/owner ckegen); no CKE server seen"
	}
	return "standalone: ckegen writes cluster.yml; no CKE server seen"
}

// modeNow is the MODE a view of now shows: the mode of the last tick
// (last) when who leads now agrees with it, else the mode of who leads
// now ("" when neither is known). A mode is never taken from a tick whose
// host no longer leads: CKE's own binary leading after a cke with ckegen
// inside is not "inside CKE".
func modeNow(last storage.Status, who liveview.Actor) string {
	switch {
	case agrees(last.Mode, who.Kind):
		return modeLine(last)
	case who.Kind == liveview.InsideCKE || who.Kind == liveview.CKEWithoutCKEGen:
		return modeLine(storage.Status{Mode: decision.ModeInsideCKE})
	case who.Kind == liveview.Daemon && who.CKE != nil:
		return modeLine(storage.Status{Mode: decision.ModeBesideCKE, Owner: last.Owner})
	case who.Kind == liveview.Daemon:
		return modeLine(storage.Status{Mode: decision.ModeStandalone, Owner: last.Owner})
	case who.Kind == liveview.CKENotKnown:
		return "not known: " + who.Says
	case who.Kind == liveview.Nobody:
		return "none: nothing leads"
	}
	return ""
}

// agrees reports whether a tick of mode can be the work of who leads.
func agrees(mode string, k liveview.ActorKind) bool {
	switch mode {
	case decision.ModeInsideCKE:
		return k == liveview.InsideCKE || k == liveview.CKEWithoutCKEGen
	case decision.ModeStandalone, decision.ModeBesideCKE:
		return k == liveview.Daemon
	}
	return false
}

// liveStatusTable is statusTable, with who leads now when it was read
// (who: nil when not): the last tick's leader then says how old it is,
// LEADS NOW who leads, with ckegen's version where it keeps a record, and
// WRITES CLUSTER who writes the cluster (writes, liveview.Writes).
func liveStatusTable(w io.Writer, s storage.Status, who *liveview.Actor, writes string, notes ...string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, n := range notes {
		fmt.Fprintf(tw, "NOTE\t%s\n", n)
	}
	fmt.Fprintf(tw, "RESULT\t%s\n", s.Result)
	if s.Reason != "" {
		fmt.Fprintf(tw, "REASON\t%s\n", s.Reason)
	}
	if s.Message != "" {
		fmt.Fprintf(tw, "MESSAGE\t%s\n", s.Message)
	}
	domainRows(tw, s.Domains)
	warningRows(tw, notInDomainRows(s.Warnings, s.Domains))
	for i, n := range s.SettingsNotes {
		label := ""
		if i == 0 {
			label = "SETTINGS"
		}
		fmt.Fprintf(tw, "%s\t%s\n", label, n)
	}
	fmt.Fprintf(tw, "SINCE\t%s\n", ts(s.Since))
	fmt.Fprintf(tw, "LAST TICK\t%s\n", ts(s.Time))
	fmt.Fprintf(tw, "FAILURES\t%d\n", s.ConsecutiveFailures)
	fmt.Fprintf(tw, "LAST SUCCESS\t%s\n", ts(s.LastSuccess))
	leaderRows(tw, s, who)
	if writes != "" {
		fmt.Fprintf(tw, "WRITES CLUSTER\t%s\n", writes)
	}
	if m := modelLine(s); m != "" {
		fmt.Fprintf(tw, "MODEL\t%s\n", m)
	}
	if k := s.Kubernetes; k != nil {
		if k.Read {
			fmt.Fprintf(tw, "KUBERNETES\tread: %s, %d with intolerable taints\n", words.Count(k.Nodes, "node", "nodes"), k.Intolerable)
		} else {
			fmt.Fprintf(tw, "KUBERNETES\tnot read\n")
		}
	}
	changeStatusRows(tw, s.ChangeStatus)
	if s.LastOp != "" {
		fmt.Fprintf(tw, "LAST OP\t%s (%s)\n", s.LastOp, words.Count(s.LastChangeCount, "change", "changes"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := changesTable(w, s.LastChanges, s.LastChangeCount); err != nil {
		return err
	}
	if err := pendingTable(w, s.Pending); err != nil {
		return err
	}
	return placementsTable(w, s.Placements)
}

// leaderRows say who led the last tick and its mode, and with who, who
// leads now and which version of ckegen, as the elections and the records
// of presence say.
func leaderRows(tw io.Writer, s storage.Status, who *liveview.Actor) {
	if who == nil {
		fmt.Fprintf(tw, "LEADER\t%s\n", s.Leader)
		if s.Mode != "" {
			fmt.Fprintf(tw, "MODE\t%s\n", modeLine(s))
		}
		return
	}
	fmt.Fprintf(tw, "LEADER\t%s (the last tick's, %s)\n", s.Leader, since(s.Time, who.Time))
	fmt.Fprintf(tw, "LEADS NOW\t%s\n", who.Says)
	if v, name := who.Version(); v != "" {
		fmt.Fprintf(tw, "VERSION\tckegen %s on %s; this ckegenctl is %s\n", v, name, version.String())
	}
	if s.Mode == "" {
		// A status of a build that recorded no mode.
		return
	}
	if m := modeNow(s, *who); m != "" {
		fmt.Fprintf(tw, "MODE\t%s\n", m)
	}
}

// since says how long ago t was at now.
func since(t, now time.Time) string {
	if t.IsZero() {
		return "no time recorded"
	}
	return max(now.Sub(t), 0).Truncate(time.Second).String() + " ago"
}

// maxShownWarnings bounds the warnings the status table lists; -o json
// has them all.
const maxShownWarnings = 10

// warningRows lists the last tick's warnings, one a row under WARNINGS:
// what the operator should fix although the tick went on (a template role
// that matches no machine, an even control-plane count, machines left
// out).
func warningRows(tw io.Writer, warnings []string) {
	for i, w := range warnings[:min(len(warnings), maxShownWarnings)] {
		label := ""
		if i == 0 {
			label = "WARNINGS"
		}
		fmt.Fprintf(tw, "%s\t%s\n", label, w)
	}
	if n := len(warnings) - maxShownWarnings; n > 0 {
		fmt.Fprintf(tw, "\tand %d more (ckegenctl sabakan status -o json lists them all)\n", n)
	}
}

// modelLine says which constraints model the last tick used (the last
// that read valid constraints) and, in the rate model, the worker rate
// that decides whether a RETIRED worker may leave (docs/models.md); ""
// before a tick read valid constraints.
func modelLine(s storage.Status) string {
	model := s.Model
	if s.ConstraintsSource == storage.ConstraintsDefault && s.Model == constraints.RateModel {
		model += " (CKE's defaults: no constraints stored)"
	}
	switch {
	case s.Model == "":
		return ""
	case s.Model != constraints.RateModel && s.ConstraintsSource == storage.ConstraintsDefault:
		return s.Model + " (the count model's defaults of an earlier release: no constraints stored)"
	case s.Model != constraints.RateModel:
		return s.Model
	case s.WorkerRate == nil:
		return model + " (worker rate not known: sabakan has not answered yet)"
	}
	r := (*generator.WorkerRate)(s.WorkerRate)
	verdict := "a RETIRED worker past the retire wait may leave"
	if !r.CanRemove() {
		verdict = "RETIRED workers stay"
	}
	return fmt.Sprintf("%s, workers %s: %s", model, r, verdict)
}

// placementsTable shows each placement of the policy: the group of its
// last pick and its nodes by group ("in no group" for the nodes in none;
// a placement without groups shows its number of nodes only).
func placementsTable(w io.Writer, ps []storage.PlacementStatus) error {
	if len(ps) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PLACEMENT\tOBSERVED GROUP\tNODES")
	for _, p := range ps {
		var nodes []string
		for _, g := range p.Groups {
			if len(p.Groups) == 1 && g.Group == generator.NoGroup {
				nodes = append(nodes, strconv.Itoa(g.Nodes))
				continue
			}
			name := g.Group
			if name == generator.NoGroup {
				name = "in no group"
			}
			nodes = append(nodes, fmt.Sprintf("%s %d", name, g.Nodes))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", p.Placement, cmp.Or(p.ObservedGroup, "-"), strings.Join(nodes, ", "))
	}
	return tw.Flush()
}

// changesTable lists the changes a status kept: the first
// storage.MaxChanges of the count made, and a line that says how many
// more were made than kept, since a group of re-renders counts only the
// kept ones.
func changesTable(w io.Writer, cs []storage.Change, count int) error {
	if len(cs) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  ACTION\tADDRESS\tSERIAL\tSCORE\tREASON")
	for _, t := range planreport.Tell(cs, func(c storage.Change) (string, string, string) { return c.Action, c.Address, c.Reason }) {
		c := t.Change
		if t.Addresses != nil {
			// Nodes re-rendered alike: one row for them all.
			fmt.Fprintf(tw, "  %s\t%s\t-\t-\t%s\n", c.Action, words.Count(len(t.Addresses), "node", "nodes"), planreport.Group(t.Addresses, c.Reason))
			continue
		}
		score := "-"
		if c.Score != nil {
			score = planreport.FormatScore(*c.Score)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", c.Action, c.Address, c.Serial, score, c.Reason)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if more := count - len(cs); more > 0 {
		word := "changes"
		if more == 1 {
			word = "change"
		}
		_, err := fmt.Fprintf(w, "  (%d more %s not listed: only the first %d of the step's %d changes are kept)\n", more, word, len(cs), count)
		return err
	}
	return nil
}

func historyTable(w io.Writer, h []storage.HistoryEntry) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	released := slices.ContainsFunc(h, func(e storage.HistoryEntry) bool { return e.ReleasedBy != "" })
	header := "TIME\tOP\tCHANGES\tTEMPLATE REV\tCLUSTER REV"
	if released {
		header += "\tRELEASED BY"
	}
	fmt.Fprintln(tw, header)
	for _, e := range h {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d", ts(e.Time), e.Op, e.ChangeCount, e.TemplateRevision, e.ClusterRevision)
		if released {
			fmt.Fprintf(tw, "\t%s", cmp.Or(e.ReleasedBy, "-"))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// runwayRows say the leader's last forecast: its runway and age, its
// next events (liveview.Runway), or that none is stored; its next
// order-by date, and what is on order.
func runwayRows(ctx context.Context, w io.Writer, st storage.Storage) error {
	r, err := liveview.ReadRunway(ctx, st, time.Now())
	if err != nil {
		return fmt.Errorf("reading the stored forecast: %w", err)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "\nRUNWAY\t%s\n", r.Line())
	for _, ev := range r.Events() {
		fmt.Fprintf(tw, "NEXT EVENT\t%s\n", ev)
	}
	if c := capacityLine(r); c != "" {
		fmt.Fprintf(tw, "CAPACITY\t%s\n", c)
	}
	orderRows(ctx, tw, st, r)
	return tw.Flush()
}
