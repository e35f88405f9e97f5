package contract

import (
	"github.com/pollwarden/pollwarden"
)

// decisionTimes decodes how long an escalation waits for a person:
// escalation.remind_after, expire_after and on_expiry. It runs after the
// cancel block, which on_expiry: cancel_at_provider needs.
func (d *decoder) decisionTimes(o *object, c *pollwarden.ContractSpec) {
	e := &c.Escalation
	e.RemindAfter = o.span("remind_after", 0)
	e.ExpireAfter = o.span("expire_after", 0)
	if e.RemindAfter > 0 && e.ExpireAfter > 0 && e.RemindAfter >= e.ExpireAfter {
		d.addf(o.lineOf("remind_after"), o.child("remind_after"), "must be shorter than expire_after (%s), or no reminder is ever sent",
			pollwarden.ShortDuration(e.ExpireAfter))
	}
	s, line, ok := o.str("on_expiry", false)
	if !ok {
		return
	}
	switch {
	case s != pollwarden.OptionAbandon && s != pollwarden.OptionCancel:
		d.addf(line, o.child("on_expiry"), "must be %s or %s, got %s: an expired request never grants more time or requests",
			pollwarden.OptionAbandon, pollwarden.OptionCancel, clip(s))
	case s == pollwarden.OptionCancel && c.Cancel == nil:
		d.addf(line, o.child("on_expiry"), "%s needs a cancel block: the provider documents no cancel action here", s)
	case e.ExpireAfter == 0:
		d.addf(line, o.child("on_expiry"), "has no effect without expire_after")
	default:
		e.OnExpiry = s
	}
}
