package generator

// CanAddControlPlane reports whether the generator could make one more
// control plane in in.Current now, as fill would (docs/design.md 6.2): a
// spare worker, an unused candidate (docs/design.md 5, placement
// included), or a promotable worker while the workers exceed
// minimum-workers. What-if views (the forecast) read it to know whether a
// control plane that is no longer HEALTHY, and that the plan kept, has
// anything that could replace it.
func CanAddControlPlane(in Input) (bool, error) {
	s, err := newState(&in, in.Current)
	if err != nil {
		return false, err
	}
	if w, _, _ := s.bestSpareWorker(); w != nil {
		return true, nil
	}
	if s.anyCPCandidate() {
		return true, nil
	}
	return s.anyPromotableWorker() && s.workerCount > s.limits.minimumWorkers, nil
}
