// Package reason holds every reason code and result that ckegen records in
// sabakan/status, in one place: the tick, the table of settings, the CLI,
// the page, the metrics and the alert rules all name them from here.
//
// A tick ends with one result. A result other than ok has a reason code
// that says why, in upper case, stable across releases: alert rules and
// scripts match on it.
package reason

// Results of a tick.
const (
	// OK: the tick ran the integration; it may or may not have written
	// a cluster.
	OK = "ok"
	// Failing: the tick could not run the integration; nothing was
	// written. The reason says why, the message what to do.
	Failing = "failing"
	// Disabled: the integration's switch is off.
	Disabled = "disabled"
	// Held: the tick held back on purpose: beside a CKE server (another
	// integration writes, or CKE's server is busy), or until constraints
	// name a model after an upgrade: healthy, and writes nothing.
	Held = "held"
	// Planning: the tick computed and stored the plan and wrote no
	// cluster, because the trigger is planning or the inventory is not
	// quiet.
	Planning = "planning"
	// Waiting: a setting without which nothing can run (the template,
	// sabakan's URL) has never been stored: not a failure, the state of
	// a new installation.
	Waiting = "waiting"
)

// Reason codes of a tick that did not write what it decided, or did not
// decide.
const (
	// DisabledFlag: the result of a disabled integration.
	DisabledFlag = "DISABLED"

	// The settings (the table of settings in intake).
	InvalidDisabled     = "INVALID_DISABLED_FLAG"
	InvalidOwner        = "INVALID_OWNER"
	NoTemplate          = "NO_TEMPLATE"
	InvalidTemplate     = "INVALID_TEMPLATE"
	NoURL               = "NO_URL"
	InvalidVariables    = "INVALID_VARIABLES"
	InvalidConstraints  = "INVALID_CONSTRAINTS"
	InvalidCluster      = "INVALID_CLUSTER"
	InvalidPolicy       = "INVALID_POLICY"
	InvalidTrigger      = "INVALID_TRIGGER"
	InvalidQuietTime    = "INVALID_QUIET_TIME"
	InvalidMaxUnhealthy = "INVALID_MAX_UNHEALTHY"

	// What the tick reads besides etcd.
	SabakanUnreachable    = "SABAKAN_UNREACHABLE"
	QueryError            = "QUERY_ERROR"
	KubernetesUnreachable = "KUBERNETES_UNREACHABLE"
	// MetricsUnavailable: a metric provider of the placement policy
	// failed (unreachable, timeout, query error).
	MetricsUnavailable = "METRICS_UNAVAILABLE"

	// The decision.
	NotEnoughMachines  = "NOT_ENOUGH_MACHINES"
	TooManyNonExistent = "TOO_MANY_NONEXISTENT_CONTROL_PLANES"
	GenerationError    = "GENERATION_ERROR"
	// TooManyUnhealthy: more nodes are unhealthy than max-unhealthy
	// allows; no membership change, state taints only.
	TooManyUnhealthy = "TOO_MANY_UNHEALTHY"
	// QuietTime: the inventory has not been still for the quiet time;
	// the tick planned and wrote nothing.
	QuietTime = "QUIET_TIME"

	// The write.
	ClusterTooLarge = "CLUSTER_TOO_LARGE"
	// ClusterChanged: the cluster changed between the tick's read and
	// its write, which lost.
	ClusterChanged = "CLUSTER_CHANGED"
	// OwnershipChanged: a takeover, a handback or a switch landed
	// between the tick's read and its write, which lost.
	OwnershipChanged = "OWNERSHIP_CHANGED"
	LostLeadership   = "LOST_LEADERSHIP"
	EtcdError        = "ETCD_ERROR"
	// EtcdNoSpace: etcd refused a write because its database is full
	// (alarm NOSPACE): nothing is written until an operator frees space.
	EtcdNoSpace = "ETCD_NO_SPACE"

	// Beside a CKE server (docs/beside-cke.md): reasons of a tick that
	// holds back on purpose.
	// OwnedByCKE: CKE's own integration owns the cluster.
	OwnedByCKE = "OWNED_BY_CKE"
	// CKEIntegrationActive: ckegen owns the integration, but CKE's own
	// was enabled again (sabakan/disabled is not true).
	CKEIntegrationActive = "CKE_INTEGRATION_ACTIVE"
	// CKENotReady: CKE's server is busy (its status phase is not one in
	// which CKE runs its own integration) or its status is stale.
	CKENotReady = "CKE_NOT_READY"

	// ConstraintsUnchosen: the constraints name no model (none stored,
	// or a document without a worker key) and the last status says the
	// count model was in force: this release would run the rate model
	// (CKE v1.35.4's reading) instead, so the leader writes nothing until
	// constraints that name a model are stored (docs/models.md).
	ConstraintsUnchosen = "CONSTRAINTS_UNCHOSEN"
)

// Code is a reason code and the results a tick records it under.
type Code struct {
	Code string
	// Result is the result the code comes with (ResultOf).
	Result string
	// Also are the other results a tick may record the code under, each
	// with when it does.
	Also []Also
}

// Also is another result a code may be recorded under, and when.
type Also struct {
	Result string
	// When says when, for a person: it completes "Result when ...".
	When string
}

// Codes lists every reason code with the results it comes with, in the
// order of the list above: the documents and the alert rules are checked
// against it.
var Codes = []Code{
	{Code: DisabledFlag, Result: Disabled},
	{Code: InvalidDisabled, Result: Failing}, {Code: InvalidOwner, Result: Failing},
	{Code: NoTemplate, Result: Waiting}, {Code: InvalidTemplate, Result: Failing}, {Code: NoURL, Result: Waiting},
	{Code: InvalidVariables, Result: Failing}, {Code: InvalidConstraints, Result: Failing}, {Code: InvalidCluster, Result: Failing},
	{Code: InvalidPolicy, Result: Failing}, {Code: InvalidTrigger, Result: Failing}, {Code: InvalidQuietTime, Result: Failing},
	{Code: InvalidMaxUnhealthy, Result: Failing},
	{Code: SabakanUnreachable, Result: Failing}, {Code: QueryError, Result: Failing},
	{Code: KubernetesUnreachable, Result: Failing}, {Code: MetricsUnavailable, Result: Failing},
	{Code: NotEnoughMachines, Result: Failing}, {Code: TooManyNonExistent, Result: Failing}, {Code: GenerationError, Result: Failing},
	// Over max-unhealthy while quiet time or the trigger holds the
	// tick, the tick plans, and its reason says both (docs/design.md
	// 11.4).
	{Code: TooManyUnhealthy, Result: Failing, Also: []Also{{Result: Planning, When: "quiet time or the trigger held the tick"}}},
	{Code: QuietTime, Result: Planning},
	{Code: ClusterTooLarge, Result: Failing}, {Code: ClusterChanged, Result: Failing}, {Code: OwnershipChanged, Result: Failing},
	{Code: LostLeadership, Result: Failing}, {Code: EtcdError, Result: Failing}, {Code: EtcdNoSpace, Result: Failing},
	{Code: OwnedByCKE, Result: Held}, {Code: CKEIntegrationActive, Result: Held}, {Code: CKENotReady, Result: Held},
	{Code: ConstraintsUnchosen, Result: Held},
}

// ResultOf is the result a reason code comes with, its first ("" for a
// code not in Codes); Allows says which others a tick may record it
// under.
func ResultOf(code string) string {
	if c := find(code); c != nil {
		return c.Result
	}
	return ""
}

func find(code string) *Code {
	for i := range Codes {
		if Codes[i].Code == code {
			return &Codes[i]
		}
	}
	return nil
}
