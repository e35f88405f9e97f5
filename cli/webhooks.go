package cli

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/metrics"
	"github.com/pollwarden/pollwarden/prober"
	"github.com/pollwarden/pollwarden/webhook"
)

// loadWebhooks reads the --webhooks file and refuses to start when an
// endpoint's signing secret cannot be resolved or is not a Standard
// Webhooks key, naming the endpoint and the reference, never a value. The
// secrets are resolved again at every attempt, so a rotated one is used
// without a restart.
func (env Env) loadWebhooks(path string) (*webhook.Config, error) {
	cfg, err := webhook.Load(path)
	if err != nil {
		return nil, fmt.Errorf("--webhooks: %w", err)
	}
	for _, e := range cfg.Endpoints {
		if err := webhook.CheckSecrets(e, env.resolveSecret); err != nil {
			return nil, fmt.Errorf("--webhooks: %s: endpoint %s: %w", path, e.Name, err)
		}
	}
	return cfg, nil
}

func (env Env) resolveSecret(ref string) (string, error) {
	return prober.ResolveSecret(ref, env.Getenv, os.ReadFile)
}

// newDispatcher wires the webhook dispatcher of one serve process on the
// daemon's registry; its claim owner is unique to the process.
func (env Env) newDispatcher(st pollwarden.Store, cfg *webhook.Config, reg prometheus.Registerer, log *slog.Logger) (*webhook.Dispatcher, error) {
	ob, ok := st.(pollwarden.Outbox)
	if !ok {
		return nil, usage(fmt.Errorf("--webhooks: this store (%T) keeps no webhook outbox", st))
	}
	if w := unlinkedReceivers(cfg); w != "" {
		log.Warn(w)
	}
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	return webhook.New(webhook.Options{Store: st, Outbox: ob, Config: cfg,
		Owner: fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b[:])),
		Clock: env.clock(), Rand: newRand(), Resolve: env.resolveSecret,
		Logger: log.With("component", "webhooks"), Observer: metrics.NewWebhooks(reg)})
}

// unlinkedReceivers warns when decision requests for people (Slack,
// e-mail) would carry no link to the console, so a person could not go
// from the message to the decision without a terminal; "" when fine.
func unlinkedReceivers(cfg *webhook.Config) string {
	if cfg.ConsoleURL != "" {
		return ""
	}
	var names []string
	for _, e := range cfg.Endpoints {
		if e.Format == webhook.FormatSlack || e.Format == webhook.FormatEmail {
			names = append(names, e.Name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return fmt.Sprintf("webhooks %s get decision requests without a link to the console: set console_url in the webhooks file to the address people open this daemon at",
		strings.Join(names, ", "))
}
