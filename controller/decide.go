package controller

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/policy"
)

// Decide applies a person's decision to an escalated operation (R20). The
// cancel option runs the contract's cancel call as its own recorded action
// (R23) after the decision itself is saved.
func (c *Controller) Decide(ctx context.Context, ex *contract.Extractor, id string, p policy.DecisionParams) (*pollwarden.Operation, error) {
	ct := ex.Contract()
	op, err := c.store.OperationGet(ctx, id)
	if err != nil {
		return nil, err
	}
	if op.Contract != ct.Name {
		return nil, fmt.Errorf("%w: operation %s belongs to contract %q, not %q", pollwarden.ErrInvalid, id, op.Contract, ct.Name)
	}
	now := c.clock.Now()
	next, events, err := policy.Apply(op, ct, p, now)
	if err != nil {
		return nil, err
	}
	if err := c.save(ctx, next, nil, events, now); err != nil {
		return nil, err
	}
	if p.Option != pollwarden.OptionCancel {
		return next, nil
	}
	return c.cancel(ctx, ex, next)
}

func (c *Controller) cancel(ctx context.Context, ex *contract.Extractor, op *pollwarden.Operation) (*pollwarden.Operation, error) {
	ct := ex.Contract()
	url, err := actionURL(ct.Cancel.URL, op.ProviderJobID)
	ok, detail := false, ""
	if err != nil {
		detail = err.Error()
	} else {
		r := c.prober.Action(context.WithoutCancel(ctx), ct, ct.Cancel, url)
		switch {
		case r.CredentialError != nil:
			detail = r.CredentialError.Error()
		case r.Transport != "":
			detail = fmt.Sprintf("%s: %s", r.Transport, r.TransportDetail)
		default:
			ok = r.Status >= 200 && r.Status < 300
			detail = fmt.Sprintf("%s %s answered %d", ct.Cancel.Method, url, r.Status)
		}
	}
	now := c.clock.Now()
	next, events := policy.Cancelled(op, ok, detail, now)
	if err := c.save(ctx, next, nil, events, now); err != nil {
		return nil, err
	}
	return next, nil
}

// RequestExtension records an agent's request; it grants nothing.
func (c *Controller) RequestExtension(ctx context.Context, id string, actor pollwarden.Actor, p ExtensionRequest) (*pollwarden.Operation, error) {
	op, err := c.store.OperationGet(ctx, id)
	if err != nil {
		return nil, err
	}
	now := c.clock.Now()
	events := policy.RequestExtension(op, actor, p.ExtraTime, p.ExtraStatusRequests, p.Justification, now)
	if err := c.save(ctx, op, nil, events, now); err != nil {
		return nil, err
	}
	return op, nil
}

// ExtensionRequest is what an agent asks for; see RequestExtension.
type ExtensionRequest struct {
	ExtraTime           time.Duration
	ExtraStatusRequests int
	Justification       string
}

// actionURL fills {job_id} in an action URL, path-escaped like the status URL.
func actionURL(tmpl, jobID string) (string, error) {
	if strings.Contains(tmpl, "{job_id}") && jobID == "" {
		return "", errors.New("the cancel URL needs a job id and the operation has none")
	}
	return strings.ReplaceAll(tmpl, "{job_id}", url.PathEscape(jobID)), nil
}
