package console

import (
	"context"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
)

// contractOf is the contract op runs under, as its store keeps it, so
// the page shows what that contract documents whatever file of its name
// the daemon loaded.
func (c *Console) contractOf(op *pollwarden.Operation) (*contract.Loaded, bool) {
	ex, err := c.ops.ContractOf(context.Background(), op)
	return ex, err == nil
}
