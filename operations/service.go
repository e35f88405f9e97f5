package operations

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/changes"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/controller"
	"github.com/pollwarden/pollwarden/policy"
	"github.com/pollwarden/pollwarden/prober"
	"github.com/pollwarden/pollwarden/tokens"
)

// Contracts finds a loaded contract by name; *contract.Set is one, and a
// door that was handed one file (the CLI's --contract FILE) makes another.
type Contracts interface {
	Get(name string) (*contract.Loaded, bool)
	Names() []string
}

// Options configures a Service. Controller and Contracts are required.
type Options struct {
	Controller *controller.Controller
	Contracts  Contracts
	// Clock resolves relative deadlines ("30m") and stamps the operations
	// a create builds; default the controller's.
	Clock pollwarden.Clock
	// CredentialAvailable, when set, refuses a create whose contract's
	// credential cannot be found where this process runs, naming the
	// reference and never a value; Hint is added to its message (where to
	// set it).
	CredentialAvailable func(*pollwarden.ContractSpec) error
	CredentialHint      string
	// Changes wakes Wait at once when an operation changes; without it
	// Wait sees changes on its periodic re-read of the store, every
	// Recheck (default 1 s).
	Changes *changes.Feed
	Recheck time.Duration
	// CallbackSecret resolves a contract's callback secret reference
	// (env:NAME, file:PATH) for each provider callback; default the
	// process's environment and files, as the prober reads credentials.
	CallbackSecret func(ref string) (string, error)
	// Logger receives what a caller must not be told (a callback secret
	// the process cannot read); default slog.Default().
	Logger *slog.Logger
	// Getenv and ReadFile read credentials where this process runs, to
	// judge retry_credential (default os.LookupEnv, os.ReadFile).
	Getenv   func(string) (string, bool)
	ReadFile func(string) ([]byte, error)
	// FirstSteps, when set, runs the first step of an operation created
	// due at once, claimed in the create's own write (createFirst); the
	// scheduler is one. Without it the scheduler is told of the new
	// record (the controller's OnChange) and steps it after its own claim.
	FirstSteps FirstSteps
}

// FirstSteps runs creates' first steps within a concurrency limit
// (scheduler.Scheduler): Reserve holds a slot for operation id (false
// when none may be held: the create then takes the old path), Start runs
// the step in it and frees it once the step ends, Cancel frees it unused.
type FirstSteps interface {
	Reserve(ex *contract.Loaded, id string) bool
	Start(op *pollwarden.Operation, step func(context.Context) (controller.StepResult, error))
	Cancel(id string)
}

// Service runs the use cases over one controller and its store; its
// reads are the Reader's.
type Service struct {
	*Reader
	o   Options
	ctl *controller.Controller
	// digests holds each loaded contract's section digests, by its
	// *Contract (a reload brings new ones): computing them encodes every
	// section, more CPU than the rest of a create's checks.
	digests sync.Map
}

// New checks opts and returns a Service.
func New(o Options) *Service {
	if o.Controller == nil || o.Contracts == nil {
		panic("operations.New: Controller and Contracts are required")
	}
	if o.Clock == nil {
		// The controller's: the operations a create builds are stamped
		// with the clock it saves them by.
		o.Clock = o.Controller.Clock()
	}
	if o.Changes == nil {
		o.Changes = changes.NewFeed()
	}
	if o.Recheck <= 0 {
		o.Recheck = time.Second
	}
	if o.CallbackSecret == nil {
		o.CallbackSecret = func(ref string) (string, error) { return prober.ResolveSecret(ref, os.LookupEnv, os.ReadFile) }
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	r := NewReader(o.Controller.Store())
	if o.Getenv != nil {
		r.getenv = o.Getenv
	}
	if o.ReadFile != nil {
		r.readFile = o.ReadFile
	}
	return &Service{Reader: r, o: o, ctl: o.Controller}
}

// contractDigest is policy.ContractDigest(ct), computed once per loaded
// contract; callers must not change the map.
func (s *Service) contractDigest(ct *pollwarden.ContractSpec) map[string]string {
	if d, ok := s.digests.Load(ct); ok {
		return d.(map[string]string)
	}
	d, _ := s.digests.LoadOrStore(ct, policy.ContractDigest(ct))
	return d.(map[string]string)
}

// Caller is who asks, as the door authenticated it.
type Caller struct {
	// Caller is the token's holder: its name and role (named in the audit
	// and as the owner of what it creates) and what it sees.
	tokens.Caller
	// Local marks a process whose authority is the store file itself (the
	// CLI, the stdio MCP server): it sees every operation, its derived ids
	// name no owner, and Owner is recorded as the creator.
	Local bool
	Owner string
	// Tool marks a request through an agent's tool (MCP): it never widens
	// authority, whatever the token's role.
	Tool bool
}

// sees reports whether c may read op and act on it.
func (c Caller) sees(op *pollwarden.Operation) bool {
	return c.Local || c.Caller.Sees(op)
}

// owner is recorded as the Owner of the operations c creates.
func (c Caller) owner() string {
	if c.Local {
		return c.Owner
	}
	return c.Name
}

// derivedOwner is the owner part of an id derived for c
// (pollwarden.DerivedOperationID): "" for a local process, so the CLI and
// the stdio MCP server resume each other's operations; a token's name
// otherwise, so two agents on one provider job each get their own.
func (c Caller) derivedOwner() string {
	if c.Local {
		return ""
	}
	return c.Name
}

// by is who the audit names as the creator: a token's holder; nobody for
// a local process, whose owner says enough.
func (c Caller) by() *pollwarden.Actor {
	if c.Local {
		return nil
	}
	a := c.Actor
	return &a
}

// mayRaise: only an approver, through a door that grants authority, may
// create an operation with limits above the contract's.
func (c Caller) mayRaise() bool {
	return c.May(ActionRaise, nil, "") == nil
}

// listOwner is the list filter for c; ok is false when c may list nothing.
func (c Caller) listOwner() (string, bool) {
	if c.Local {
		return "", true
	}
	return c.Caller.ListOwner()
}

// visible reads operation id for c: one c may not see is not found, in
// the same words as one that does not exist.
func (s *Reader) visible(ctx context.Context, c Caller, id string) (*pollwarden.Operation, error) {
	if id == "" {
		return nil, refuse(Invalid, "operation_id", "operation_id is required")
	}
	op, err := s.store.OperationGet(ctx, id)
	if err != nil {
		return nil, writeProblem(err, id)
	}
	if !c.sees(op) {
		return nil, notFound(id)
	}
	return op, nil
}

// Only is the Contracts of a door handed one contract (the CLI's
// --contract FILE|NAME): it answers ex for every name, so a decision on an
// operation made under a contract of another name or content reaches the
// controller, which refuses it naming what differs.
func Only(ex *contract.Loaded) Contracts { return only{ex} }

type only struct{ ex *contract.Loaded }

func (o only) Get(string) (*contract.Loaded, bool) { return o.ex, true }
func (o only) Names() []string                     { return []string{o.ex.Spec().Name} }
