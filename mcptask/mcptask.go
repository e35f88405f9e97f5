// Package mcptask holds the wire types of MCP tasks, which the Go SDK
// (v1.8.0) does not have yet: the 2025-11-25 experimental tasks (SEP-1686)
// and the io.modelcontextprotocol/tasks extension (SEP-2663), in the shape
// of @modelcontextprotocol/ext-tasks 0.2.2. It holds types and names only,
// so that it can be replaced by the SDK's own once it has them.
package mcptask

import "encoding/json"

// Method names. Update exists only in the extension; Result and List only
// in 2025-11-25.
const (
	MethodGet    = "tasks/get"
	MethodResult = "tasks/result"
	MethodList   = "tasks/list"
	MethodCancel = "tasks/cancel"
	MethodUpdate = "tasks/update"
)

// Meta keys and the extension's identifier.
const (
	// ExtensionID names the tasks extension in capabilities.extensions.
	ExtensionID = "io.modelcontextprotocol/tasks"
	// MetaClientCapabilities carries a request's client capabilities
	// (2026-07-28 per-request framing).
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	// MetaRelatedTask ties a message to a task (2025-11-25).
	MetaRelatedTask = "io.modelcontextprotocol/related-task"
)

// Status is a task's status, the same in both shapes.
type Status string

const (
	Working       Status = "working"
	InputRequired Status = "input_required"
	Completed     Status = "completed"
	Failed        Status = "failed"
	Cancelled     Status = "cancelled"
)

// Terminal reports whether no other status may follow s.
func (s Status) Terminal() bool { return s == Completed || s == Failed || s == Cancelled }

// Metadata is the task field of a task-augmented request (2025-11-25).
type Metadata struct {
	TTL *int64 `json:"ttl,omitempty"`
}

// Task is the 2025-11-25 Task: ttl and pollInterval in milliseconds, ttl
// null for unlimited.
type Task struct {
	TaskID        string `json:"taskId"`
	Status        Status `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	TTL           *int64 `json:"ttl"`
	PollInterval  *int64 `json:"pollInterval,omitempty"`
}

// CreateTaskResult answers a task-augmented request (2025-11-25): the task
// nested under "task".
type CreateTaskResult struct {
	Task Task `json:"task"`
}

// ListTasksResult answers tasks/list (2025-11-25).
type ListTasksResult struct {
	Tasks      []Task `json:"tasks"`
	NextCursor string `json:"nextCursor,omitempty"`
}

// TaskV2 is the extension's task: ttlMs (null for unlimited) and
// pollIntervalMs, both of which may change over the task's life.
type TaskV2 struct {
	TaskID         string `json:"taskId"`
	Status         Status `json:"status"`
	StatusMessage  string `json:"statusMessage,omitempty"`
	CreatedAt      string `json:"createdAt"`
	LastUpdatedAt  string `json:"lastUpdatedAt"`
	TTLMs          *int64 `json:"ttlMs"`
	PollIntervalMs *int64 `json:"pollIntervalMs,omitempty"`
}

// ResultType values of the extension.
const (
	ResultTypeTask     = "task"
	ResultTypeComplete = "complete"
)

// CreateTaskResultV2 answers a tools/call the server chose to run as a
// task: the task flat, with resultType "task".
type CreateTaskResultV2 struct {
	ResultType string `json:"resultType"`
	TaskV2
}

// DetailedTaskV2 answers the extension's tasks/get: the task with, by
// status, the tool's result (completed), a JSON-RPC error (failed) or the
// input requests (input_required; an empty map when nothing is asked of
// the client).
type DetailedTaskV2 struct {
	ResultType string `json:"resultType"`
	TaskV2
	Result        json.RawMessage            `json:"result,omitempty"`
	Error         *Error                     `json:"error,omitempty"`
	InputRequests map[string]json.RawMessage `json:"inputRequests,omitempty"`
}

// MarshalJSON keeps inputRequests present (possibly empty) exactly when
// the status is input_required, as the extension's schema requires.
func (d DetailedTaskV2) MarshalJSON() ([]byte, error) {
	type plain DetailedTaskV2
	b, err := json.Marshal(plain(d))
	if err != nil || d.Status != InputRequired || len(d.InputRequests) > 0 {
		return b, err
	}
	return append(b[:len(b)-1], `,"inputRequests":{}}`...), nil
}

// Error is a JSON-RPC error object, as a failed task carries it.
type Error struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// JSON-RPC error codes the task methods answer with.
const (
	CodeInvalidParams  = -32602
	CodeInvalidRequest = -32600
)
