package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"time"

	"github.com/pollwarden/pollwarden"
)

// The outage rule's figures (SPEC "Provider incidents").
const (
	// IncidentWindow: failures older than this no longer count together.
	IncidentWindow = 60 * time.Second
	// IncidentOperations distinct operations failing within the window,
	// with no valid answer in between, open an outage.
	IncidentOperations = 5
	// MaxRecentFailures bounds the failures a key's row keeps: one per
	// operation, the newest, so a crowd of failing operations costs the
	// row a fixed size.
	MaxRecentFailures = 16
	// ProbeLease is how long an operation holds the probe slot before
	// another may probe: a probe whose process died frees the slot on
	// its own. It outlasts any status request's timeout.
	ProbeLease = 2 * time.Minute
)

// IncidentGrant is what the incident rule says before a status request
// under a key: Send (nothing stands in the way, or op is the probe), or
// hold until Until with the delay source provider_incident.
type IncidentGrant struct {
	Send bool
	// Probe is set with Send when op goes as the open incident's probe.
	Probe  bool
	Until  time.Time
	Detail string
	// Incident is the open incident's id when one holds or probes.
	Incident string
}

// GrantIncident decides, in the claim's transaction and after the
// deadline and budget checks (Gate runs first), whether op may send under
// its key's incident state is. While an outage is open, one operation at a
// time holds the probe slot (until ProbeUntil, a lease) and the probes are
// spaced by backoff; the others hold for their own backoff delay, never
// past the deadline, so they look again while the deadline still
// escalates as always. While a credential incident is open nothing is
// sent. The returned state is the one to write with the key's row.
func GrantIncident(is pollwarden.IncidentState, op *pollwarden.Operation, c *pollwarden.ContractSpec, now time.Time) (pollwarden.IncidentState, IncidentGrant) {
	return grantIncident(is, op, c, now, true)
}

// grantIncident is GrantIncident for a status request (status) or
// another request of op (a cancel, which never probes).
func grantIncident(is pollwarden.IncidentState, op *pollwarden.Operation, c *pollwarden.ContractSpec, now time.Time, status bool) (pollwarden.IncidentState, IncidentGrant) {
	o := is.Open
	if o == nil {
		return is, IncidentGrant{Send: true}
	}
	hold := func(why string) (pollwarden.IncidentState, IncidentGrant) {
		d := max(Delay(c.Backoff, op.CompletedPolls, op.JitterFactor), Floor(c), time.Second)
		until := now.Add(d)
		if o.Kind == pollwarden.IncidentOutage && o.NextProbeAt.After(now) && o.NextProbeAt.Before(until) && o.ProbeOp == "" {
			until = o.NextProbeAt
		}
		if op.Phase.Polling() && until.After(op.DeadlineAt) {
			until = op.DeadlineAt
		}
		return is, IncidentGrant{Until: until, Detail: why, Incident: o.ID}
	}
	if o.Kind == pollwarden.IncidentCredential && !remintProbe(o, op, c, now) {
		return hold(fmt.Sprintf("incident %s: the provider refused the credential; nothing is sent under it until an approver decides", o.ID))
	}
	slotTaken := o.ProbeOp != "" && now.Before(o.ProbeUntil) && o.ProbeOp != op.ID
	switch {
	case !status || !op.Phase.Polling():
		// A submission, a cancel or a result fetch is no status
		// request: its answer would not tell the incident whether the
		// provider is back (nor free the slot), so it never takes the
		// probe's slot.
		return hold(fmt.Sprintf("incident %s: the provider is failing; only a status request probes it", o.ID))
	case slotTaken:
		return hold(fmt.Sprintf("incident %s: the provider is failing; operation %s is probing it, this one waits", o.ID, o.ProbeOp))
	case now.Before(o.NextProbeAt):
		return hold(fmt.Sprintf("incident %s: the provider is failing; the next probe is due at %s", o.ID, o.NextProbeAt.UTC().Format(time.RFC3339)))
	}
	next := is.Clone()
	next.Open.ProbeOp, next.Open.ProbeUntil = op.ID, now.Add(ProbeLease)
	next.Open.Probes++
	return next, IncidentGrant{Send: true, Probe: true, Incident: o.ID,
		Detail: fmt.Sprintf("incident %s: this request is the probe %d; the others wait for its answer", o.ID, next.Open.Probes)}
}

// failure names what failed in obs ("" when it is not a failure that
// counts towards an outage: an answer, or no request).
func failure(obs *pollwarden.Observation) string {
	switch {
	case obs.Status == 0 && obs.Transport != "":
		return obs.Transport
	case obs.Status >= 500:
		return "HTTP " + strconv.Itoa(obs.Status)
	}
	return ""
}

// denied reports a refused credential: a 401 or 403 that the decision
// also takes for one (policy.Decide's classify), not a status the contract
// maps to a state, nor a rate limit the contract recognises (GitHub's 403
// with x-ratelimit-remaining 0 holds the key as a rate limit, not as a
// credential incident).
func denied(obs *pollwarden.Observation) bool {
	return (obs.Status == 401 || obs.Status == 403) && obs.Transport == "" &&
		!obs.Body.FromStatus && obs.RateLimitSignal == ""
}

// remintProbe says whether op's status request may be the one probe of a
// credential incident: only for a minted credential (OAuth2 client
// credentials, a Google service account), whose refused token the prober
// dropped, so the next request sends a newly minted one, which may be
// accepted. One such probe per incident, one at a time; after it is
// refused too, nothing more goes out until an approver decides.
func remintProbe(o *pollwarden.OpenIncident, op *pollwarden.Operation, c *pollwarden.ContractSpec, now time.Time) bool {
	if c.Status.Credential == nil || !op.Phase.Polling() {
		return false
	}
	if k := c.Status.Credential.Kind; k != pollwarden.CredentialOAuth2 && k != pollwarden.CredentialGoogle {
		return false
	}
	return o.Probes == 0 && (o.ProbeOp == "" || o.ProbeOp == op.ID || !now.Before(o.ProbeUntil))
}

// validAnswer is an answer that shows the provider serving under the key:
// any HTTP answer below 500 but a refusal of the credential and a rate
// limit (which says nothing of an outage either way).
func validAnswer(obs *pollwarden.Observation) bool {
	return obs.Status > 0 && obs.Status < 500 && !denied(obs) && obs.Status != 429 && obs.RateLimitSignal == ""
}

// answerText says what a probe got, for people.
func answerText(obs *pollwarden.Observation) string {
	if f := failure(obs); f != "" {
		return f
	}
	return "HTTP " + strconv.Itoa(obs.Status)
}

// NoteIncident applies an answer under key to its incident state, in the
// save's transaction: a failure joins the recent ones (one per operation,
// within IncidentWindow, at most MaxRecentFailures) and the fifth distinct
// operation opens an outage; a valid answer forgets them and closes an
// open outage; a 401 or 403 opens a credential incident at once; a failed
// probe frees the slot and spaces the next by backoff.
func NoteIncident(is pollwarden.IncidentState, key string, op *pollwarden.Operation, c *pollwarden.ContractSpec, obs *pollwarden.Observation, now time.Time) (pollwarden.IncidentState, pollwarden.IncidentEffects) {
	next := is.Clone()
	var fx pollwarden.IncidentEffects
	switch {
	case validAnswer(obs):
		next.Recent = nil
		if o := next.Open; o != nil {
			// An outage closes when the provider answers again; a refused
			// credential when an answer shows it accepted again (a minted
			// credential's new token, a changed secret).
			fx.Closed = closing(o, key, now, fmt.Sprintf("operation %s got %s: the provider answers again", op.ID, answerText(obs)))
			fx.Closed.LastProbe = answerText(obs)
			at := now
			fx.Closed.LastProbeAt = &at
			next.Open = nil
		}
	case denied(obs):
		next.Recent = nil
		if o := next.Open; o != nil && o.Kind == pollwarden.IncidentCredential {
			break // one incident per refusal: the open one holds already
		} else if o != nil {
			fx.Closed = closing(o, key, now, fmt.Sprintf("operation %s got %s: the provider answers, and refuses the credential", op.ID, answerText(obs)))
		}
		inc := opening(key, pollwarden.IncidentCredential, op, answerText(obs), now, now, []string{op.ID})
		inc.Refused = obs.RefusedCredential
		fx.Opened = inc
		next.Open = &pollwarden.OpenIncident{ID: inc.ID, Kind: inc.Kind, OpenedAt: now}
	case failure(obs) != "":
		what := failure(obs)
		if o := next.Open; o != nil {
			if o.Kind == pollwarden.IncidentOutage && o.ProbeOp == op.ID {
				o.ProbeOp, o.ProbeUntil = "", time.Time{}
				o.NextProbeAt = now.Add(max(Delay(c.Backoff, o.Probes, 1), Floor(c), time.Second))
				fx.Probed = &pollwarden.IncidentProbe{ID: o.ID, Answer: what, At: now}
			}
			break
		}
		next.Recent = remember(next.Recent, pollwarden.IncidentFailure{Op: op.ID, At: now, What: what}, now)
		if len(next.Recent) >= IncidentOperations {
			ops := make([]string, len(next.Recent))
			for i, f := range next.Recent {
				ops[i] = f.Op
			}
			inc := opening(key, pollwarden.IncidentOutage, op, what, next.Recent[0].At, now, ops)
			fx.Opened = inc
			next.Open = &pollwarden.OpenIncident{ID: inc.ID, Kind: inc.Kind, OpenedAt: now,
				NextProbeAt: now.Add(max(Delay(c.Backoff, 0, 1), Floor(c), time.Second))}
			next.Recent = nil
		}
	}
	return next, fx
}

// remember adds f to the recent failures: the operation's earlier one is
// replaced, those older than the window dropped, and only the newest
// MaxRecentFailures kept, oldest first.
func remember(recent []pollwarden.IncidentFailure, f pollwarden.IncidentFailure, now time.Time) []pollwarden.IncidentFailure {
	out := slices.DeleteFunc(slices.Clone(recent), func(r pollwarden.IncidentFailure) bool {
		return r.Op == f.Op || now.Sub(r.At) > IncidentWindow || r.At.After(now)
	})
	out = append(out, f)
	if len(out) > MaxRecentFailures {
		out = out[len(out)-MaxRecentFailures:]
	}
	return out
}

// IncidentID names a new incident: "inc-" and 16 hex digits of a hash of
// the key, the opening time and the operation whose answer opened it, so
// two replicas never draw one id for two incidents.
func IncidentID(key string, opened time.Time, op string) string {
	h := sha256.Sum256([]byte(key + "\x00" + opened.UTC().Format(time.RFC3339Nano) + "\x00" + op))
	return "inc-" + hex.EncodeToString(h[:8])
}

func opening(key string, k pollwarden.IncidentKind, op *pollwarden.Operation, what string, since, now time.Time, ops []string) *pollwarden.Incident {
	return &pollwarden.Incident{ID: IncidentID(key, now, op.ID), Key: key, Kind: k, OpenedAt: now,
		What: what, Since: since, Operations: ops}
}

func closing(o *pollwarden.OpenIncident, key string, now time.Time, why string) *pollwarden.Incident {
	t := now
	return &pollwarden.Incident{ID: o.ID, Key: key, Kind: o.Kind, OpenedAt: o.OpenedAt, ClosedAt: &t, ClosedBy: why, Probes: o.Probes}
}

// resumeAfterIncident spreads the first request of an operation that an
// incident held, once the incident is gone: held operations would
// otherwise all send on their next wake-up, a burst at a provider just
// back. Like a late wake-up (spreadLate), the request moves once to now +
// u·d, d the operation's next backoff delay, u drawn from its id; the
// wait is recorded with the delay source local_backoff, so that wake-up
// sends. ok is false when the spread would reach the deadline (then it
// sends now, while it still may).
func resumeAfterIncident(op *pollwarden.Operation, c *pollwarden.ContractSpec, now time.Time) (pollwarden.KeyGrant, bool) {
	d := Delay(c.Backoff, op.CompletedPolls, op.JitterFactor)
	at := now.Add(time.Duration(spreadFraction(op) * float64(d)))
	if !at.Before(op.DeadlineAt) {
		return pollwarden.KeyGrant{}, false
	}
	return pollwarden.KeyGrant{Until: at, Source: pollwarden.DelayLocalBackoff,
		Detail: "the incident that held this operation is over: its next request goes a little later, so that the held operations do not all send at once"}, true
}

// resumed is op as the quota sees it once its incident's hold is over.
func resumed(op *pollwarden.Operation) *pollwarden.Operation {
	next := op.Clone()
	next.NextPollSource = pollwarden.DelayLocalBackoff
	return next
}

// keyIncident is the incident's check in front of the quota (KeyGrant):
// while an incident is open under the key, a request it holds never
// reaches the quota; the probe it lets go is then the quota's to grant,
// and takes the probe slot only if the quota grants it. Once the
// incident is over, an operation it held resumes spread.
func keyIncident(ks *pollwarden.KeyState, op *pollwarden.Operation, c *pollwarden.ContractSpec, now time.Time, status bool) (*pollwarden.KeyState, pollwarden.KeyGrant) {
	if ks.Incident.Open == nil {
		// Held by an incident that is over: spread, then the quota.
		if g, ok := resumeAfterIncident(op, c, now); ok {
			return nil, g
		}
		without := cloneKey(ks)
		return KeyGrant(without, resumed(op), c, now)
	}
	is, g := grantIncident(ks.Incident, op, c, now, status)
	if !g.Send {
		return nil, pollwarden.KeyGrant{Until: g.Until, Source: pollwarden.DelayProviderIncident, Detail: g.Detail, Incident: g.Incident}
	}
	without := cloneKey(ks)
	without.Incident = pollwarden.IncidentState{}
	next, qg := KeyGrant(without, op, c, now)
	if next == nil {
		next = without
	}
	if !qg.OK {
		next.Incident = ks.Incident.Clone()
		return next, qg
	}
	next.Incident, next.UpdatedAt = is, now
	qg.Incident = g.Incident
	return next, qg
}

// noteKeyIncident applies an answer to the key's incident state
// (NoteIncident) in KeyNote; it reports whether the row changed, and
// leaves what to write with it in ks.Incident.Effects.
func noteKeyIncident(ks *pollwarden.KeyState, eff *pollwarden.KeyEffects, op *pollwarden.Operation, c *pollwarden.ContractSpec, obs *pollwarden.Observation, now time.Time) bool {
	is, fx := NoteIncident(ks.Incident, ks.Key, op, c, obs, now)
	if !fx.Any() && reflect.DeepEqual(is.Recent, ks.Incident.Recent) && reflect.DeepEqual(is.Open, ks.Incident.Open) {
		return false
	}
	if fx.Any() {
		eff.Incident = fx
		is.Effects = &fx
	}
	ks.Incident = is
	return true
}

// IncidentTaught reports whether an answer counts for the incident rule
// whatever the key's row holds: a failure (transport or 5xx) or a refused
// credential (KeyTaught includes it). A valid answer counts only where
// IncidentWatching: the saves of a key with nothing to forget need not
// read its row.
func IncidentTaught(obs *pollwarden.Observation) bool {
	return failure(obs) != "" || denied(obs)
}

// IncidentWatching reports whether the key's row has recent failures or
// an open incident, which a valid answer would forget or close.
func IncidentWatching(ks *pollwarden.KeyState) bool {
	return ks.Incident.Open != nil || len(ks.Incident.Recent) > 0
}
