package cli

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/pollwarden/pollwarden/audit"
	"github.com/pollwarden/pollwarden/operations"
	"github.com/spf13/cobra"
)

func auditVerifyCmd(env Env, storeFlag func(*cobra.Command, *string)) *cobra.Command {
	var store, head, pubFile string
	var anchors []string
	cmd := &cobra.Command{
		Use:   "verify [--head HASH] [--anchor FILE]...",
		Short: "Check the store's whole hash chain offline; exit 1 naming the first bad event",
		Long: `verify walks every event of the store in chain order, in bounded memory,
and checks that positions follow each other, each event points at the one
before it, and each hash matches its content. It needs no key, even for a
sealed store. It detects an edited, deleted, inserted or reordered event.

Events cut from the END leave an intact, shorter chain. To detect that, give
a head written down earlier (--head, from 'pollwarden audit head'), or an
anchor signed earlier ('pollwarden audit anchor'), which also detects a store
file rolled back to an older copy or rewritten with recomputed hashes. Pin
the anchor's signer with --public-key (the .pub file keygen wrote).

Exit codes: 0 intact · 1 the chain is broken (the first bad event is named:
operation, seq, pos, and why) or an anchor's signature is invalid ·
2 usage error, or a store or anchor file that cannot be read.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var trusted ed25519.PublicKey
			if pubFile != "" {
				k, err := audit.LoadPublicKey(pubFile)
				if err != nil {
					return usage(fmt.Errorf("--public-key: %w", err))
				}
				trusted = k
			}
			v := &audit.Verifier{Head: head}
			var loaded []audit.Anchor
			for _, path := range anchors {
				an, err := audit.LoadAnchor(path)
				if err != nil {
					return usage(fmt.Errorf("--anchor: %w", err))
				}
				if err := an.Check(trusted); err != nil {
					return &exitError{code: ExitInternal, err: fmt.Errorf("anchor %s: %w", path, err)}
				}
				loaded = append(loaded, an)
				v.Checkpoints = append(v.Checkpoints, an.Checkpoint())
			}
			st, err := env.openStore(cmd.Context(), store)
			if err != nil {
				return err
			}
			defer st.Close()
			if err := operations.NewReader(st).VerifyAudit(cmd.Context(), env.localCaller(), v); err != nil {
				var ce *audit.ChainError
				if errors.As(err, &ce) {
					fmt.Fprintf(env.Stdout, "BROKEN: %d events verified before the first bad event\n", max(ce.Pos-1, 0))
					return &exitError{code: ExitInternal, err: err}
				}
				return err
			}
			if pc, ok := st.(audit.PrunedChecker); ok && v.Pruned() > 0 {
				ce, err := pc.PrunedMisplaced(cmd.Context())
				if err != nil {
					return err
				}
				if ce != nil {
					fmt.Fprintf(env.Stdout, "BROKEN: the chain links, but an event is marked pruned where no prune puts it\n")
					return &exitError{code: ExitInternal, err: ce}
				}
			}
			pruned := ""
			if v.Pruned() > 0 {
				pruned = fmt.Sprintf(" (%d pruned: payload dropped, hash kept)", v.Pruned())
			}
			fmt.Fprintf(env.Stdout, "ok: %d operations, %d events%s, the chain is intact; head %s at pos %d\n",
				v.Operations(), v.Pos(), pruned, v.Hash(), v.Pos())
			if head != "" {
				fmt.Fprintf(env.Stdout, "ok: the known head is the event at pos %d\n", v.HeadPos())
			}
			for i, an := range loaded {
				pub, _ := decodeKey(an.PublicKey)
				fmt.Fprintf(env.Stdout, "ok: anchor %s (pos %d, %s, signed by key %s) matches\n",
					anchors[i], an.Pos, an.At.Format(time.RFC3339), audit.KeyFingerprint(pub))
			}
			if len(loaded) > 0 && trusted == nil {
				fmt.Fprintln(env.Stdout, "note: anchors were checked against the keys they carry; pin the signer with --public-key")
			}
			return nil
		},
	}
	storeFlag(cmd, &store)
	cmd.Flags().StringVar(&head, "head", "", "a head hash recorded earlier (pollwarden audit head): fail if no event has it")
	cmd.Flags().StringArrayVar(&anchors, "anchor", nil, "an anchor file (pollwarden audit anchor): fail if the store disagrees with it (repeatable)")
	cmd.Flags().StringVar(&pubFile, "public-key", "", "the anchors' signer: a public key file written by 'audit keygen --kind anchor'")
	return cmd
}

func auditHeadCmd(env Env, storeFlag func(*cobra.Command, *string)) *cobra.Command {
	var store string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "head",
		Short: "Print the hash of the last event (an empty line for an empty store)",
		Long: `head prints the hash of the last event in the store's chain. Write it down
somewhere the store's writers cannot change (a ticket, a log shipped away);
'pollwarden audit verify --head HASH' later fails if that event is gone.
--json prints {"pos":N,"hash":"…"}. head does not verify the chain.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := env.openStore(cmd.Context(), store)
			if err != nil {
				return err
			}
			defer st.Close()
			pos, hash, err := operations.NewReader(st).AuditHead(cmd.Context(), env.localCaller())
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(env.Stdout, struct {
					Pos  int64  `json:"pos"`
					Hash string `json:"hash"`
				}{pos, hash})
			}
			fmt.Fprintln(env.Stdout, hash)
			return nil
		},
	}
	storeFlag(cmd, &store)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the position and hash as JSON")
	return cmd
}

func auditAnchorCmd(env Env, storeFlag func(*cobra.Command, *string)) *cobra.Command {
	var store, keyFile, out string
	cmd := &cobra.Command{
		Use:   "anchor --key FILE [--out FILE]",
		Short: "Verify the chain and write a signed checkpoint of its head",
		Long: `anchor verifies the whole chain, then signs "the event at pos N has hash H"
with an ed25519 key (audit keygen --kind anchor) and writes it as JSON:
{version, pos, head, at, public_key, signature}. Keep anchors where the
store's writers cannot reach them; 'pollwarden audit verify --anchor FILE'
then detects a cut tail, a rollback to an older copy of the store, or a chain
rewritten with recomputed hashes. A broken chain is not anchored (exit 1).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if keyFile == "" {
				return usage(errors.New("--key is required: the anchor signing key (pollwarden audit keygen --kind anchor)"))
			}
			key, err := audit.LoadAnchorKey(keyFile)
			if err != nil {
				return usage(fmt.Errorf("--key: %w", err))
			}
			st, err := env.openStore(cmd.Context(), store)
			if err != nil {
				return err
			}
			defer st.Close()
			var v audit.Verifier
			if err := operations.NewReader(st).VerifyAudit(cmd.Context(), env.localCaller(), &v); err != nil {
				var ce *audit.ChainError
				if errors.As(err, &ce) {
					return &exitError{code: ExitInternal, err: fmt.Errorf("not anchoring a broken chain: %w", err)}
				}
				return err
			}
			if v.Pos() == 0 {
				return usage(errors.New("the store holds no events; there is nothing to anchor"))
			}
			an := audit.SignAnchor(key, v.Pos(), v.Hash(), env.clock().Now())
			b, err := json.MarshalIndent(an, "", "  ")
			if err != nil {
				return err
			}
			b = append(b, '\n')
			if out == "" {
				_, err := env.Stdout.Write(b)
				return err
			}
			if err := os.WriteFile(out, b, 0o644); err != nil {
				return usage(fmt.Errorf("--out: %w", err))
			}
			fmt.Fprintf(env.Stdout, "anchored pos %d, head %s, in %s\n", an.Pos, an.Head, out)
			return nil
		},
	}
	storeFlag(cmd, &store)
	cmd.Flags().StringVar(&keyFile, "key", "", "ed25519 private key file (PKCS#8 PEM, from 'audit keygen --kind anchor')")
	cmd.Flags().StringVar(&out, "out", "", "write the anchor to this file instead of stdout")
	return cmd
}

func auditKeygenCmd(env Env) *cobra.Command {
	var kind, out string
	cmd := &cobra.Command{
		Use:   "keygen --kind anchor|seal --out FILE",
		Short: "Create an anchor signing key or a payload sealing key",
		Long: `keygen writes a new key to --out with mode 0600, refusing to overwrite a file.

--kind anchor: an ed25519 private key (PKCS#8 PEM, readable by openssl) for
'audit anchor --key', and FILE.pub, the base64 public key for
'audit verify --public-key'.

--kind seal: a 32-byte XChaCha20-Poly1305 key (PEM) for --audit-key or
$POLLWARDEN_AUDIT_KEY_FILE. A store started with it seals every event
payload; lose the key and those payloads cannot be read (the chain still
verifies).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return usage(errors.New("--out is required"))
			}
			switch kind {
			case "anchor":
				if _, err := os.Lstat(out + ".pub"); err == nil {
					return usage(fmt.Errorf("--out: %s.pub already exists", out))
				}
				body, pub := audit.GenerateAnchorKey()
				if err := writeNew(out, body, 0o600); err != nil {
					return err
				}
				pubText := []byte(encodeKey(pub) + "\n")
				if err := writeNew(out+".pub", pubText, 0o644); err != nil {
					return err
				}
				fmt.Fprintf(env.Stdout, "wrote anchor signing key %s (keep it secret) and public key %s.pub (fingerprint %s)\n",
					out, out, audit.KeyFingerprint(pub))
			case "seal":
				body := audit.GenerateSealKeyPEM()
				k, err := audit.ParseSealKey(body)
				if err != nil {
					return err
				}
				if err := writeNew(out, body, 0o600); err != nil {
					return err
				}
				fmt.Fprintf(env.Stdout, "wrote sealing key %s (key id %s); keep a copy: sealed payloads cannot be read without it\n", out, k.KeyID())
			default:
				return usage(fmt.Errorf("--kind %q: want anchor or seal", kind))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&kind, "kind", "", "anchor (ed25519 signing key) or seal (payload encryption key)")
	cmd.Flags().StringVar(&out, "out", "", "the key file to create")
	return cmd
}

// writeNew creates path with perm, refusing to replace an existing file.
func writeNew(path string, body []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return usage(fmt.Errorf("--out: %w", err))
	}
	if _, err := f.Write(body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func encodeKey(pub ed25519.PublicKey) string { return base64.StdEncoding.EncodeToString(pub) }

func decodeKey(s string) ([]byte, error) { return base64.StdEncoding.DecodeString(s) }
