package prober

import "context"

type ifNoneMatchKey struct{}

// WithIfNoneMatch carries the last ETag of one operation to its status
// request: sent as If-None-Match when the contract asks for conditional
// requests (status.conditional: etag), and only on that request.
func WithIfNoneMatch(ctx context.Context, etag string) context.Context {
	if etag == "" {
		return ctx
	}
	return context.WithValue(ctx, ifNoneMatchKey{}, etag)
}

func ifNoneMatch(ctx context.Context) string {
	s, _ := ctx.Value(ifNoneMatchKey{}).(string)
	return s
}
