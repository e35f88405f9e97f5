package contract

import "github.com/pollwarden/pollwarden"

// ProviderOrigin reports whether rawURL is on the provider's own origin
// (base_url's or status.url's), not merely allowed: an allowed_hosts
// entry names somewhere else the credential may go (a storage host, a
// CDN), and a trace context is for the provider that traces, not for
// them.
func ProviderOrigin(c *pollwarden.ContractSpec, rawURL string) bool {
	got, err := ParseOrigin(rawURL)
	if err != nil || c == nil {
		return false
	}
	var own []Origin
	if c.BaseURL != "" {
		if o, err := ParseOrigin(c.BaseURL); err == nil {
			own = append(own, o)
		}
	}
	if o, ok := templateOrigin(c.Status.URL); ok {
		own = append(own, o)
	}
	return allowedBy(own, got)
}
