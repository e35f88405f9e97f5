package contract

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/pollwarden/pollwarden"
)

// callback decodes the callback block: how the provider's completion
// webhook is verified, and where its job id is. The secret reference is
// checked like a credential's and never echoed.
func (d *decoder) callback(o *object) *pollwarden.CallbackSpec {
	if !o.present {
		return nil
	}
	cb := &pollwarden.CallbackSpec{}
	if v, line, ok := o.str("verify", true); ok {
		switch pollwarden.CallbackVerify(v) {
		case pollwarden.CallbackStandardWebhooks, pollwarden.CallbackGitHub:
			cb.Verify = pollwarden.CallbackVerify(v)
		default:
			d.addf(line, o.child("verify"), "must be standard-webhooks or github, got %s", clip(v))
		}
	}
	if ref, line, ok := o.str("secret", true); ok {
		if msg := checkRef(ref); msg != "" {
			d.addf(line, o.child("secret"), "%s (value not shown)", msg)
		} else {
			cb.SecretRef = ref
		}
	}
	if p, line, ok := o.str("job_id_path", true); ok {
		d.checkPath(line, o.child("job_id_path"), p)
		cb.JobIDPath = p
	}
	cb.EventFilter = d.optPath(o, "event_filter")
	return cb
}

// CallbackJob reads a verified callback's payload: the provider job id at
// the contract's job_id_path, and whether the event passes event_filter
// (true without one). Nothing else in the payload is read: the status
// request stays the only source of the job's state.
func CallbackJob(cb *pollwarden.CallbackSpec, body []byte) (jobID string, wanted bool, err error) {
	var doc any
	if err := json.Unmarshal(body, &doc); err != nil {
		return "", false, errors.New("the callback body is not JSON")
	}
	if cb.EventFilter != "" {
		v, err := searchExpr(cb.EventFilter, doc)
		if err != nil {
			return "", false, err
		}
		if b, ok := v.(bool); !ok || !b {
			return "", false, nil
		}
	}
	v, err := searchExpr(cb.JobIDPath, doc)
	if err != nil {
		return "", false, err
	}
	switch id := v.(type) {
	case string:
		if id == "" {
			return "", false, errors.New("job_id_path gives an empty string")
		}
		return id, true, nil
	case float64:
		return strconv.FormatFloat(id, 'f', -1, 64), true, nil
	case nil:
		return "", false, errors.New("job_id_path finds nothing in the callback body")
	default:
		return "", false, fmt.Errorf("job_id_path gives a %T, not a job id", v)
	}
}

// searchExpr evaluates a JMESPath expression the parser has already
// checked.
func searchExpr(expr string, doc any) (any, error) {
	jp, err := compileExpr(expr)
	if err != nil {
		return nil, err
	}
	return search(jp, doc)
}
