package recordjson

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/pollwarden/pollwarden"
)

// AppendOperation appends op as json.Marshal(op) encodes it, and fails
// where it fails (a time outside years 0–9999, a NaN, invalid raw JSON).
// The field order and omitempty rules are the struct tags' of
// pollwarden.Operation; TestAppendOperationIsJSONMarshal draws every
// field through reflection, so it fails when a field is added or changed
// there and not here.
func AppendOperation(b []byte, op *pollwarden.Operation) ([]byte, error) {
	var err error
	b = appendKey(b, `{"operation_id":`, op.ID)
	b = appendKey(b, `,"contract":`, op.Contract)
	b = appendKey(b, `,"provider_job_id":`, op.ProviderJobID)
	b = appendKey(b, `,"status_url":`, op.StatusURL)
	b = appendOmit(b, `,"credential_name":`, op.CredentialName)
	b = appendKey(b, `,"request_fingerprint":`, op.Fingerprint)
	b = appendOmit(b, `,"request_digest":`, op.RequestDigest)
	b = appendOmit(b, `,"owner":`, op.Owner)
	b = appendIntOmit(b, `,"priority":`, int64(op.Priority))
	if len(op.Vars) > 0 {
		b = appendMap(append(b, `,"vars":`...), op.Vars)
	}
	b = append(b, `,"expected_terminal_states":`...)
	if op.ExpectedTerminal == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, s := range op.ExpectedTerminal {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, s, true)
		}
		b = append(b, ']')
	}
	if b, err = appendTime(append(b, `,"started_at":`...), op.StartedAt); err != nil {
		return nil, err
	}
	if b, err = appendTime(append(b, `,"deadline_at":`...), op.DeadlineAt); err != nil {
		return nil, err
	}
	if b, err = appendTimePtr(b, `,"business_deadline_at":`, op.BusinessDeadlineAt); err != nil {
		return nil, err
	}
	if b, err = appendTimePtr(b, `,"provider_expires_at":`, op.ProviderExpiresAt); err != nil {
		return nil, err
	}
	b = strconv.AppendInt(append(b, `,"max_status_requests":`...), int64(op.MaxStatusRequests), 10)
	b = strconv.AppendInt(append(b, `,"max_transport_failures":`...), int64(op.MaxTransportFailures), 10)
	b = strconv.AppendInt(append(b, `,"max_rate_limited":`...), int64(op.MaxRateLimited), 10)
	b = strconv.AppendInt(append(b, `,"status_requests_used":`...), int64(op.StatusRequestsUsed), 10)
	b = strconv.AppendInt(append(b, `,"transport_failures_used":`...), int64(op.TransportFailuresUsed), 10)
	b = strconv.AppendInt(append(b, `,"rate_limited_used":`...), int64(op.RateLimitedUsed), 10)
	b = strconv.AppendInt(append(b, `,"completed_polls":`...), int64(op.CompletedPolls), 10)
	b = appendIntOmit(b, `,"approved_calls":`, int64(op.ApprovedCalls))
	b = appendIntOmit(b, `,"result_fetches_sent":`, int64(op.ResultFetchesSent))
	if b, err = appendTime(append(b, `,"next_poll_at":`...), op.NextPollAt); err != nil {
		return nil, err
	}
	b = appendKey(b, `,"next_poll_source":`, string(op.NextPollSource))
	if op.NextPollSpread {
		b = append(b, `,"next_poll_spread":true`...)
	}
	b = appendOmit(b, `,"held_by":`, op.HeldBy)
	if op.JitterFactor != 0 {
		if b, err = appendFloat(append(b, `,"jitter_factor":`...), op.JitterFactor); err != nil {
			return nil, err
		}
	}
	b = appendKey(b, `,"phase":`, string(op.Phase))
	b = appendOmit(b, `,"reason":`, string(op.Reason))
	b = appendOmit(b, `,"last_state":`, op.LastState)
	b = appendOmit(b, `,"last_provider_state":`, op.LastProviderState)
	b = appendOmit(b, `,"last_etag":`, op.LastETag)
	b = appendIntOmit(b, `,"last_http_status":`, int64(op.LastHTTP))
	if b, err = appendTimePtr(b, `,"last_http_at":`, op.LastHTTPAt); err != nil {
		return nil, err
	}
	b = appendOmit(b, `,"last_request_id":`, op.LastRequestID)
	if b, err = appendRaw(b, `,"result":`, op.Result); err != nil {
		return nil, err
	}
	if b, err = appendRaw(b, `,"provider_error":`, op.ProviderError); err != nil {
		return nil, err
	}
	if b, err = appendTimePtr(b, `,"finished_at":`, op.FinishedAt); err != nil {
		return nil, err
	}
	if op.Escalation != nil {
		if b, err = appendValue(b, `,"escalation":`, op.Escalation); err != nil {
			return nil, err
		}
	}
	b = appendIntOmit(b, `,"escalations":`, int64(op.Escalations))
	if op.LastDecision != nil {
		if b, err = appendValue(b, `,"last_decision":`, op.LastDecision); err != nil {
			return nil, err
		}
	}
	if op.RefusedCredential != nil {
		if b, err = appendValue(b, `,"refused_credential":`, op.RefusedCredential); err != nil {
			return nil, err
		}
	}
	if op.ExtensionAsked != nil {
		if b, err = appendValue(b, `,"extension_asked":`, op.ExtensionAsked); err != nil {
			return nil, err
		}
	}
	if op.Cancel != nil {
		if b, err = appendValue(b, `,"cancel":`, op.Cancel); err != nil {
			return nil, err
		}
	}
	if op.Submission != nil {
		if b, err = appendValue(b, `,"submission":`, op.Submission); err != nil {
			return nil, err
		}
	}
	if len(op.ContractDigest) > 0 {
		b = appendMap(append(b, `,"contract_digest":`...), op.ContractDigest)
	}
	if l := op.ContractLimits; l != nil {
		b = strconv.AppendInt(append(b, `,"contract_limits":{"deadline_ns":`...), int64(l.Deadline), 10)
		b = strconv.AppendInt(append(b, `,"max_status_requests":`...), int64(l.MaxStatusRequests), 10)
		b = strconv.AppendInt(append(b, `,"max_transport_failures":`...), int64(l.MaxTransportFailures), 10)
		b = strconv.AppendInt(append(b, `,"max_rate_limited":`...), int64(l.MaxRateLimited), 10)
		b = append(b, '}')
	}
	b = appendOmit(b, `,"contract_fingerprint":`, op.ContractFingerprint)
	b = strconv.AppendInt(append(b, `,"version":`...), op.Version, 10)
	return append(b, '}'), nil
}

// appendKey appends key (with its punctuation) and s, HTML-escaped as
// json.Marshal escapes it.
func appendKey(b []byte, key, s string) []byte {
	return appendString(append(b, key...), s, true)
}

// appendOmit is appendKey for an omitempty string: nothing when s is empty.
func appendOmit(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return appendKey(b, key, s)
}

func appendIntOmit(b []byte, key string, n int64) []byte {
	if n == 0 {
		return b
	}
	return strconv.AppendInt(append(b, key...), n, 10)
}

// appendTime is time.Time.MarshalJSON without its allocation.
func appendTime(b []byte, t time.Time) ([]byte, error) {
	b = append(b, '"')
	b, err := t.AppendText(b)
	if err != nil {
		return nil, err
	}
	return append(b, '"'), nil
}

func appendTimePtr(b []byte, key string, t *time.Time) ([]byte, error) {
	if t == nil {
		return b, nil
	}
	return appendTime(append(b, key...), *t)
}

// appendRaw appends an omitempty json.RawMessage as json.Marshal does:
// validated and compacted, with HTML characters escaped.
func appendRaw(b []byte, key string, raw json.RawMessage) ([]byte, error) {
	if len(raw) == 0 {
		return b, nil
	}
	return appendValue(b, key, raw)
}

// appendValue appends a rarely set field (a nested record, raw JSON)
// by json.Marshal: it encodes a value alike alone and inside the record.
func appendValue(b []byte, key string, v any) ([]byte, error) {
	out, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(append(b, key...), out...), nil
}

// appendMap appends a map as json.Marshal does: keys in byte order.
func appendMap(b []byte, m map[string]string) []byte {
	var small [16]string
	keys := small[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k, true)
		b = appendString(append(b, ':'), m[k], true)
	}
	return append(b, '}')
}

// appendFloat is encoding/json's float64 encoder: ES6 number form.
func appendFloat(b []byte, f float64) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, &json.UnsupportedValueError{Str: strconv.FormatFloat(f, 'g', -1, 64)}
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}

// asciiSafe says, for each byte, how appendString writes it: 2 as itself,
// 1 as itself unless HTML is escaped (<, >, &), 0 otherwise (a control
// byte, '"', '\\', or the start of a multi-byte character). A constant,
// so that the common byte costs one load.
const asciiSafe = "" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x02\x02\x00\x02\x02\x02\x01\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x01\x02\x01\x02" +
	"\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x00\x02\x02\x02" +
	"\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"

const hexDigits = "0123456789abcdef"

// appendString is encoding/json's string encoder. With escapeHTML false
// (audit payloads) <, > and & stay as they are; U+2028 and U+2029 are
// escaped either way, and invalid UTF-8 becomes \ufffd.
func appendString(b []byte, s string, escapeHTML bool) []byte {
	return appendStringBad(b, s, escapeHTML, `\ufffd`)
}

// appendStringBad is appendString writing bad for each invalid byte.
func appendStringBad(b []byte, s string, escapeHTML bool, bad string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if k := asciiSafe[c]; k == 2 || k == 1 && !escapeHTML {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, bad...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// AppendCanonicalString appends s as the audit's canonical JSON writes a
// string (audit.Payload: encoded, decoded and encoded again without HTML
// escaping): <, > and & as they are, U+2028 and U+2029 escaped, each
// invalid byte as U+FFFD itself.
func AppendCanonicalString(b []byte, s string) []byte {
	return appendStringBad(b, s, false, "\uFFFD")
}
