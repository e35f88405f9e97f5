package operations

import (
	"context"

	"github.com/pollwarden/pollwarden"
)

// closeRefusedCredential answers, after an approver's retry_credential on
// one operation (the credential reads differently now), the credential
// incident of its key as well: it is the same question, and while the
// incident stays open the operation's one allowed request would be held
// with the others. The incident closes, so that request goes and the
// operations it held resume spread over their backoff; another refusal
// opens a new one. When the close fails (another approver closed it
// first, the store is gone), the decision stands and the incident's page
// still offers its own decision.
func (s *Service) closeRefusedCredential(ctx context.Context, p DecisionParams, ct *pollwarden.ContractSpec) {
	ks, err := s.store.KeyGet(ctx, pollwarden.QuotaKey(ct))
	if err != nil || ks.Incident.Open == nil || ks.Incident.Open.Kind != pollwarden.IncidentCredential {
		return
	}
	inc, err := s.incident(ctx, ks.Incident.Open.ID)
	if err != nil || !inc.Open() {
		return
	}
	held, err := s.held(ctx, inc.ID)
	if err != nil {
		return
	}
	_, _ = s.closeIncident(ctx, IncidentDecisionParams{Caller: p.Caller, ID: inc.ID,
		Option: pollwarden.OptionRetryCredential, Note: p.Note}, inc, len(held))
}
