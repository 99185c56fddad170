package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/labels"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/sabakan"
	"github.com/ckegen/ckegen/storage"
	"github.com/ckegen/ckegen/template"
)

// Reason codes recorded in sabakan/status when a tick fails.
const (
	ReasonDisabled           = "DISABLED"
	ReasonNoTemplate         = "NO_TEMPLATE"
	ReasonInvalidTemplate    = "INVALID_TEMPLATE"
	ReasonNoURL              = "NO_URL"
	ReasonInvalidVariables   = "INVALID_VARIABLES"
	ReasonInvalidConstraints = "INVALID_CONSTRAINTS"
	ReasonInvalidCluster     = "INVALID_CLUSTER"
	ReasonSabakanUnreachable = "SABAKAN_UNREACHABLE"
	ReasonQueryError         = "QUERY_ERROR"
	ReasonNotEnoughMachines  = "NOT_ENOUGH_MACHINES"
	ReasonTooManyNonExistent = "TOO_MANY_NONEXISTENT_CONTROL_PLANES"
	ReasonGenerationError    = "GENERATION_ERROR"
	ReasonClusterTooLarge    = "CLUSTER_TOO_LARGE"
	ReasonConflict           = "CLUSTER_CHANGED"
	ReasonLostLeadership     = "LOST_LEADERSHIP"
	ReasonEtcdError          = "ETCD_ERROR"
)

// Results recorded in sabakan/status.
const (
	ResultOK       = "ok"
	ResultFailing  = "failing"
	ResultDisabled = "disabled"
)

// tickError is a failed tick with its reason code.
type tickError struct {
	reason string
	err    error
}

func (e *tickError) Error() string { return e.reason + ": " + e.err.Error() }
func (e *tickError) Unwrap() error { return e.err }

func fail(reason string, err error) *tickError { return &tickError{reason: reason, err: err} }

// outcome is what one tick did.
type outcome struct {
	disabled bool
	result   *generator.Result // nil when nothing was written
	machines []*machine.Machine
	nodes    int
}

// tick runs one integration step (SPEC 7) and writes the new cluster, if
// any, with the template revision it was built from.
func (d *Daemon) tick(ctx context.Context, leaderKey string) (*outcome, error) {
	st := d.cfg.Storage
	// A leader learns that its lease is gone only at the next keepalive;
	// checking the key first keeps a deposed leader from querying sabakan.
	// (The cluster write is guarded by the key in any case.)
	if held, err := st.Holds(ctx, leaderKey); err != nil {
		return nil, fail(ReasonEtcdError, err)
	} else if !held {
		return nil, fail(ReasonLostLeadership, storage.ErrNoLeader)
	}
	disabled, err := st.IsDisabled(ctx)
	if err != nil {
		return nil, fail(ReasonEtcdError, err)
	}
	if disabled {
		return &outcome{disabled: true}, nil
	}

	tmplData, tmplRev, err := st.GetTemplate(ctx)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return nil, fail(ReasonNoTemplate, errors.New("no template: set one with ckecli sabakan set-template"))
	case err != nil:
		return nil, fail(ReasonEtcdError, err)
	}
	tmpl, err := template.Parse(tmplData)
	if err != nil {
		return nil, fail(ReasonInvalidTemplate, err)
	}

	url, err := st.GetURL(ctx)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return nil, fail(ReasonNoURL, errors.New("no sabakan URL: set one with ckecli sabakan set-url"))
	case err != nil:
		return nil, fail(ReasonEtcdError, err)
	}

	var vars sabakan.Variables
	varsData, err := st.GetQueryVariables(ctx)
	switch {
	case errors.Is(err, storage.ErrNotFound):
	case err != nil:
		return nil, fail(ReasonEtcdError, err)
	default:
		if vars, err = sabakan.ParseVariables(varsData); err != nil {
			return nil, fail(ReasonInvalidVariables, err)
		}
	}

	cons, err := st.GetConstraints(ctx)
	if err != nil {
		return nil, fail(ReasonInvalidConstraints, err)
	}
	if err := cons.Validate(); err != nil {
		return nil, fail(ReasonInvalidConstraints, err)
	}

	current, clusterRev, err := st.GetCluster(ctx)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		current, clusterRev = nil, 0
	case err != nil && clusterRev != 0:
		return nil, fail(ReasonInvalidCluster, err)
	case err != nil:
		return nil, fail(ReasonEtcdError, err)
	}
	builtFrom, err := st.GetClusterRevision(ctx)
	if err != nil {
		return nil, fail(ReasonInvalidCluster, err)
	}
	rebooting, err := st.RebootingNodes(ctx)
	if err != nil {
		return nil, fail(ReasonEtcdError, err)
	}

	client, err := d.sabakanClient(url)
	if err != nil {
		return nil, fail(ReasonQueryError, err)
	}
	queryStart := time.Now()
	raw, err := client.SearchMachines(ctx, vars)
	d.metrics.queryDuration.Observe(time.Since(queryStart).Seconds())
	switch {
	case errors.Is(err, sabakan.ErrUnreachable):
		return nil, fail(ReasonSabakanUnreachable, err)
	case err != nil:
		return nil, fail(ReasonQueryError, err)
	}
	ms, warnings := machine.Sanitize(raw, labels.ValidateSabakanLabel)
	for _, w := range warnings {
		d.log.Warn("machine ignored or changed", "warning", w)
	}
	for _, w := range cons.Warnings() {
		d.log.Warn("constraints", "warning", w)
	}

	in := generator.Input{
		Template:    tmpl,
		Constraints: cons,
		Machines:    ms,
		Current:     current,
		Rebooting:   rebooting,
		Now:         d.cfg.Now(),
		RetireWait:  d.cfg.RetireWait,
	}
	out := &outcome{machines: ms}
	if current != nil {
		out.nodes = len(current.Nodes)
	}
	res, err := generator.Tick(in, current != nil && tmplRev != builtFrom)
	switch {
	case errors.Is(err, generator.ErrNothingToDo):
		return out, nil
	case errors.Is(err, generator.ErrNotEnoughMachines):
		return out, fail(ReasonNotEnoughMachines, err)
	case errors.Is(err, generator.ErrTooManyNonExistent):
		return out, fail(ReasonTooManyNonExistent, err)
	case err != nil:
		return out, fail(ReasonGenerationError, err)
	}

	data, err := json.Marshal(res.Cluster)
	if err != nil {
		return out, fail(ReasonGenerationError, err)
	}
	if len(data) > d.cfg.MaxClusterBytes {
		return out, fail(ReasonClusterTooLarge, fmt.Errorf("the cluster is %d bytes of JSON, over etcd's request size limit of %d bytes (raise etcd's --max-request-bytes and --max-cluster-bytes together)",
			len(data), d.cfg.MaxClusterBytes))
	}
	rev, err := st.PutCluster(ctx, leaderKey, data, clusterRev, tmplRev)
	switch {
	case errors.Is(err, storage.ErrNoLeader):
		return out, fail(ReasonLostLeadership, err)
	case errors.Is(err, storage.ErrConflict):
		return out, fail(ReasonConflict, err)
	case err != nil:
		return out, fail(ReasonEtcdError, err)
	}
	out.result = res
	out.nodes = len(res.Cluster.Nodes)

	if err := st.AddHistory(ctx, leaderKey, storage.HistoryEntry{
		Time:             d.cfg.Now().UTC(),
		Op:               res.Op,
		Changes:          storageChanges(res.Changes),
		ChangeCount:      len(res.Changes),
		TemplateRevision: tmplRev,
		ClusterRevision:  rev,
	}); err != nil {
		d.log.Error("history not recorded", "error", err)
	}
	return out, nil
}

func (d *Daemon) sabakanClient(url string) (*sabakan.Client, error) {
	if d.client != nil && d.client.URL() == url {
		return d.client, nil
	}
	c, err := sabakan.NewClient(url, d.cfg.Sabakan)
	if err != nil {
		return nil, err
	}
	d.client = c
	return c, nil
}

// storageChanges converts the first storage.MaxChanges changes.
func storageChanges(cs []generator.Change) []storage.Change {
	cs = cs[:min(len(cs), storage.MaxChanges)]
	out := make([]storage.Change, len(cs))
	for i, c := range cs {
		out[i] = storage.Change{Action: c.Action, Address: c.Address, Serial: c.Serial, Reason: c.Reason}
		if c.Score != nil {
			total := c.Score.Total
			out[i].Score = &total
		}
	}
	return out
}
