package prober

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"

	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/pollwarden/pollwarden"
)

// authorizer puts the contract's credential on a request just before it
// leaves, on every hop, and knows every secret it used, so the scrubber can
// remove each of them from what comes back.
type authorizer struct {
	secrets []string
	apply   func(req *http.Request, body []byte) error
	// session is the provider session id the requests carry, "" for none.
	session string
	// refused, when set, drops a minted token the provider answered 401
	// to, so the next request mints another instead of sending it again.
	refused func()
}

// answered tells the authorizer the provider's status code for a request
// it authorized.
func (a *authorizer) answered(status int) {
	if a != nil && a.refused != nil && status == http.StatusUnauthorized {
		a.refused()
	}
}

// tokenFailure is a token endpoint that did not give a token: the status
// request was never sent, and the call is a transport failure.
type tokenFailure struct {
	class, detail string
}

func (e *tokenFailure) Error() string { return e.detail }

// authorize resolves the credential at request time and, for a contract
// with a session handshake, the session. It returns nil when the contract
// has neither; a *tokenFailure when minting failed; a *sessionFailure when
// the handshake gave no session; any other error names a reference that
// could not be read.
func (p *Prober) authorize(ctx context.Context, c *pollwarden.ContractSpec) (*authorizer, error) {
	auth, err := p.credentialAuth(ctx, c)
	if err != nil || c.Status.Session == nil {
		return auth, err
	}
	return p.withSession(ctx, c, auth)
}

// credentialAuth resolves the credential alone.
func (p *Prober) credentialAuth(ctx context.Context, c *pollwarden.ContractSpec) (*authorizer, error) {
	cred := c.Status.Credential
	if cred == nil {
		return nil, nil
	}
	switch cred.Kind {
	case pollwarden.CredentialOAuth2, pollwarden.CredentialGoogle:
		tok, secrets, forget, err := p.accessToken(ctx, c)
		if err != nil {
			return &authorizer{secrets: secrets}, err
		}
		a := headerAuth(cred, tok, append(secrets, tok))
		a.refused = forget
		return a, nil
	case pollwarden.CredentialSigV4:
		return p.sigv4(cred)
	}
	s, err := p.resolve(cred.Ref)
	if err != nil {
		return nil, err
	}
	return headerAuth(cred, s, []string{s}), nil
}

// headerAuth sets the credential header to secret, after the scheme. It
// is set last so a contract header of the same name cannot replace it.
func headerAuth(cred *pollwarden.Credential, secret string, secrets []string) *authorizer {
	value := secret
	if cred.Scheme != "" {
		value = cred.Scheme + " " + secret
	}
	return &authorizer{secrets: secrets, apply: func(req *http.Request, _ []byte) error {
		req.Header.Set(cred.Header, value)
		return nil
	}}
}

// sigv4 signs each request with the AWS SDK's v4 signer over the headers
// as sent and the body's SHA-256, at the prober's clock.
func (p *Prober) sigv4(cred *pollwarden.Credential) (*authorizer, error) {
	id, err := p.resolve(cred.AccessKeyID)
	if err != nil {
		return nil, err
	}
	key, err := p.resolve(cred.Ref)
	if err != nil {
		return nil, err
	}
	secrets := []string{key}
	session := ""
	if cred.SessionToken != "" {
		if session, err = p.resolve(cred.SessionToken); err != nil {
			return nil, err
		}
		secrets = append(secrets, session)
	}
	creds := aws.Credentials{AccessKeyID: id, SecretAccessKey: key, SessionToken: session}
	signer := v4.NewSigner()
	return &authorizer{secrets: secrets, apply: func(req *http.Request, body []byte) error {
		sum := sha256.Sum256(body)
		if err := signer.SignHTTP(req.Context(), creds, req, hex.EncodeToString(sum[:]), cred.Service, cred.Region, p.now()); err != nil {
			// The signer's errors describe the request, not the key.
			return errors.New("cannot sign the request with AWS SigV4")
		}
		return nil
	}}, nil
}

// tokenDetail describes a failed mint without the endpoint's body, which
// may echo what was sent.
func tokenDetail(origin string, status int, code string) string {
	d := fmt.Sprintf("token endpoint %s answered HTTP %d", origin, status)
	if code != "" && isToken(code) && len(code) <= 64 {
		d += " (" + code + ")"
	}
	return d + "; status request not sent"
}

// isToken reports whether s is a plain word (an OAuth2 error code).
func isToken(s string) bool {
	return s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") == ""
}
