package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/internal/words"
	"github.com/ckegen/ckegen/liveview"
	"github.com/ckegen/ckegen/sabakan"
	"github.com/ckegen/ckegen/storage"
)

// Running beside a real CKE server (docs/beside-cke.md): which integration writes
// `cluster` (sabakan/owner), takeover and handback, and the switch that
// enable, disable and is-enabled act on.

// ownership reads the owner and both switches as a tick reads them; a
// stored owner or switch that does not parse is an error that names the
// key and the values it may have.
func ownership(ctx context.Context, st storage.Storage) (intake.Ownership, error) {
	s, refused, _, err := intake.Load(ctx, st, intake.SettingDisabled, intake.SettingOwner, intake.SettingCKEGenDisabled)
	if err != nil {
		return intake.Ownership{}, err
	}
	if ref := intake.First(refused, intake.Switch); ref != nil {
		return s.Own, fmt.Errorf("%w; ckegenctl cannot repair it: put a valid value with etcdctl under %s", ref, st.Prefix)
	}
	return s.Own, nil
}

// writeOwner makes owner the integration's owner and sets CKE's switch to
// ckeDisabled, in one transaction guarded on the owner and both switches
// as o read them, and the keys of also: a takeover or handback whose read
// is stale loses with storage.ErrConflict and writes nothing.
func writeOwner(ctx context.Context, st storage.Storage, o intake.Ownership, owner string, ckeDisabled bool, also ...storage.Guard) error {
	return st.Swap(ctx, append(o.Guards(), also...),
		storage.Write{Key: storage.KeyOwner, Data: []byte(owner)},
		storage.Write{Key: storage.KeySabakanDisabled, Data: []byte(strconv.FormatBool(ckeDisabled))})
}

// ownerText is the owner as stored, saying when the key is absent.
func ownerText(o intake.Ownership) string {
	if o.OwnerRev == 0 {
		return intake.OwnerCKE + " (not set)"
	}
	return o.Owner
}

// errStale is what a guarded write that lost says.
func errStale(command string) error {
	return fmt.Errorf("the owner or a switch changed meanwhile (%s, %s or %s): nothing was written; check with ckegenctl sabakan owner and run ckegenctl sabakan %s again",
		storage.KeyOwner, storage.KeySabakanDisabled, storage.KeyCKEGenDisabled, command)
}

// errStaleConstraints is what a handback whose guarded write lost says:
// the constraints it checked are guarded too.
func errStaleConstraints(command string) error {
	return fmt.Errorf("the owner, a switch or the constraints changed meanwhile (%s, %s, %s or %s): nothing was written; check with ckegenctl sabakan owner and run ckegenctl sabakan %s again",
		storage.KeyOwner, storage.KeySabakanDisabled, storage.KeyCKEGenDisabled, storage.KeyConstraints, command)
}

func newSabakanTakeoverCmd(e *env) *cobra.Command {
	var dry *dryRun
	cmd := &cobra.Command{
		Use:   "takeover",
		Short: "make ckegen the integration that writes the cluster, and stop CKE's own (one transaction)",
		Long: `takeover makes ckegen's daemon the one integration that writes the cluster
beside a CKE server: it writes sabakan/owner ckegen and CKE's sabakan/disabled
true (which stops CKE's own sabakan integration) in one etcd transaction that
succeeds only if neither key, nor ckegen's switch sabakan/ckegen/disabled,
changed since they were read.

takeover first checks the stored settings as ckegen's daemon reads them, and
refuses, naming each problem and writing nothing, when:
  - no constraints are stored: the model of the workers must be explicit
    (ckegenctl constraints set minimum-workers-rate N, or minimum-workers N);
  - the stored constraints are invalid (both models' keys, say);
  - no template is stored, or it is invalid for ckegen;
  - no sabakan URL is stored, or the stored query variables, placement
    policy, trigger, quiet time, max-unhealthy or cluster are invalid.

When ckegen already owns the integration and CKE's sabakan/disabled is true,
takeover says so, writes nothing and exits 0. When ckegen owns it but CKE's
sabakan/disabled is not true (someone enabled CKE's integration with CKE's
ckegenctl: ckegen's daemon then writes nothing, CKE_INTEGRATION_ACTIVE), takeover
checks the settings and sets it to true again.

With --dry-run nothing is written: after the same checks, takeover prints the
plan ckegen's daemon would follow once it owns the integration, computed from
the stored settings as ckegenctl sabakan plan computes it (sabakan is queried,
read only).

ckegenctl sabakan handback gives the integration back to CKE.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return takeover(e, cmd, dry)
		},
	}
	dry = addDryRun(cmd)
	cmd.Flags().Lookup("dry-run").Usage = "write nothing; print the plan ckegen's daemon would follow after takeover (as ckegenctl sabakan plan)"
	return cmd
}

func takeover(e *env, cmd *cobra.Command, dry *dryRun) error {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	var o intake.Ownership
	var owned bool
	var leader string
	err := e.withStorage(func(ctx context.Context, st storage.Storage) error {
		var err error
		if o, err = ownership(ctx, st); err != nil {
			return err
		}
		if o.OwnedByCKEGen() && o.CKEDisabled {
			owned = true
			return nil
		}
		if problems, err := takeoverProblems(ctx, st); err != nil {
			return err
		} else if len(problems) > 0 {
			return fmt.Errorf("takeover refused, nothing written:\n  - %s", strings.Join(problems, "\n  - "))
		}
		if dry.enabled {
			return nil
		}
		if err := writeOwner(ctx, st, o, intake.OwnerCKEGen, true); errors.Is(err, storage.ErrConflict) {
			return errStale("takeover")
		} else if err != nil {
			return err
		}
		// Only for what the command says next: the takeover is done.
		leader, _ = st.CKEGenLeader(ctx)
		return nil
	})
	if err != nil {
		return err
	}
	if owned {
		fmt.Fprintf(stdout, "ckegen already owns the sabakan integration (%s: ckegen, %s: true): nothing written.\n", storage.KeyOwner, storage.KeySabakanDisabled)
		if o.CKEGenDisabled {
			fmt.Fprintf(stdout, "ckegen's own switch %s is true: its daemon writes nothing until ckegenctl sabakan enable.\n", storage.KeyCKEGenDisabled)
		}
		return nil
	}
	if dry.enabled {
		return takeoverDryRun(e, dry, o, stdout, stderr)
	}
	if o.OwnedByCKEGen() {
		fmt.Fprintf(stdout, "ckegen owned the sabakan integration but CKE's %s was %s: set it to true again, so CKE's own integration is stopped.\n",
			storage.KeySabakanDisabled, strconv.FormatBool(o.CKEDisabled))
	} else {
		fmt.Fprintf(stdout, "ckegen now owns the sabakan integration: %s was %s, now ckegen; CKE's %s is now true, which stops CKE's own integration.\n",
			storage.KeyOwner, ownerText(o), storage.KeySabakanDisabled)
	}
	writeTakeoverNext(stdout, o, leader)
	return nil
}

// takeoverDryRun prints the plan ckegen's daemon would follow after a
// takeover of o, and what would hold it.
func takeoverDryRun(e *env, dry *dryRun, o intake.Ownership, stdout, stderr io.Writer) error {
	notes := []string{}
	if o.CKEGenDisabled {
		notes = append(notes, fmt.Sprintf("ckegen's own switch %s is true: after takeover its daemon applies nothing until ckegenctl sabakan enable", storage.KeyCKEGenDisabled))
	}
	if o.CKEServer {
		notes = append(notes, "a CKE server runs: ckegen's daemon applies each step only while CKE's status key says "+intake.CKEPhases()+", as CKE's own integration does")
	}
	if err := dry.plan.plan(e, intake.WhatIf{}, stdout, stderr); err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintf(stderr, "note: %s\n", n)
	}
	fmt.Fprintf(stderr, "dry run: nothing was written; ckegenctl sabakan takeover would write %s: ckegen and %s: true, and ckegen's daemon would follow this plan\n",
		storage.KeyOwner, storage.KeySabakanDisabled)
	return nil
}

// writeTakeoverNext says what happens after a takeover; leader is
// ckegen's leading daemon ("": none).
func writeTakeoverNext(w io.Writer, o intake.Ownership, leader string) {
	switch {
	case o.CKEGenDisabled:
		fmt.Fprintf(w, "Next: ckegen's own switch %s is true: its daemon writes nothing until ckegenctl sabakan enable.\n", storage.KeyCKEGenDisabled)
	case o.CKEServer:
		fmt.Fprintln(w, "Next: ckegen's daemon writes the cluster from its next tick, whenever CKE's server reports phase "+intake.CKEPhases()+" (its status key), as CKE's own integration did.")
	default:
		fmt.Fprintln(w, "Next: ckegen's daemon writes the cluster from its next tick.")
	}
	if leader == "" {
		fmt.Fprintf(w, "No ckegen daemon leads now (nothing under %s): start ckegen's daemon.\n", storage.KeyCKEGenLeader)
	}
	fmt.Fprintln(w, "Watch it with ckegenctl sabakan status and ckegenctl sabakan owner; give the integration back to CKE with ckegenctl sabakan handback.")
}

// takeoverProblems checks the stored settings as ckegen's daemon reads
// them (one transaction, intake's table) and returns what keeps ckegen
// from owning the integration, each with what to do; an etcd failure is an
// error.
func takeoverProblems(ctx context.Context, st storage.Storage) ([]string, error) {
	var r intake.Reader
	snap, err := st.Read(ctx, r.Request(""))
	if err != nil {
		return nil, err
	}
	s, refused := r.ReadEach(snap, intake.WhatIf{})
	var problems []string
	if !s.ConstraintsStored && refused[intake.SettingConstraints] == nil {
		problems = append(problems, fmt.Sprintf("no constraints are stored (%s): ckegen takes over only with an explicit model of the workers; "+
			"run ckegenctl constraints set minimum-workers-rate N (CKE v1.35's rate model) or ckegenctl constraints set minimum-workers N (the count model)",
			storage.KeyConstraints))
	}
	for _, row := range intake.Table {
		if ref := refused[row.Setting]; ref != nil && row.Kind != intake.Switch {
			problems = append(problems, ref.Explain())
		}
	}
	if p, err := insideWithoutDaemons(ctx, st); err != nil {
		return nil, err
	} else if p != "" {
		problems = append(problems, p)
	}
	return problems, nil
}

// insideWithoutDaemons is why a takeover would stop the integration with
// nothing in its place: ckegen runs inside CKE's server (its last status
// says so) and no ckegen daemon leads to take it over ("" otherwise).
func insideWithoutDaemons(ctx context.Context, st storage.Storage) (string, error) {
	if _, err := st.CKEGenLeader(ctx); err == nil || !errors.Is(err, storage.ErrNotFound) {
		return "", err
	}
	s, err := st.GetStatus(ctx)
	if errors.Is(err, storage.ErrNotFound) || errors.Is(err, storage.ErrInvalid) {
		return "", nil
	} else if err != nil {
		return "", err
	}
	if s.Mode != decision.ModeInsideCKE {
		return "", nil
	}
	return fmt.Sprintf("ckegen runs inside CKE's server (the last status is %s's, inside CKE) and no ckegen daemon leads (nothing under %s): "+
		"a takeover would stop it there with nothing to write the cluster instead; to move to ckegen's daemons, start them first and wait for ckegenctl leader to name one (docs/inside-cke.md)",
		s.Leader, storage.KeyCKEGenLeader), nil
}

func newSabakanHandbackCmd(e *env) *cobra.Command {
	var force bool
	o := &planOptions{maxSteps: generator.DefaultMaxSteps}
	cmd := &cobra.Command{
		Use:   "handback",
		Short: "give the integration back to CKE: its own integration writes the cluster again (one transaction)",
		Long: `handback gives the sabakan integration back to CKE: it writes sabakan/owner
cke and CKE's sabakan/disabled false (which restarts the integration of
CKE's server: CKE's own, or ckegen's inside a cke built from ckeserver/) in
one etcd transaction that succeeds only if neither key, nor ckegen's switch
sabakan/ckegen/disabled, nor the constraints changed since they were read.
From its next tick, ckegen's daemon writes nothing while a CKE server runs
(OWNED_BY_CKE).

handback is refused, writes nothing and exits 1 while the count model is in
force (minimum-workers/maximum-workers, stored or by default) or the stored
constraints are refused: CKE v1.35.4's own integration knows the rate model
only, reads minimum-workers-rate 0 from a document of the count model, and
makes every HEALTHY machine a worker template accepts a node, in one write.
The refusal says how many nodes it would add: the leader's decision made, as
ckegenctl sabakan plan makes it (sabakan is queried, read only), with the
constraints as CKE reads them (not known when sabakan does not answer).
Switch to the rate model first, after checking it with ckegenctl constraints
set minimum-workers-rate N --dry-run. --force hands back all the same.

When ckegen does not own the integration, handback says so, writes nothing
and exits 0.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return handback(e, cmd, o, force)
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "hand back while the count model is in force, although CKE's own integration would add every HEALTHY machine a worker template accepts")
	o.addLiveFlags(cmd.Flags())
	return cmd
}

func handback(e *env, cmd *cobra.Command, po *planOptions, force bool) error {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	var o intake.Ownership
	var own *ckeOwn
	err := e.withStorage(func(ctx context.Context, st storage.Storage) error {
		var err error
		if o, err = ownership(ctx, st); err != nil || !o.OwnedByCKEGen() {
			return err
		}
		own, err = readModel(ctx, st)
		return err
	})
	if err != nil {
		return err
	}
	if !o.OwnedByCKEGen() {
		fmt.Fprintf(stdout, "ckegen does not own the sabakan integration (%s: %s): nothing written.\n", storage.KeyOwner, ownerText(o))
		if o.CKEDisabled {
			fmt.Fprintf(stdout, "CKE's %s is true: its own integration is disabled; enable it with ckegenctl sabakan enable.\n", storage.KeySabakanDisabled)
		}
		return nil
	}
	if own.atRisk() {
		own.count(func(w intake.WhatIf) (*decision.Decision, error) {
			d, _, err := po.decide(e, w)
			return d, err
		})
		if !force {
			return fmt.Errorf("handback refused, nothing written: %s; %s (then hand back), or hand back all the same with --force",
				own.says(), toRateModel)
		}
		fmt.Fprintf(stderr, "warning: --force: handing back although %s\n", own.says())
	}
	err = e.withStorage(func(ctx context.Context, st storage.Storage) error {
		if err := writeOwner(ctx, st, o, intake.OwnerCKE, false, own.guard); errors.Is(err, storage.ErrConflict) {
			return errStaleConstraints("handback")
		} else if err != nil {
			return err
		}
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "CKE owns the sabakan integration again: %s is now cke; CKE's %s is now false, which restarts the integration of CKE's server (CKE's own, or ckegen's inside a cke built from ckeserver/).\n",
		storage.KeyOwner, storage.KeySabakanDisabled)
	if own.atRisk() {
		fmt.Fprintf(stdout, "Handed back with --force: if CKE's own integration writes the cluster, %s.\n", own.says())
	}
	if o.CKEServer {
		fmt.Fprintln(stdout, "Next: ckegen's daemon writes nothing from its next tick (OWNED_BY_CKE); CKE's integration writes the cluster.")
	} else {
		fmt.Fprintf(stdout, "Next: no CKE server holds %s now; ckegen's daemon writes nothing all the same (OWNED_BY_CKE, %s is cke), so the cluster changes again when CKE's server runs.\n",
			storage.KeyLeader, storage.KeyOwner)
	}
	fmt.Fprintln(stdout, "Take over again with ckegenctl sabakan takeover.")
	return nil
}

// switchNote says which switch a command acted on, and why.
func switchNote(o intake.Ownership) string {
	switch {
	case o.OwnedByCKEGen():
		return fmt.Sprintf("ckegen's own switch %s (ckegen owns the integration; CKE's %s is left alone)", storage.KeyCKEGenDisabled, storage.KeySabakanDisabled)
	case o.CKEServer:
		return fmt.Sprintf("CKE's switch %s (%s is %s and a CKE server runs: this switches CKE's own integration, as CKE's ckecli does)", storage.KeySabakanDisabled, storage.KeyOwner, ownerText(o))
	case o.HandedBack():
		return fmt.Sprintf("CKE's switch %s (%s is %s: the integration was handed back to CKE, whose server does not run now; this switches CKE's own integration)", storage.KeySabakanDisabled, storage.KeyOwner, ownerText(o))
	default:
		return fmt.Sprintf("%s (%s is %s and no CKE server holds %s: ckegen's daemon runs standalone and honours this switch)", storage.KeySabakanDisabled, storage.KeyOwner, ownerText(o), storage.KeyLeader)
	}
}

// setSwitch writes the switch that o puts in force, in a transaction that
// fails if the owner changed since o was read: the switch must not land on
// CKE's key after a takeover, nor on ckegen's after a handback.
func setSwitch(ctx context.Context, st storage.Storage, o intake.Ownership, disabled bool) error {
	return st.Swap(ctx, []storage.Guard{{Key: storage.KeyOwner, ModRevision: o.OwnerRev}},
		storage.Write{Key: o.SwitchKey(), Data: []byte(strconv.FormatBool(disabled))})
}

// ownerReport is what `sabakan owner` prints.
type ownerReport struct {
	Owner          string `json:"owner"`
	OwnerSet       bool   `json:"ownerSet"`
	CKEDisabled    bool   `json:"ckeDisabled"`
	CKEGenDisabled bool   `json:"ckegenDisabled"`
	// CKEServer: a key exists under CKE's leader/; CKELeader is its name.
	CKEServer    bool              `json:"ckeServer"`
	CKELeader    string            `json:"ckeLeader,omitempty"`
	CKEGenLeader string            `json:"ckegenLeader,omitempty"`
	CKEStatus    *intake.CKEStatus `json:"ckeStatus,omitempty"`
	// Mode is the mode ckegen's last tick ran in ("" before any tick):
	// inside CKE's server, ckegen is CKE's integration whatever the owner.
	Mode string `json:"mode,omitempty"`
	// Acting is who leads now, by the elections and the records of
	// presence (liveview.ReadActor), with how old that evidence is.
	Acting liveview.Actor `json:"acting"`
	// Writer says which integration writes the cluster by the rules of
	// docs/beside-cke.md, given who leads now.
	Writer string `json:"writer"`
	// CKEOwn warns, where CKE's own binary could lead while the count
	// model is in force, how many nodes its integration would add
	// (ckeOwnWarning).
	CKEOwn string `json:"ckeOwnWarning,omitempty"`
}

// whoWrites says who writes the cluster now (liveview.Writes), from the
// leader's decision on the settings alone and who leads now.
func whoWrites(ctx context.Context, e *env, st storage.Storage, who liveview.Actor) (string, error) {
	d, err := liveview.NewReader(st, liveview.Options{EtcdTimeout: e.timeout}).Decide(ctx, liveview.Preview{SettingsOnly: true})
	if err != nil {
		return "", err
	}
	return liveview.Writes(d, who), nil
}

func newSabakanOwnerCmd(e *env) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "owner",
		Short: "print which integration writes the cluster: the owner, both switches, CKE's server and ckegen's leader",
		Long: `owner reads (and writes nothing) sabakan/owner (cke when absent, shown as
"cke (not set)"), CKE's switch sabakan/disabled, ckegen's own switch
sabakan/ckegen/disabled, whether a CKE server holds leader/ and its name,
ckegen's leader (sabakan/ckegen/leader/), CKE's status key, and which
integration writes the cluster by those keys.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(output, "table", "json"); err != nil {
				return err
			}
			var r ownerReport
			err := e.withStorage(func(ctx context.Context, st storage.Storage) error {
				o, err := ownership(ctx, st)
				if err != nil {
					return err
				}
				who, err := liveview.ReadActor(ctx, st, o, time.Now())
				if err != nil {
					return err
				}
				w, err := whoWrites(ctx, e, st, who)
				if err != nil {
					return err
				}
				r = ownerReport{Owner: o.Owner, OwnerSet: o.OwnerRev != 0, CKEDisabled: o.CKEDisabled, CKEGenDisabled: o.CKEGenDisabled,
					CKEServer: o.CKEServer, CKEStatus: o.CKEStatus, Acting: who, Writer: w}
				if r.CKELeader, err = st.CKELeader(ctx); err != nil && !errors.Is(err, storage.ErrNotFound) {
					return err
				}
				if r.CKEGenLeader, err = st.CKEGenLeader(ctx); err != nil && !errors.Is(err, storage.ErrNotFound) {
					return err
				}
				last, err := st.GetStatus(ctx)
				if err != nil && !errors.Is(err, storage.ErrNotFound) {
					return err
				}
				r.Mode = last.Mode
				r.CKEOwn, err = ckeOwnWarning(ctx, e, st, o, last.Mode)
				return err
			})
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if output == "json" {
				data, err := json.MarshalIndent(r, "", "  ")
				if err != nil {
					return err
				}
				_, err = w.Write(append(data, '\n'))
				return err
			}
			return ownerTable(w, r)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table or json")
	return cmd
}

func ownerTable(w io.Writer, r ownerReport) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	owner := r.Owner
	if !r.OwnerSet {
		owner += " (not set)"
	}
	fmt.Fprintf(tw, "OWNER\t%s\n", owner)
	fmt.Fprintf(tw, "CKE SWITCH\t%s %t\n", storage.KeySabakanDisabled, r.CKEDisabled)
	fmt.Fprintf(tw, "CKEGEN SWITCH\t%s %t\n", storage.KeyCKEGenDisabled, r.CKEGenDisabled)
	switch {
	case r.CKELeader != "":
		fmt.Fprintf(tw, "CKE SERVER\t%s leads (%s)\n", r.CKELeader, storage.KeyLeader)
	case r.CKEServer:
		fmt.Fprintf(tw, "CKE SERVER\tcampaigning (%s)\n", storage.KeyLeader)
	default:
		fmt.Fprintf(tw, "CKE SERVER\tnone (nothing under %s)\n", storage.KeyLeader)
	}
	if r.CKEStatus != nil {
		phase := r.CKEStatus.Phase
		if phase == "" {
			phase = "(no phase)"
		}
		at := "-"
		if !r.CKEStatus.Timestamp.IsZero() {
			at = fmt.Sprintf("%s, %s ago", r.CKEStatus.Timestamp.UTC().Format(time.RFC3339), time.Since(r.CKEStatus.Timestamp).Round(time.Second))
		}
		fmt.Fprintf(tw, "CKE STATUS\t%s at %s\n", phase, at)
	} else {
		fmt.Fprintf(tw, "CKE STATUS\tnone (no %s key)\n", storage.KeyCKEStatus)
	}
	switch {
	case r.CKEGenLeader != "":
		fmt.Fprintf(tw, "CKEGEN LEADER\t%s (%s)\n", r.CKEGenLeader, storage.KeyCKEGenLeader)
	case r.Acting.Kind == liveview.InsideCKE:
		fmt.Fprintln(tw, "CKEGEN LEADER\tnone: ckegen runs inside CKE's server, which leads")
	default:
		fmt.Fprintf(tw, "CKEGEN LEADER\tnone (nothing under %s)\n", storage.KeyCKEGenLeader)
	}
	fmt.Fprintf(tw, "LEADS NOW\t%s\n", r.Acting.Says)
	if m := modeNow(storage.Status{Mode: r.Mode, Owner: r.Owner}, r.Acting); m != "" {
		fmt.Fprintf(tw, "MODE\t%s\n", m)
	}
	fmt.Fprintf(tw, "WRITES CLUSTER\t%s\n", r.Writer)
	if r.CKEOwn != "" {
		fmt.Fprintf(tw, "WARNING\t%s\n", r.CKEOwn)
	}
	return tw.Flush()
}

// CKE v1.35.4's own integration and the count model. CKE's own `cke`
// knows the rate model's constraints only: its Constraints type has no
// minimum-workers nor maximum-workers, so it reads a document of the
// count model as minimum-workers-rate 0, and its rule "increase worker"
// then makes every HEALTHY machine a worker template accepts a node, all
// in one write. Wherever CKE's own binary could lead (a handback, CKE's
// integration re-enabled, a rolling restart or a rollback of the binary
// inside CKE), that is a mass change nobody asked for; ckegenctl says how
// many nodes it would add, from the leader's decision made with the
// constraints as CKE reads them.

// ckeReads is the constraints CKE v1.35.4's own integration reads from
// the stored document data (exists: one is stored): the keys its type
// knows, each 0 when absent, and CKE's defaults (constraints.Default)
// when none is stored.
func ckeReads(data []byte, exists bool) (constraints.Constraints, error) {
	if !exists {
		return constraints.Default(), nil
	}
	var doc struct {
		ControlPlaneCount  int `json:"control-plane-count"`
		MinimumWorkersRate int `json:"minimum-workers-rate"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return constraints.Constraints{}, fmt.Errorf("CKE's own integration cannot read the stored %s: %w", storage.KeyConstraints, err)
	}
	c := constraints.Constraints{ControlPlaneCount: doc.ControlPlaneCount, MinimumWorkersRate: &doc.MinimumWorkersRate}
	if err := c.Validate(); err != nil {
		return c, fmt.Errorf("as CKE's own integration reads the stored %s: %w", storage.KeyConstraints, err)
	}
	return c, nil
}

// ckeOwn is what CKE v1.35.4's own integration would do to the cluster
// were it to lead now, while the count model is in force.
type ckeOwn struct {
	// Model is the model in force for ckegen (constraints.CountModel or
	// RateModel, stored or by default); "" when the stored constraints
	// are refused.
	Model string
	// Known: the leader's decision with CKE's reading was made; NotKnown
	// says why not otherwise.
	Known    bool
	NotKnown string
	// Added is how many nodes that decision's plan adds to the cluster,
	// From and To its nodes before and after, in Writes writes (one a
	// tick); AtLeast: the plan stopped at its maximum number of steps.
	Added   int
	From    int
	To      int
	Writes  int
	AtLeast bool

	// reading is the constraints as CKE reads them (read: no error),
	// guard the constraints' key as read, and stored whether it exists.
	reading constraints.Constraints
	read    error
	guard   storage.Guard
	stored  bool
}

// atRisk reports whether CKE's own integration reads other constraints
// than ckegen does: the count model is in force, or the stored
// constraints are refused.
func (c *ckeOwn) atRisk() bool { return c.Model != constraints.RateModel }

// readModel reads the model in force and the constraints as CKE's own
// integration reads them, from one snapshot of the constraints' key.
func readModel(ctx context.Context, st storage.Storage) (*ckeOwn, error) {
	s, refused, snap, err := intake.Load(ctx, st, intake.SettingConstraints)
	if err != nil {
		return nil, err
	}
	v := snap.Get(storage.KeyConstraints)
	c := &ckeOwn{guard: storage.GuardOf(storage.KeyConstraints, v), stored: v.Exists()}
	if ref := refused[intake.SettingConstraints]; ref != nil {
		c.NotKnown = ref.Explain()
	} else {
		c.Model = s.Constraints.Model()
	}
	c.reading, c.read = ckeReads(v.Data, v.Exists())
	return c, nil
}

// decideAsCKE is the leader's decision on the world now with w in place
// of the stored settings (liveview.Reader.Decide, as a setting's
// --dry-run makes it).
type decideAsCKE func(w intake.WhatIf) (*decision.Decision, error)

// count decides once with the constraints as CKE reads them and counts
// the nodes that decision's plan adds; what keeps it from being made is
// said in NotKnown.
func (c *ckeOwn) count(decide decideAsCKE) {
	switch {
	case c.NotKnown != "":
		return
	case c.read != nil:
		c.NotKnown = c.read.Error()
		return
	}
	d, err := decide(intake.WhatIf{Constraints: &c.reading})
	if err != nil {
		c.NotKnown = err.Error()
		return
	}
	p := d.Plan
	had := map[string]bool{}
	if p.Start != nil {
		c.From = len(p.Start.Nodes)
		for _, n := range p.Start.Nodes {
			had[n.Address] = true
		}
	}
	if p.Cluster != nil {
		c.To = len(p.Cluster.Nodes)
		for _, n := range p.Cluster.Nodes {
			if !had[n.Address] {
				c.Added++
			}
		}
	}
	c.Known, c.Writes, c.AtLeast = true, len(p.Steps), p.Result == generator.PlanMaxSteps
}

// toRateModel is how to leave the count model, checked first.
const toRateModel = "switch to the rate model first, after checking what it does: ckegenctl constraints set minimum-workers-rate N --dry-run"

// says says what CKE's own integration would add, or that it is not
// known and why.
func (c *ckeOwn) says() string {
	model := "the count model is in force (minimum-workers/maximum-workers), which CKE v1.35.4's own integration does not know"
	switch {
	case c.Model == "":
		model = "the stored constraints are refused, so CKE v1.35.4's own integration may read other constraints than ckegen"
	case c.read != nil:
	case !c.stored:
		model = fmt.Sprintf("the count model is in force by default (no %s stored), which CKE v1.35.4's own integration does not know: it reads its own default, minimum-workers-rate %d",
			storage.KeyConstraints, *c.reading.MinimumWorkersRate)
	default:
		model += fmt.Sprintf(": it reads minimum-workers-rate %d", *c.reading.MinimumWorkersRate)
	}
	if !c.Known {
		return model + "; how many nodes it would add is not known: " + c.NotKnown
	}
	atLeast := ""
	if c.AtLeast {
		atLeast = "at least "
	}
	return fmt.Sprintf("%s and would add %s%s (%d → %d nodes) in %s", model, atLeast, words.Count(c.Added, "node", "nodes"), c.From, c.To,
		words.Count(c.Writes, "write", "writes"))
}

// ckeOwnCouldLead says where CKE's own binary could lead and run its own
// integration, by the ownership keys and the mode of the last tick
// (lastMode), in words ("": it could not, ckegen's daemon runs
// standalone).
func ckeOwnCouldLead(o intake.Ownership, lastMode string) string {
	switch {
	case lastMode == decision.ModeInsideCKE:
		return "inside CKE, a rolling restart or a rollback of the binary lets CKE's own cke lead"
	case o.OwnedByCKEGen() && o.CKEServer:
		return "beside CKE's server, a handback or CKE's integration re-enabled (ckecli sabakan enable) runs CKE's own integration"
	case o.CKEServer:
		return "beside CKE's server, whose integration owns the cluster (CKE's own, unless it is a cke built from ckeserver/)"
	case o.HandedBack():
		return "handed back to CKE, its server's integration writes once it runs (CKE's own, unless it is a cke built from ckeserver/)"
	}
	return ""
}

// ckeOwnWarning is the one line owner and status say where CKE's own
// binary could lead while the count model is in force ("" otherwise):
// how many nodes its integration would add, from the leader's decision
// with the constraints as CKE reads them (sabakan asked once, read only,
// within checkTimeout), and the fix. lastMode is the mode of the last
// tick. Only an etcd failure is an error.
func ckeOwnWarning(ctx context.Context, e *env, st storage.Storage, o intake.Ownership, lastMode string) (string, error) {
	where := ckeOwnCouldLead(o, lastMode)
	if where == "" {
		return "", nil
	}
	own, err := readModel(ctx, st)
	if err != nil || !own.atRisk() {
		return "", err
	}
	r := liveview.NewReader(st, liveview.Options{Sabakan: sabakan.Options{Timeout: checkTimeout, Retries: -1}, EtcdTimeout: e.timeout})
	own.count(func(w intake.WhatIf) (*decision.Decision, error) {
		return r.Decide(ctx, liveview.Preview{WhatIf: w})
	})
	return fmt.Sprintf("%s: %s; %s", where, own.says(), toRateModel), nil
}

// ckeOwnNote is ckeOwnWarning for the status, with the ownership read
// as the status reads it (a switch that does not parse is the status's
// to say).
func ckeOwnNote(ctx context.Context, e *env, st storage.Storage, lastMode string) (string, error) {
	s, _, _, err := intake.Load(ctx, st, intake.SettingOwner)
	if err != nil {
		return "", err
	}
	return ckeOwnWarning(ctx, e, st, s.Own, lastMode)
}
