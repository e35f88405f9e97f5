// Package webhook sends `pollwarden serve`'s webhooks: on every escalation,
// every reminder and expiry of a decision request, and each operation's
// final outcome, a POST signed per the Standard Webhooks scheme, or, for a
// person, the decision request as a Slack-compatible message or an e-mail;
// all from a durable outbox in the store, retried with backoff and jitter,
// delivered at least once across restarts and replicas. The audit trail is
// the outbox's source, so no record change needs to know about webhooks
// (docs/webhooks.md).
//
// Secrets are references (env:NAME, file:PATH) resolved at every attempt;
// they never reach the store, the logs or an error.
package webhook
