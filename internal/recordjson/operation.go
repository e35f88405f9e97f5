package recordjson

import (
	"strconv"
	"time"

	"github.com/pollwarden/pollwarden"
)

// operation reads the record's object, key by key. Keys are matched
// exactly as AppendOperation writes them; encoding/json would also match
// other cases, so an unknown key is left to it.
func (d *decoder) operation(op *pollwarden.Operation) bool {
	if !d.punct('{') {
		return false
	}
	if !d.punct('}') {
		for {
			key, ok := d.str()
			if !ok || !d.punct(':') || !d.field(key, op) {
				return false
			}
			if d.punct('}') {
				break
			}
			if !d.punct(',') {
				return false
			}
		}
	}
	d.ws()
	return d.i == len(d.s)
}

// field reads the value of key into op.
func (d *decoder) field(key string, op *pollwarden.Operation) bool {
	if d.peek() == 'n' && key != "result" && key != "provider_error" && key != "expected_terminal_states" {
		return false // null: a no-op or a nil, left to encoding/json
	}
	var s string
	ok := true
	switch key {
	case "operation_id":
		s, ok = d.str()
		op.ID = s
		return ok && d.once(0)
	case "contract":
		op.Contract, ok = d.str()
		return ok && d.once(1)
	case "provider_job_id":
		op.ProviderJobID, ok = d.str()
		return ok && d.once(2)
	case "status_url":
		op.StatusURL, ok = d.str()
		return ok && d.once(3)
	case "credential_name":
		op.CredentialName, ok = d.str()
		return ok && d.once(4)
	case "request_fingerprint":
		op.Fingerprint, ok = d.str()
		return ok && d.once(5)
	case "request_digest":
		op.RequestDigest, ok = d.str()
		return ok && d.once(6)
	case "owner":
		op.Owner, ok = d.str()
		return ok && d.once(7)
	case "priority":
		return d.int(&op.Priority) && d.once(8)
	case "vars":
		return d.stringMap(&op.Vars) && d.once(9)
	case "expected_terminal_states":
		return d.strings(&op.ExpectedTerminal) && d.once(10)
	case "started_at":
		return d.time(&op.StartedAt) && d.once(11)
	case "deadline_at":
		return d.time(&op.DeadlineAt) && d.once(12)
	case "business_deadline_at":
		return d.timePtr(&op.BusinessDeadlineAt) && d.once(13)
	case "provider_expires_at":
		return d.timePtr(&op.ProviderExpiresAt) && d.once(14)
	case "max_status_requests":
		return d.int(&op.MaxStatusRequests) && d.once(15)
	case "max_transport_failures":
		return d.int(&op.MaxTransportFailures) && d.once(16)
	case "max_rate_limited":
		return d.int(&op.MaxRateLimited) && d.once(17)
	case "status_requests_used":
		return d.int(&op.StatusRequestsUsed) && d.once(18)
	case "transport_failures_used":
		return d.int(&op.TransportFailuresUsed) && d.once(19)
	case "rate_limited_used":
		return d.int(&op.RateLimitedUsed) && d.once(20)
	case "completed_polls":
		return d.int(&op.CompletedPolls) && d.once(21)
	case "approved_calls":
		return d.int(&op.ApprovedCalls) && d.once(22)
	case "result_fetches_sent":
		return d.int(&op.ResultFetchesSent) && d.once(23)
	case "next_poll_at":
		return d.time(&op.NextPollAt) && d.once(24)
	case "next_poll_source":
		s, ok = d.str()
		op.NextPollSource = pollwarden.DelaySource(s)
		return ok && d.once(25)
	case "next_poll_spread":
		return d.bool(&op.NextPollSpread) && d.once(26)
	case "held_by":
		op.HeldBy, ok = d.str()
		return ok && d.once(27)
	case "jitter_factor":
		return d.float(&op.JitterFactor) && d.once(28)
	case "phase":
		s, ok = d.str()
		op.Phase = pollwarden.Phase(s)
		return ok && d.once(29)
	case "reason":
		s, ok = d.str()
		op.Reason = pollwarden.Reason(s)
		return ok && d.once(30)
	case "last_state":
		op.LastState, ok = d.str()
		return ok && d.once(31)
	case "last_provider_state":
		op.LastProviderState, ok = d.str()
		return ok && d.once(32)
	case "last_etag":
		op.LastETag, ok = d.str()
		return ok && d.once(33)
	case "last_http_status":
		return d.int(&op.LastHTTP) && d.once(34)
	case "last_http_at":
		return d.timePtr(&op.LastHTTPAt) && d.once(35)
	case "last_request_id":
		op.LastRequestID, ok = d.str()
		return ok && d.once(36)
	case "result":
		return d.raw(&op.Result) && d.once(37)
	case "provider_error":
		return d.raw(&op.ProviderError) && d.once(38)
	case "finished_at":
		return d.timePtr(&op.FinishedAt) && d.once(39)
	case "escalation":
		return nested(d, &op.Escalation) && d.once(40)
	case "escalations":
		return d.int(&op.Escalations) && d.once(41)
	case "last_decision":
		return nested(d, &op.LastDecision) && d.once(42)
	case "refused_credential":
		return nested(d, &op.RefusedCredential) && d.once(43)
	case "extension_asked":
		return nested(d, &op.ExtensionAsked) && d.once(44)
	case "cancel":
		return nested(d, &op.Cancel) && d.once(45)
	case "submission":
		return nested(d, &op.Submission) && d.once(46)
	case "contract_digest":
		return d.stringMap(&op.ContractDigest) && d.once(47)
	case "contract_limits":
		return d.limits(&op.ContractLimits) && d.once(48)
	case "contract_fingerprint":
		op.ContractFingerprint, ok = d.str()
		return ok && d.once(49)
	case "version":
		n, ok := d.integer()
		op.Version = n
		return ok && d.once(50)
	}
	return false
}

// limits reads ContractLimits, each of its four keys once.
func (d *decoder) limits(p **pollwarden.ContractLimits) bool {
	if !d.punct('{') {
		return false
	}
	l := new(pollwarden.ContractLimits)
	*p = l
	if d.punct('}') {
		return true
	}
	var seen uint8
	for {
		key, ok := d.str()
		if !ok || !d.punct(':') {
			return false
		}
		var bit uint8
		switch key {
		case "deadline_ns":
			var n int64
			n, ok = d.integer()
			l.Deadline, bit = time.Duration(n), 1
		case "max_status_requests":
			ok, bit = d.int(&l.MaxStatusRequests), 2
		case "max_transport_failures":
			ok, bit = d.int(&l.MaxTransportFailures), 4
		case "max_rate_limited":
			ok, bit = d.int(&l.MaxRateLimited), 8
		default:
			return false
		}
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
		if d.punct('}') {
			return true
		}
		if !d.punct(',') {
			return false
		}
	}
}

// float reads a float64 as encoding/json does (strconv.ParseFloat).
func (d *decoder) float(p *float64) bool {
	s, ok := d.number()
	if !ok {
		return false
	}
	f, err := strconv.ParseFloat(s, 64)
	*p = f
	return err == nil
}
