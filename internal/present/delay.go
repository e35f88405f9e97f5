package present

import (
	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/internal/display"
)

// DelaySource names who chose the time of the next status request (R24)
// as a short noun phrase ("next poll … from local backoff"), the same
// words in the story, the CLI and MCP. An unknown source is shown as it
// is, escaped.
func DelaySource(s pollwarden.DelaySource) string {
	switch s {
	case pollwarden.DelayRetryAfter:
		return "provider guidance"
	case pollwarden.DelayPollHint:
		return "provider hint"
	case pollwarden.DelayLocalBackoff:
		return "local backoff"
	case pollwarden.DelayManualExtension:
		return "manual extension"
	case pollwarden.DelayCallback:
		return "provider callback"
	case pollwarden.DelaySharedQuota:
		return "the shared quota"
	case pollwarden.DelayProviderIncident:
		return "a provider incident"
	}
	return display.Text(string(s))
}
