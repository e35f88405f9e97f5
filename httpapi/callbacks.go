package httpapi

import (
	"errors"
	"io"
	"net/http"
	"os"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/prober"
	"github.com/pollwarden/pollwarden/webhook"
)

// maxCallbackBody bounds a provider callback's body: OpenAI's batch events
// are a few hundred bytes, GitHub's workflow_run events tens of KiB.
const maxCallbackBody = 1 << 20

// callbackAnswer is the one answer of an accepted callback, the same
// whether or not it woke anything, so a caller holding the secret learns
// nothing about which jobs exist.
type callbackAnswer struct {
	Accepted bool `json:"accepted"`
}

// callback serves POST /v1/callbacks/{contract}: a provider saying that a
// job ended. No bearer token: the signature, checked with the contract's
// secret, is the authentication, and one that does not verify answers 401
// before the body is read for anything else. A verified callback only
// wakes the job's waiting operations for one status request
// (controller.Callback); its body is never taken as the job's result.
func (a *api) callback(w http.ResponseWriter, r *http.Request, _ pollwarden.Actor) error {
	name := r.PathValue("contract")
	ex, ok := a.contracts.Get(name)
	if !ok || ex.Contract().Callback == nil {
		return errorf(http.StatusNotFound, codeNotFound, "no contract accepts callbacks at %s", r.URL.Path)
	}
	cb := ex.Contract().Callback
	if r.ContentLength > maxCallbackBody {
		return tooLarge()
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxCallbackBody))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return tooLarge()
		}
		return errorf(http.StatusBadRequest, codeInvalidJSON, "cannot read the callback body: %v", err)
	}
	if err := a.verifyCallback(r, cb, body); err != nil {
		return err
	}
	jobID, wanted, err := contract.CallbackJob(cb, body)
	switch {
	case err != nil:
		return unprocessable("verified callback for contract %s: %v", name, err)
	case wanted:
		if _, err := a.ctl.Callback(r.Context(), ex.Contract(), jobID); err != nil {
			return internal(err)
		}
	}
	writeJSON(w, http.StatusAccepted, callbackAnswer{Accepted: true})
	return nil
}

// verifyCallback checks the callback's signature with the contract's
// secret, read now so a rotated secret needs no restart. A secret that
// cannot be read is the daemon's problem, logged by its reference; the
// caller still gets 401, as for any callback that cannot be verified.
func (a *api) verifyCallback(r *http.Request, cb *pollwarden.CallbackSpec, body []byte) error {
	unverified := func(why string) error {
		return errorf(http.StatusUnauthorized, codeUnauthorized, "the callback cannot be verified: %s", why)
	}
	secret, err := a.callbackSecret(cb.SecretRef)
	if err != nil {
		a.log.ErrorContext(r.Context(), "callback secret unavailable", "path", r.URL.Path, "error", err)
		return unverified("the daemon cannot read the contract's callback secret")
	}
	switch cb.Verify {
	case pollwarden.CallbackStandardWebhooks:
		key, err := webhook.ParseSecret(secret)
		if err != nil {
			a.log.ErrorContext(r.Context(), "callback secret unusable", "path", r.URL.Path, "secret", cb.SecretRef, "error", err)
			return unverified("the daemon cannot use the contract's callback secret")
		}
		err = webhook.Verify(key, r.Header.Get(webhook.HeaderID), r.Header.Get(webhook.HeaderTimestamp),
			r.Header.Get(webhook.HeaderSignature), body, a.clock.Now())
		if err != nil {
			return unverified(err.Error())
		}
	case pollwarden.CallbackGitHub:
		if err := webhook.VerifyGitHub([]byte(secret), r.Header.Get("X-Hub-Signature-256"), body); err != nil {
			return unverified(err.Error())
		}
	default:
		return unverified("the contract names no known verification")
	}
	return nil
}

// defaultCallbackSecret reads a secret reference from the process's
// environment and files, as the prober does for credentials.
func defaultCallbackSecret(ref string) (string, error) {
	return prober.ResolveSecret(ref, os.LookupEnv, os.ReadFile)
}
