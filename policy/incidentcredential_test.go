package policy

import (
	"fmt"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

// A 403 the contract recognises as a rate limit (GitHub's, with
// x-ratelimit-remaining 0) is a rate limit, as policy.Decide classifies
// it: it opens no credential incident, and neither does a 401 or 403 the
// contract maps to a state.
func TestIncidentRateLimited403IsNoRefusal(t *testing.T) {
	c := testContract()
	for name, obs := range map[string]*pollwarden.Observation{
		"rate limit signal": {Status: 403, RateLimitSignal: "x-ratelimit-remaining is 0"},
		"mapped to a state": {Status: 401, Body: pollwarden.BodyFacts{FromStatus: true}},
	} {
		if _, fx := NoteIncident(pollwarden.IncidentState{}, incKey, opNamed(t, c, "a"), c, obs, t0); fx.Opened != nil {
			t.Errorf("%s: opened %+v", name, fx.Opened)
		}
	}
}

// A minted credential's refused token is dropped, so one status request
// may probe with a newly minted one; an accepted answer closes the
// incident, and a refused probe leaves it to an approver. A static
// secret gets no probe at all (R19: never a retry with the same one).
func TestIncidentMintedCredentialProbesOnce(t *testing.T) {
	for _, minted := range []bool{false, true} {
		c := testContract()
		c.Status.Credential = &pollwarden.Credential{Ref: incKey}
		if minted {
			c.Status.Credential.Kind = pollwarden.CredentialOAuth2
		}
		is, fx := NoteIncident(pollwarden.IncidentState{}, incKey, opNamed(t, c, "a"), c, &pollwarden.Observation{Status: 401}, t0)
		if fx.Opened == nil {
			t.Fatal("the 401 opened no incident")
		}
		sent := 0
		var probe pollwarden.IncidentState
		for i := range 20 {
			next, g := GrantIncident(is, opNamed(t, c, fmt.Sprintf("o%d", i)), c, t0.Add(time.Duration(i)*time.Second))
			if g.Send {
				sent++
				probe, is = next, next
			}
		}
		if want := map[bool]int{false: 0, true: 1}[minted]; sent != want {
			t.Fatalf("minted=%v: %d requests went out under the refused credential, want %d", minted, sent, want)
		}
		if !minted {
			continue
		}
		if _, fx := NoteIncident(probe, incKey, opNamed(t, c, "o0"), c, &pollwarden.Observation{Status: 200}, t0.Add(time.Minute)); fx.Closed == nil {
			t.Fatal("an accepted probe did not close the credential incident")
		}
		again, _ := NoteIncident(probe, incKey, opNamed(t, c, "o0"), c, &pollwarden.Observation{Status: 401}, t0.Add(time.Minute))
		if _, g := GrantIncident(again, opNamed(t, c, "o9"), c, t0.Add(time.Hour)); g.Send {
			t.Fatal("a second probe went out after the minted token was refused too")
		}
	}
}
