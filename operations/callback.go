package operations

import (
	"context"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/webhook"
)

// CallbackParams is a provider's callback as it arrived at a door: no
// caller, since the signature, checked with the contract's secret, is the
// authentication.
type CallbackParams struct {
	// Contract is the name the callback was addressed to.
	Contract string
	// Header reads one of the request's headers (the signature's).
	Header func(name string) string
	Body   []byte
}

// Callback verifies a provider's callback and wakes the waiting
// operations of the job it names, each for one status request
// (controller.Callback); its body is never taken as the job's result. A
// contract that takes no callbacks is NotFound; a signature that does not
// verify, or a secret the process cannot read (logged by its reference,
// never its value), is Unauthenticated; a verified body that names no job
// is Invalid. A verified callback that wants nothing woken is accepted
// all the same, so a caller holding the secret learns nothing about which
// jobs exist.
func (s *Service) Callback(ctx context.Context, p CallbackParams) error {
	ex, ok := s.o.Contracts.Get(p.Contract)
	if !ok || ex.Spec().Callback == nil {
		return refuse(NotFound, "contract", "no contract named %q accepts callbacks", p.Contract)
	}
	cb := ex.Spec().Callback
	if err := s.verifyCallback(ctx, p, cb); err != nil {
		return err
	}
	jobID, wanted, err := contract.CallbackJob(cb, p.Body)
	switch {
	case err != nil:
		return refuse(Invalid, "", "verified callback for contract %s: %v", p.Contract, err)
	case wanted:
		if _, err := s.ctl.Callback(ctx, ex.Spec(), jobID); err != nil {
			return err
		}
	}
	return nil
}

// verifyCallback checks the callback's signature with the contract's
// secret, read now so a rotated secret needs no restart.
func (s *Service) verifyCallback(ctx context.Context, p CallbackParams, cb *pollwarden.CallbackSpec) error {
	unverified := func(why string) error {
		return refuse(Unauthenticated, "", "the callback cannot be verified: %s", why)
	}
	secret, err := s.o.CallbackSecret(cb.SecretRef)
	if err != nil {
		s.o.Logger.ErrorContext(ctx, "callback secret unavailable", "contract", p.Contract, "error", err)
		return unverified("the daemon cannot read the contract's callback secret")
	}
	switch cb.Verify {
	case pollwarden.CallbackStandardWebhooks:
		key, err := webhook.ParseSecret(secret)
		if err != nil {
			s.o.Logger.ErrorContext(ctx, "callback secret unusable", "contract", p.Contract, "secret", cb.SecretRef, "error", err)
			return unverified("the daemon cannot use the contract's callback secret")
		}
		err = webhook.Verify(key, p.Header(webhook.HeaderID), p.Header(webhook.HeaderTimestamp),
			p.Header(webhook.HeaderSignature), p.Body, s.o.Clock.Now())
		if err != nil {
			return unverified(err.Error())
		}
	case pollwarden.CallbackGitHub:
		if err := webhook.VerifyGitHub([]byte(secret), p.Header("X-Hub-Signature-256"), p.Body); err != nil {
			return unverified(err.Error())
		}
	default:
		return unverified("the contract names no known verification")
	}
	return nil
}
