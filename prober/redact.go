package prober

import (
	"bytes"
	"encoding/json"
	"net/url"
	"sort"
	"strings"
)

// Redacted replaces a secret a provider echoed back.
const Redacted = "[REDACTED]"

// redact removes the secret from every provider-controlled field of resp
// (R27): some providers echo the Authorization header in error bodies or in
// a request id. Besides the plain secret it removes the forms it takes once
// escaped into JSON or a URL. (The "Scheme secret" form needs no entry of
// its own: replacing the secret inside it already removes it.)
func redact(resp *Response, secret string) {
	r := redactor(secret)
	resp.TransportDetail = r.Replace(resp.TransportDetail)
	resp.RetryAfter = r.Replace(resp.RetryAfter)
	resp.RequestID = r.Replace(resp.RequestID)
	resp.Location = r.Replace(resp.Location)
	for k, v := range resp.Headers {
		resp.Headers[k] = r.Replace(v)
	}
	if resp.Body != nil {
		resp.Body = []byte(r.Replace(string(resp.Body)))
	}
}

func redactor(secret string) *strings.Replacer {
	forms := map[string]bool{secret: true}
	forms[url.QueryEscape(secret)] = true
	forms[url.PathEscape(secret)] = true
	if b, err := json.Marshal(secret); err == nil {
		forms[string(b[1:len(b)-1])] = true
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(secret) == nil {
		s := strings.TrimSpace(buf.String())
		forms[s[1:len(s)-1]] = true
	}
	list := make([]string, 0, len(forms))
	for f := range forms {
		if f != "" {
			list = append(list, f)
		}
	}
	// Longest first: Replacer tries olds in argument order at each position.
	sort.Slice(list, func(i, j int) bool { return len(list[i]) > len(list[j]) })
	pairs := make([]string, 0, 2*len(list))
	for _, f := range list {
		pairs = append(pairs, f, Redacted)
	}
	return strings.NewReplacer(pairs...)
}
