package cluster

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// reboot has the shape of CKE's Reboot (what its decoding accepts).
type reboot struct {
	RebootCommand          []string              `json:"reboot_command"`
	BootCheckCommand       []string              `json:"boot_check_command"`
	MaxConcurrentReboots   *int                  `json:"max_concurrent_reboots"`
	EvictionTimeoutSeconds *int                  `json:"eviction_timeout_seconds"`
	CommandTimeoutSeconds  *int                  `json:"command_timeout_seconds"`
	CommandRetries         *int                  `json:"command_retries"`
	CommandInterval        *int                  `json:"command_interval"`
	EvictRetries           *int                  `json:"evict_retries"`
	EvictInterval          *int                  `json:"evict_interval"`
	ProtectedNamespaces    *metav1.LabelSelector `json:"protected_namespaces"`
	ProtectedJobPods       *metav1.LabelSelector `json:"protected_job_pods"`
}

// repair has the shape of CKE's Repair.
type repair struct {
	RepairProcedures []struct {
		MachineTypes     []string `json:"machine_types"`
		RepairOperations []struct {
			Operation   string `json:"operation"`
			RepairSteps []struct {
				RepairCommand         []string `json:"repair_command"`
				CommandTimeoutSeconds *int     `json:"command_timeout_seconds"`
				CommandRetries        *int     `json:"command_retries"`
				CommandInterval       *int     `json:"command_interval"`
				NeedDrain             bool     `json:"need_drain"`
				WatchSeconds          *int     `json:"watch_seconds"`
			} `json:"repair_steps"`
			HealthCheckCommand    []string `json:"health_check_command"`
			CommandTimeoutSeconds *int     `json:"command_timeout_seconds"`
			SuccessCommand        []string `json:"success_command"`
			SuccessCommandTimeout *int     `json:"success_command_timeout"`
		} `json:"repair_operations"`
	} `json:"repair_procedures"`
	MaxConcurrentRepairs   *int                  `json:"max_concurrent_repairs"`
	ProtectedNamespaces    *metav1.LabelSelector `json:"protected_namespaces"`
	EvictRetries           *int                  `json:"evict_retries"`
	EvictInterval          *int                  `json:"evict_interval"`
	EvictionTimeoutSeconds *int                  `json:"eviction_timeout_seconds"`
	ProtectedJobPods       *metav1.LabelSelector `json:"protected_job_pods"`
}

// bound is one of CKE's rules on an optional number: when set, it must be
// positive (min 1) or not negative (min 0).
type bound struct {
	name string
	v    *int
	min  int
}

type selector struct {
	name string
	sel  *metav1.LabelSelector
}

func (r *reboot) check() error {
	return checkSettings(field.NewPath("reboot"), []bound{
		{"eviction_timeout_seconds", r.EvictionTimeoutSeconds, 1},
		{"command_timeout_seconds", r.CommandTimeoutSeconds, 0},
		{"command_retries", r.CommandRetries, 0},
		{"command_interval", r.CommandInterval, 0},
		{"evict_retries", r.EvictRetries, 0},
		{"evict_interval", r.EvictInterval, 0},
		{"max_concurrent_reboots", r.MaxConcurrentReboots, 1},
	}, []selector{
		{"protected_namespaces", r.ProtectedNamespaces},
		{"protected_job_pods", r.ProtectedJobPods},
	})
}

func (r *repair) check() error {
	return checkSettings(field.NewPath("repair"), []bound{
		{"max_concurrent_repairs", r.MaxConcurrentRepairs, 1},
		{"evict_retries", r.EvictRetries, 0},
		{"evict_interval", r.EvictInterval, 0},
		{"eviction_timeout_seconds", r.EvictionTimeoutSeconds, 1},
	}, []selector{
		{"protected_namespaces", r.ProtectedNamespaces},
		{"protected_job_pods", r.ProtectedJobPods},
	})
}

func checkSettings(path *field.Path, bounds []bound, sels []selector) error {
	for _, b := range bounds {
		if b.v == nil || *b.v >= b.min {
			continue
		}
		rule := "must not be negative"
		if b.min == 1 {
			rule = "must be positive"
		}
		return invalid(path.Child(b.name), *b.v, rule)
	}
	for _, s := range sels {
		// A nil selector selects nothing and is valid.
		if _, err := metav1.LabelSelectorAsSelector(s.sel); err != nil {
			return &ValidationError{Field: path.Child(s.name).String(), Rule: "invalid label selector: " + err.Error()}
		}
	}
	return nil
}
