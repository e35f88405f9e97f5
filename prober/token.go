package prober

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
	"golang.org/x/oauth2/google"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
)

// Token cache bounds: a token is given up a minute before it expires so
// it never expires on the way, one whose endpoint gave no lifetime is kept
// five minutes, and none is kept longer than an hour, whatever lifetime the
// endpoint claims (expires_in: 2147483647 would otherwise keep a revoked
// token for 68 years).
const (
	tokenMargin     = time.Minute
	tokenDefaultTTL = 5 * time.Minute
	tokenMaxTTL     = time.Hour
)

// tokenCache holds minted access tokens in memory only, by a digest of
// everything that minted them, so a rotated secret mints afresh.
type tokenCache struct {
	mu sync.Mutex
	m  map[[32]byte]*tokenEntry
}

type tokenEntry struct {
	mu    sync.Mutex // one mint at a time per credential
	token string
	until time.Time
}

func (tc *tokenCache) entry(key [32]byte) *tokenEntry {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if tc.m == nil {
		tc.m = map[[32]byte]*tokenEntry{}
	}
	e := tc.m[key]
	if e == nil {
		e = &tokenEntry{}
		tc.m[key] = e
	}
	return e
}

// forget drops token from the entry at key, if it is still the cached one:
// the provider refused it (401), so the next request mints another, and a
// token another request has minted since is kept.
func (tc *tokenCache) forget(key [32]byte, token string) {
	e := tc.entry(key)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.token == token {
		e.token, e.until = "", time.Time{}
	}
}

// accessToken returns a valid access token for an OAuth2 or Google
// credential, minting one when none is cached. secrets lists what the
// scrubber must remove (the client secret) even when minting fails, and
// forget drops the token from the cache once the provider refused it.
func (p *Prober) accessToken(ctx context.Context, c *pollwarden.ContractSpec) (tok string, secrets []string, forget func(), err error) {
	cred := c.Status.Credential
	origin, err := contract.ParseOrigin(cred.TokenURL)
	if err != nil {
		return "", nil, nil, &tokenFailure{pollwarden.TransportOther, "token endpoint refused: " + err.Error() + "; status request not sent"}
	}
	var source func(context.Context) (*oauth2.Token, error)
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00", cred.Kind, cred.TokenURL, strings.Join(cred.Scopes, " "))
	switch cred.Kind {
	case pollwarden.CredentialOAuth2:
		id, err := p.resolve(cred.ClientID)
		if err != nil {
			return "", nil, nil, err
		}
		secret, err := p.resolve(cred.Ref)
		if err != nil {
			return "", nil, nil, err
		}
		secrets = []string{secret}
		fmt.Fprintf(h, "%s\x00%s", id, secret)
		cfg := clientcredentials.Config{ClientID: id, ClientSecret: secret, TokenURL: cred.TokenURL,
			Scopes: cred.Scopes, AuthStyle: oauth2.AuthStyleInParams}
		source = cfg.Token
	case pollwarden.CredentialGoogle:
		key, err := p.resolveBlob(cred.Ref)
		if err != nil {
			return "", nil, nil, err
		}
		jc, err := google.JWTConfigFromJSON(key, cred.Scopes...)
		if err != nil {
			return "", nil, nil, fmt.Errorf("credential %s is not a Google service account key file", cred.Ref)
		}
		if jc.TokenURL != "" && jc.TokenURL != cred.TokenURL {
			return "", nil, nil, fmt.Errorf("credential %s names token endpoint %s, not the contract's %s; write it as token_url to trust it",
				cred.Ref, clipURL(jc.TokenURL), cred.TokenURL)
		}
		jc.TokenURL = cred.TokenURL
		h.Write(key)
		source = func(ctx context.Context) (*oauth2.Token, error) { return jc.TokenSource(ctx).Token() }
	default:
		return "", nil, nil, errors.New("not a token credential")
	}
	var key [32]byte
	copy(key[:], h.Sum(nil))
	e := p.tokens.entry(key)
	e.mu.Lock()
	defer e.mu.Unlock()
	forgetting := func(tok string) func() { return func() { p.tokens.forget(key, tok) } }
	if e.token != "" && p.now().Before(e.until) {
		return e.token, secrets, forgetting(e.token), nil
	}
	timeout := c.Status.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	client, err := p.clientFor(c)
	if err != nil {
		return "", secrets, nil, &tokenFailure{pollwarden.TransportTLS, err.Error() + "; status request not sent"}
	}
	// The token endpoint gets the client secret: it is never followed
	// elsewhere by a redirect.
	tc := &http.Client{Transport: client.Transport, Timeout: timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	mctx, cancel := context.WithTimeout(context.WithValue(ctx, oauth2.HTTPClient, tc), timeout)
	defer cancel()
	t, err := source(mctx)
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.Response != nil {
			return "", secrets, nil, &tokenFailure{pollwarden.TransportOther, tokenDetail(origin.String(), re.Response.StatusCode, re.ErrorCode)}
		}
		class, detail := classify(mctx, err, timeout)
		return "", secrets, nil, &tokenFailure{class, "token endpoint " + origin.String() + ": " + detail + "; status request not sent"}
	}
	if t.AccessToken == "" || strings.ContainsAny(t.AccessToken, "\r\n\x00 ") {
		return "", secrets, nil, &tokenFailure{pollwarden.TransportOther, "token endpoint " + origin.String() + " gave no usable access token; status request not sent"}
	}
	ttl := tokenDefaultTTL
	if !t.Expiry.IsZero() {
		ttl = time.Until(t.Expiry)
	}
	e.token, e.until = t.AccessToken, p.now().Add(min(ttl, tokenMaxTTL)-tokenMargin)
	return e.token, secrets, forgetting(e.token), nil
}

// resolveBlob reads a reference whose value may span lines (a JSON key
// file), which ResolveSecret refuses for header secrets.
func (p *Prober) resolveBlob(ref string) ([]byte, error) {
	kind, name, _ := strings.Cut(ref, ":")
	switch {
	case kind == "env" && name != "":
		v, ok := p.getenv(name)
		if !ok || v == "" {
			return nil, fmt.Errorf("credential %s is not set", ref)
		}
		return []byte(v), nil
	case kind == "file" && name != "":
		b, err := p.readFile(name)
		if err != nil {
			return nil, fmt.Errorf("credential %s cannot be read", ref)
		}
		if !json.Valid(b) {
			return nil, fmt.Errorf("credential %s is not JSON", ref)
		}
		return b, nil
	}
	return nil, errors.New("credential reference is neither env:NAME nor file:PATH")
}

// clipURL keeps an origin-sized prefix of a URL for a message.
func clipURL(s string) string {
	if o, err := contract.ParseOrigin(s); err == nil {
		return o.String()
	}
	return "(unreadable)"
}
