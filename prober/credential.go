package prober

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/pollwarden/pollwarden"
)

// resolve reads the secret behind ref at request time, so a rotated secret
// is picked up without a restart and nothing but the reference is ever
// stored. Errors name the reference, never a value: a malformed reference
// is not echoed at all, since a user may have pasted the secret itself.
func (p *Prober) resolve(ref string) (string, error) {
	return ResolveSecret(ref, p.getenv, p.readFile)
}

// ResolveSecret reads the secret behind an env:NAME or file:PATH
// reference, the one syntax for secrets in contracts and the webhooks file;
// errors name the reference, never a value.
func ResolveSecret(ref string, getenv func(string) (string, bool), readFile func(string) ([]byte, error)) (string, error) {
	kind, name, _ := strings.Cut(ref, ":")
	var secret string
	switch {
	case kind == "env" && name != "":
		v, ok := getenv(name)
		if !ok {
			return "", fmt.Errorf("credential %s is not set", ref)
		}
		secret = v
	case kind == "file" && name != "":
		b, err := readFile(name)
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err // the path is already in the message
			}
			return "", fmt.Errorf("credential %s cannot be read: %w", ref, err)
		}
		secret = strings.TrimRight(string(b), "\r\n")
	default:
		return "", errors.New("credential reference is neither env:NAME nor file:PATH")
	}
	if secret == "" {
		return "", fmt.Errorf("credential %s is empty", ref)
	}
	for _, r := range secret {
		if (r < 0x20 && r != '\t') || r == 0x7f {
			return "", fmt.Errorf("credential %s holds a control character or line break", ref)
		}
	}
	return secret, nil
}

// MinSecretLen is the length under which a secret earns a warning: the
// secret is removed from every string a provider sends, and a short one
// occurs by chance in ordinary words.
const MinSecretLen = 16

// ShortSecretWarning says, when c's credential resolves to a secret
// shorter than MinSecretLen, what that costs; "" otherwise, or when it
// cannot be resolved here (that is reported elsewhere). It never gives the
// length or any character of the secret.
func ShortSecretWarning(c *pollwarden.ContractSpec, getenv func(string) (string, bool), readFile func(string) ([]byte, error)) string {
	cred := c.Status.Credential
	if cred == nil {
		return ""
	}
	s, err := ResolveSecret(cred.Ref, getenv, readFile)
	if err != nil || len(s) >= MinSecretLen {
		return ""
	}
	return fmt.Sprintf("contract %s: credential %s is shorter than %d characters; it is redacted wherever it occurs in what the provider sends, "+
		"so it may blank out ordinary words in errors and results (a state the contract lists is kept as it is)", c.Name, cred.Ref, MinSecretLen)
}
