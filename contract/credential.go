package contract

import (
	"regexp"
	"strings"

	"github.com/pollwarden/pollwarden"
)

// credentialKeys are every key status.credential may hold; which apply
// depends on its kind, checked in credential.
var credentialKeys = []string{"kind", "header", "scheme", "secret", "token_url", "client_id", "client_secret",
	"scopes", "key", "region", "service", "access_key_id", "secret_access_key", "session_token", "approve_each_call"}

// kindKeys lists the keys each kind uses; any other present key is an error
// rather than silently ignored.
var kindKeys = map[string][]string{
	pollwarden.CredentialDefault: {"kind", "header", "scheme", "secret", "approve_each_call"},
	pollwarden.CredentialOAuth2:  {"kind", "header", "scheme", "token_url", "client_id", "client_secret", "scopes", "approve_each_call"},
	pollwarden.CredentialGoogle:  {"kind", "header", "scheme", "token_url", "key", "scopes", "approve_each_call"},
	pollwarden.CredentialSigV4:   {"kind", "region", "service", "access_key_id", "secret_access_key", "session_token", "approve_each_call"},
}

// GoogleTokenURL is where a Google service account's signed assertion is
// exchanged unless the contract names another endpoint.
const GoogleTokenURL = "https://oauth2.googleapis.com/token"

var awsName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// credential decodes where the secret lives. No reference is ever echoed
// in a message: if it is wrong, it may be the secret itself.
func (d *decoder) credential(o *object, base Origin, haveBase bool) *pollwarden.Credential {
	if !o.present {
		return nil
	}
	c := &pollwarden.Credential{}
	if k, line, ok := o.str("kind", false); ok {
		if _, known := kindKeys[k]; !known || k == "" {
			d.addf(line, o.child("kind"), "unknown credential kind %s (header secret when absent, %s, %s or %s)",
				clip(k), pollwarden.CredentialOAuth2, pollwarden.CredentialGoogle, pollwarden.CredentialSigV4)
			return c
		}
		c.Kind = k
	}
	for _, key := range credentialKeys {
		if o.has(key) && !contains(kindKeys[c.Kind], key) {
			d.addf(o.lineOf(key), o.child(key), "does not apply to a %s credential", kindLabel(c.Kind))
		}
	}
	// A privileged status API (one that reveals sensitive job metadata)
	// may need an approver for every call, whatever the method.
	c.ApproveEachCall = o.boolean("approve_each_call")
	ref := func(key string, required bool) string {
		r, line, ok := o.str(key, required)
		if !ok {
			return ""
		}
		if msg := checkRef(r); msg != "" {
			d.addf(line, o.child(key), "%s (value not shown)", msg)
			return ""
		}
		return r
	}
	switch c.Kind {
	case pollwarden.CredentialSigV4:
		for _, key := range []string{"region", "service"} {
			v, line, ok := o.str(key, true)
			if ok && !awsName.MatchString(v) {
				d.addf(line, o.child(key), "must be an AWS %s name such as us-east-1 or textract, got %s", key, clip(v))
			}
			if key == "region" {
				c.Region = v
			} else {
				c.Service = v
			}
		}
		c.AccessKeyID = ref("access_key_id", true)
		c.Ref = ref("secret_access_key", true)
		c.SessionToken = ref("session_token", false)
		return c
	case pollwarden.CredentialOAuth2, pollwarden.CredentialGoogle:
		c.Header, c.Scheme = "Authorization", "Bearer"
		def := ""
		if c.Kind == pollwarden.CredentialGoogle {
			def = GoogleTokenURL
			c.Ref = ref("key", true)
		} else {
			c.ClientID = ref("client_id", true)
			c.Ref = ref("client_secret", true)
		}
		c.TokenURL = d.tokenURL(o, def, base, haveBase)
		for _, it := range o.strs("scopes") {
			if s := strings.TrimSpace(it.node.Value); s == "" || strings.ContainsAny(s, " \t\r\n") {
				d.addf(it.line, it.path, "a scope is one word with no spaces")
			} else {
				c.Scopes = append(c.Scopes, s)
			}
		}
		if c.Kind == pollwarden.CredentialGoogle && len(c.Scopes) == 0 {
			d.addf(o.line, o.path, "a google_service_account credential needs scopes (such as https://www.googleapis.com/auth/cloud-platform)")
		}
	default:
		c.Ref = ref("secret", true)
	}
	if h, line, ok := o.str("header", c.Kind == ""); ok {
		if !isToken(h) {
			d.addf(line, o.child("header"), "must be a header name, got %s", clip(h))
		}
		c.Header = h
	}
	if sc, line, ok := o.str("scheme", false); ok {
		if !isToken(sc) {
			d.addf(line, o.child("scheme"), "must be one word such as Bearer, got %s", clip(sc))
		}
		c.Scheme = sc
	}
	return c
}

// tokenURL reads the token endpoint. It is written in the contract, never
// filled from a variable or base_url, so no operation can send the client
// secret elsewhere; an https status call takes only an https endpoint.
func (d *decoder) tokenURL(o *object, def string, base Origin, haveBase bool) string {
	u, line, ok := o.str("token_url", def == "")
	if !ok {
		return def
	}
	p := o.child("token_url")
	if strings.ContainsAny(u, "{}") {
		d.addf(line, p, "the token endpoint is written out in full: no variables or {job_id}")
		return ""
	}
	to, err := ParseOrigin(u)
	if err != nil {
		d.addf(line, p, "%v", err)
		return ""
	}
	if strings.ContainsAny(u, "#") {
		d.addf(line, p, "a token endpoint has no fragment")
		return ""
	}
	if to.Scheme == "http" && (!haveBase || base.Scheme == "https") {
		d.addf(line, p, "plain http token endpoint: the client secret would travel unencrypted")
		return ""
	}
	return u
}

// caFile reads status.ca_file (or its short form ca), a file: reference to
// PEM certificates this contract alone trusts.
func (d *decoder) caFile(o *object) string {
	key := "ca_file"
	if !o.has(key) && o.has("ca") {
		key = "ca"
	} else if o.has(key) && o.has("ca") {
		d.addf(o.lineOf("ca"), o.child("ca"), "ca and ca_file say the same thing; keep one")
	}
	v, line, ok := o.str(key, false)
	if !ok {
		return ""
	}
	path, isFile := strings.CutPrefix(v, "file:")
	if !isFile || path == "" || strings.ContainsAny(path, "\x00\r\n") {
		d.addf(line, o.child(key), "must be file:PATH naming a PEM file of CA certificates")
		return ""
	}
	return v
}

func kindLabel(k string) string {
	if k == "" {
		return "header secret"
	}
	return k
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
