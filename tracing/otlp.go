package tracing

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// exporter sends spans to an OTLP/HTTP collector as protobuf, the
// encoding and path the OpenTelemetry exporter uses, without that
// exporter's dependencies (its generated collector package imports gRPC
// and genproto, which pollwarden never runs). See docs/BENCHMARKS.md.
type exporter struct {
	url     string
	cfg     exportConfig
	client  *http.Client
	stopped atomic.Bool
}

// maxAttempts bounds the sends of one batch: a collector that answers
// 429, 502, 503 or 504 (OTLP's retryable answers) is asked again, after
// its Retry-After or a short backoff, within the caller's deadline.
const maxAttempts = 3

func newExporter(url string, cfg exportConfig) *exporter {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = cfg.tls
	return &exporter{url: url, cfg: cfg, client: &http.Client{Transport: tr, Timeout: cfg.timeout}}
}

// ExportSpans posts one batch; an error is handed to OpenTelemetry's
// error handler by the batch processor, never to an operation.
func (e *exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if e.stopped.Load() || len(spans) == 0 {
		return nil
	}
	body, err := encodeRequest(spans)
	if err != nil {
		return fmt.Errorf("OTLP: encoding %d spans: %w", len(spans), err)
	}
	if e.cfg.gzip {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		_, _ = zw.Write(body)
		_ = zw.Close()
		body = b.Bytes()
	}
	wait := 500 * time.Millisecond
	for attempt := 1; ; attempt++ {
		retry, after, err := e.send(ctx, body)
		if err == nil || !retry || attempt == maxAttempts {
			return err
		}
		if after > 0 {
			wait = after
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// send posts body once: whether to retry, after how long the collector
// asked, and the error.
func (e *exporter) send(ctx context.Context, body []byte) (bool, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return false, 0, err
	}
	for k, v := range e.cfg.headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	if e.cfg.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return true, 0, fmt.Errorf("OTLP export to %s: %w", e.url, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		return false, 0, nil
	}
	var after time.Duration
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
		after = time.Duration(min(s, 30)) * time.Second
	}
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true, after, fmt.Errorf("OTLP export to %s: %s", e.url, resp.Status)
	}
	return false, 0, fmt.Errorf("OTLP export to %s: %s", e.url, resp.Status)
}

// Shutdown stops sending: the batch processor has flushed before it
// calls it.
func (e *exporter) Shutdown(context.Context) error {
	e.stopped.Store(true)
	e.client.CloseIdleConnections()
	return nil
}
