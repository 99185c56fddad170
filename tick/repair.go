package tick

import (
	"context"
	"reflect"
	"slices"

	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/storage"
)

// NoteRepair records in the last status what the host's auto-repair
// leaves waiting (nil: nothing waits), when that changed. CKE's server
// runs its sabakan-triggered auto-repair after the tick
// (docs/inside-cke.md): its state is the host's, kept by the step's
// status and memory. Its message is a warning of the status, told in the
// log when it appears and when it clears; the next ticks keep it until
// the host notes otherwise. A step that recorded no status this
// leadership, or left the integration to ckegen's daemons, notes
// nothing. It returns the status and whether it changed.
func (s *Step) NoteRepair(ctx context.Context, r *storage.RepairStatus) (storage.Status, bool, error) {
	last := s.memory.Last
	if s.yielded || s.term == "" || last.Time.IsZero() || reflect.DeepEqual(last.Repair, r) {
		return last, false, nil
	}
	st := last
	st.Repair = r
	st.Warnings = slices.DeleteFunc(slices.Clone(last.Warnings), func(w string) bool { return w == repairWarning(last.Repair) })
	logged := slices.DeleteFunc(slices.Clone(s.memory.Logged.Warnings), func(w string) bool { return w == repairWarning(last.Repair) })
	if w := repairWarning(r); w != "" {
		st.Warnings = append([]string{w}, st.Warnings...)
		logged = append(logged, w)
	}
	mem := s.memory
	mem.Last, mem.Logged.Warnings = st, logged
	data, err := mem.Marshal()
	if err != nil {
		return last, false, err
	}
	if err := s.st.PutStatus(ctx, s.term, st, data); err != nil {
		return last, false, err
	}
	s.memory = mem
	if w := repairWarning(last.Repair); w != "" && (r == nil || r.Message != w) {
		s.log.Info("tick warning cleared", "warning", w)
	}
	if r != nil && (last.Repair == nil || last.Repair.Message != r.Message) {
		s.log.Warn("tick warning", "warning", r.Message)
	}
	return st, true, nil
}

// repairWarning is the warning of a repair status ("" for nil).
func repairWarning(r *storage.RepairStatus) string {
	if r == nil {
		return ""
	}
	return r.Message
}

// carriedRepair is what a tick's status keeps of the host's auto-repair
// from the last status: inside CKE's server, where the host notes it;
// nothing elsewhere (ckegen's daemons run no auto-repair).
func carriedRepair(d *decision.Decision, last storage.Status) *storage.RepairStatus {
	if d.Config.Mode != decision.ModeInsideCKE {
		return nil
	}
	return last.Repair
}

// repairWarnings are the warnings a status carries of the host's
// auto-repair.
func repairWarnings(r *storage.RepairStatus) []string {
	if r == nil {
		return nil
	}
	return []string{r.Message}
}

// Amend shows st, the last status as the host amended it after the tick
// (NoteRepair), in the series of the last tick.
func (m *Metrics) Amend(st storage.Status) {
	l := m.last
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.at.IsZero() || !l.r.Status.Time.Equal(st.Time) {
		return
	}
	l.r.Warnings += len(repairWarnings(st.Repair)) - len(repairWarnings(l.r.Status.Repair))
	l.r.Status = st
}

// Last is the last status the step recorded (zero: none).
func (s *Step) Last() storage.Status { return s.memory.Last }
