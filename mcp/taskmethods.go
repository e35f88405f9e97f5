package mcp

import (
	"context"
	"encoding/json"
	"errors"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/internal/display"
	"github.com/pollwarden/pollwarden/mcptask"
	"github.com/pollwarden/pollwarden/operations"
)

// The tasks/* methods, answered from the store.

// task reads the operation behind a task id, from the store only. Over
// the daemon's /mcp a task is bound to the token that may see its
// operation: another agent's task answers as one that does not exist.
func (s *server) task(ctx context.Context, id string) (*pollwarden.Operation, error) {
	if id == "" {
		return nil, rpcError(mcptask.CodeInvalidParams, "taskId is required: the operation_id the task was created for")
	}
	op, err := s.visible(ctx, id)
	if errors.Is(err, pollwarden.ErrNotFound) {
		return nil, rpcError(mcptask.CodeInvalidParams, "Failed to retrieve task: no task %s (task ids are operation ids; list_jobs lists them)", display.Clip(id))
	}
	if err != nil {
		return nil, internal(err)
	}
	return op, nil
}

// tasksGet answers tasks/get from the record alone: it never sends a
// provider request, however often a host asks.
func (s *server) tasksGet(ctx context.Context, ss *sdk.ServerSession, p *taskParams) (*wire, error) {
	op, err := s.task(ctx, p.id())
	if err != nil {
		return nil, err
	}
	now := s.ops.Clock().Now()
	if shapeOf(p, ss) == coreTask {
		return &wire{v: coreTaskOf(op, now)}, nil
	}
	d := mcptask.DetailedTaskV2{ResultType: mcptask.ResultTypeComplete, TaskV2: taskV2(op, now)}
	if d.Status == mcptask.Completed {
		r, err := extResult(s.toolResult(op))
		if err != nil {
			return nil, internal(err)
		}
		if d.Result, err = json.Marshal(r); err != nil {
			return nil, internal(err)
		}
	}
	return &wire{v: d}, nil
}

// tasksResult (2025-11-25) holds while the task is working, then returns
// the tool's answer. At input_required it answers at once: pollwarden
// queues no request for the client, and the answer says a person must
// decide.
func (s *server) tasksResult(ctx context.Context, _ *sdk.ServerSession, p *taskParams) (*wire, error) {
	op, err := s.task(ctx, p.id())
	if err != nil {
		return nil, err
	}
	for op.Phase == pollwarden.PhaseWaiting {
		op, err = s.ops.Wait(ctx, operations.WaitParams{Caller: s.who(ctx), ID: op.ID, For: MaxWait})
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, internal(err)
		}
	}
	res := s.toolResult(op)
	res.Meta = sdk.Meta{mcptask.MetaRelatedTask: map[string]string{"taskId": op.ID}}
	return &wire{v: res}, nil
}

// tasksList (2025-11-25) lists the newest operations as tasks.
func (s *server) tasksList(ctx context.Context, _ *sdk.ServerSession, p *listTasksParams) (*wire, error) {
	if p != nil && p.Cursor != "" {
		return nil, rpcError(mcptask.CodeInvalidParams, "invalid cursor: tasks/list answers in one page")
	}
	list, err := s.ops.List(ctx, operations.ListParams{Caller: s.who(ctx)})
	if err != nil {
		return nil, internal(err)
	}
	now := s.ops.Clock().Now()
	out := mcptask.ListTasksResult{Tasks: make([]mcptask.Task, 0, len(list))}
	for _, op := range list {
		out.Tasks = append(out.Tasks, coreTaskOf(op, now))
	}
	return &wire{v: out}, nil
}

// tasksCancel abandons the wait: pollwarden stops watching, recorded as
// the agent's decision. It narrows the agent's own authority and never
// cancels the job at the provider.
func (s *server) tasksCancel(ctx context.Context, ss *sdk.ServerSession, p *taskParams) (*wire, error) {
	op, err := s.task(ctx, p.id())
	if err != nil {
		return nil, err
	}
	if st := taskStatus(op); st.Terminal() {
		return nil, rpcError(mcptask.CodeInvalidParams, "task %s is already %s (its operation is %s) and cannot be cancelled", op.ID, st, op.Phase)
	}
	op, err = s.abandonWait(ctx, op)
	if err != nil {
		return nil, err
	}
	if shapeOf(p, ss) == extTask {
		return &wire{v: map[string]string{"resultType": mcptask.ResultTypeComplete}}, nil
	}
	return &wire{v: coreTaskOf(op, s.ops.Clock().Now())}, nil
}

// abandonWait is the one place a task's cancel reaches the controller: an
// agent's abandon (it grants nothing), allowed on a waiting operation as
// on an escalated one, for the operation's owner.
func (s *server) abandonWait(ctx context.Context, op *pollwarden.Operation) (*pollwarden.Operation, error) {
	next, err := s.ops.Abandon(ctx, operations.DecisionParams{Caller: s.who(ctx), ID: op.ID,
		Note: "the MCP task was cancelled by the client: stop watching; nothing is cancelled at the provider"})
	if p, ok := operations.AsProblems(err); ok {
		return nil, rpcError(mcptask.CodeInvalidParams, "%s", p.Error())
	} else if err != nil {
		return nil, internal(err)
	}
	return next, nil
}

// tasksUpdate (extension) is refused: pollwarden asks nothing of the
// agent, and a decision is a person's, through an approver's door.
func (s *server) tasksUpdate(ctx context.Context, _ *sdk.ServerSession, p *updateTaskParams) (*wire, error) {
	id := ""
	if p != nil {
		id = p.TaskID
	}
	op, err := s.task(ctx, id)
	if err != nil {
		return nil, err
	}
	return nil, rpcError(mcptask.CodeInvalidParams, "task %s asks for no input: a person decides an escalation with `pollwarden decide %s OPTION` or the daemon's API, never through the task", op.ID, op.ID)
}
