package pollwarden

// CallbackSpec is a contract's `callback` block: how a provider's
// completion webhook is verified and where its job id is. A verified
// callback only wakes the operation for one status request; its body is
// never taken as the job's result.
type CallbackSpec struct {
	// Verify is the signature scheme: CallbackStandardWebhooks or
	// CallbackGitHub.
	Verify CallbackVerify
	// SecretRef is "env:NAME" or "file:PATH", resolved per callback so a
	// rotated secret needs no restart; the secret itself is never stored.
	SecretRef string
	// JobIDPath is a JMESPath into the payload giving the provider job id.
	JobIDPath string
	// EventFilter, when set, is a JMESPath that must be true for the
	// callback to count (e.g. type == 'batch.completed').
	EventFilter string
}

// CallbackVerify names how a callback proves it comes from the provider.
type CallbackVerify string

const (
	// CallbackStandardWebhooks: webhook-id, webhook-timestamp and
	// webhook-signature headers, HMAC-SHA256 with a whsec_ secret
	// (OpenAI's batch webhooks).
	CallbackStandardWebhooks CallbackVerify = "standard-webhooks"
	// CallbackGitHub: X-Hub-Signature-256, HMAC-SHA256 of the body with
	// the webhook's secret.
	CallbackGitHub CallbackVerify = "github"
)
