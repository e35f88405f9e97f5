package operations

// The priorities an operation may have when a quota is what limits its
// requests (SPEC "Quotas shared by every operation, process and
// replica"): 1 is the most urgent, 9 the least, 5 when none is given.
const (
	MinPriority     = 1
	MaxPriority     = 9
	DefaultPriority = 5
)

// priorityProblems judges a create's priority: it must be within 1..9
// (an invalid request), and one more urgent than the default is for a
// caller who may prioritize (a forbidden one, answered only once the rest
// of the request is valid). It returns the priority to record, 0 for
// none given (the default).
func (p CreateParams) priorityProblems(probs *Problems) (prio int, forbidden error) {
	if p.Priority == nil {
		return 0, nil
	}
	v := *p.Priority
	if v < MinPriority || v > MaxPriority {
		probs.add("priority", "%s must be from %d (most urgent) to %d (least urgent), got %d", p.name("priority"), MinPriority, MaxPriority, v)
		return 0, nil
	}
	if v < DefaultPriority {
		forbidden = p.Caller.May(ActionPrioritize, nil, "")
	}
	return v, forbidden
}
