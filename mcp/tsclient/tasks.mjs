// MCP tasks with the TypeScript clients hosts use: the SDK's experimental
// 2025-11-25 tasks (client.experimental.tasks) and
// @modelcontextprotocol/ext-tasks for the io.modelcontextprotocol/tasks
// extension. Driven by tasks_test.go with the same line protocol as
// e2e.mjs: {"await": STEP, ...} asks the Go test to act (finish a job,
// restart the server) and waits for its one-line answer (for "restart"
// over HTTP, the new URL). The last line is {"ok": true, ..., "checks": [...]}.
//
// Environment: as e2e.mjs (PW_TRANSPORT, PW_BIN, PW_ARGS, PW_SERVER_ENV,
// PW_URL, PW_TOKEN, PW_CONTRACT, PW_CANARY, PW_LOG); PW_TRANSCRIPT, when set,
// is a file to which every message sent and received is appended.
import { appendFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema, CreateTaskResultSchema, McpError, ResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { resultFromTaskOutcome, withTasks } from "@modelcontextprotocol/ext-tasks/client";

const env = process.env;
const contract = env.PW_CONTRACT;
const received = [];
const checks = [];
let url = env.PW_URL;

function fail(msg) {
  throw new Error(msg);
}
function check(name, cond, detail) {
  if (!cond) fail(`${name}: ${detail ?? "failed"}`);
  checks.push(name);
}

const lines = createInterface({ input: process.stdin });
const pending = [];
const waiters = [];
lines.on("line", (l) => (waiters.length ? waiters.shift()(l) : pending.push(l)));
function ask(step, extra = {}) {
  process.stdout.write(JSON.stringify({ await: step, ...extra }) + "\n");
  return new Promise((resolve) => (pending.length ? resolve(pending.shift()) : waiters.push(resolve)));
}

// transcript appends one message, with its direction, to PW_TRANSCRIPT.
function transcript(dir, m) {
  if (env.PW_TRANSCRIPT) appendFileSync(env.PW_TRANSCRIPT, JSON.stringify({ dir, m }) + "\n");
}

function recording(inner) {
  const t = {
    start: () => inner.start(),
    send: (m, o) => {
      transcript("client", m);
      return inner.send(m, o);
    },
    close: () => inner.close(),
    setProtocolVersion: (v) => inner.setProtocolVersion?.(v),
    get sessionId() {
      return inner.sessionId;
    },
  };
  inner.onmessage = (m, extra) => {
    const s = JSON.stringify(m);
    received.push(s);
    if (env.PW_LOG) appendFileSync(env.PW_LOG, s + "\n");
    transcript("server", m);
    t.onmessage?.(m, extra);
  };
  inner.onerror = (e) => t.onerror?.(e);
  inner.onclose = () => t.onclose?.();
  return t;
}

function transport() {
  if (env.PW_TRANSPORT === "stdio") {
    return new StdioClientTransport({
      command: env.PW_BIN,
      args: JSON.parse(env.PW_ARGS),
      env: { PATH: env.PATH ?? "", HOME: env.HOME ?? "", ...JSON.parse(env.PW_SERVER_ENV ?? "{}") },
      stderr: "inherit",
    });
  }
  return new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${env.PW_TOKEN}` } },
  });
}

async function connect(capabilities = {}) {
  const client = new Client({ name: "pollwarden-ts-tasks", version: "0" }, { capabilities });
  await client.connect(recording(transport()));
  return client;
}

// stream runs one callToolStream to its end and returns its messages.
async function stream(client, name, args, onStatus) {
  const messages = [];
  for await (const m of client.experimental.tasks.callToolStream({ name, arguments: args })) {
    messages.push(m);
    if (m.type === "taskStatus" && onStatus) await onStatus(m.task, messages);
  }
  return messages;
}

async function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

// core: the SDK's experimental tasks, 2025-11-25.
async function core() {
  let client = await connect();
  check("core initialize", client.getServerCapabilities()?.tasks?.requests?.tools?.call !== undefined,
    JSON.stringify(client.getServerCapabilities()));
  const { tools } = await client.listTools();
  const support = Object.fromEntries(tools.map((t) => [t.name, t.execution?.taskSupport ?? "forbidden"]));
  check("core taskSupport", support.watch_job === "optional" && support.wait_job === "optional" && support.get_job === "forbidden",
    JSON.stringify(support));

  // watch_job as a task: created, working, then completed once the
  // provider finishes the job; the result is the tool's answer.
  let released;
  const ok = await stream(client, "watch_job", { contract, job_id: "task-ok", operation_id: "ts-task-ok" }, async (task) => {
    if (!released && task.status === "working") released = ask("succeed", { job_id: "task-ok" });
    await released;
  });
  const created = ok.find((m) => m.type === "taskCreated");
  check("core task created", created?.task.taskId === "ts-task-ok" && created.task.status === "working" &&
    typeof created.task.pollInterval === "number" && typeof created.task.ttl === "number", JSON.stringify(ok));
  const working = ok.find((m) => m.type === "taskStatus" && m.task.status === "working");
  check("core working message", working && working.task.statusMessage.includes("next status request") &&
    !/poll the provider/i.test(working.task.statusMessage), JSON.stringify(working));
  const last = ok[ok.length - 1];
  check("core completed", last.type === "result" && last.result.structuredContent?.phase === "succeeded" &&
    last.result.structuredContent?.result?.["result.url"] === "https://files.example.com/report.csv", JSON.stringify(last));

  // An escalation: wait_job as a task ends at input_required with the
  // decision request; tasks/cancel abandons the wait.
  await client.callTool({ name: "watch_job", arguments: { contract, job_id: "task-stuck", operation_id: "ts-task-stuck", max_status_requests: 1 } });
  const esc = await stream(client, "wait_job", { operation_id: "ts-task-stuck", max_wait_seconds: 1 });
  const ir = esc.find((m) => m.type === "taskStatus" && m.task.status === "input_required");
  check("core input_required", ir && ir.task.statusMessage.includes("request_budget_exhausted") &&
    ir.task.statusMessage.includes("pollwarden decide ts-task-stuck"), JSON.stringify(esc));
  const escResult = esc[esc.length - 1];
  check("core result at input_required", escResult.type === "result" && escResult.result.structuredContent?.phase === "escalated",
    JSON.stringify(escResult));
  const cancelled = await client.experimental.tasks.cancelTask("ts-task-stuck");
  check("core tasks/cancel", cancelled.status === "cancelled", JSON.stringify(cancelled));
  await ask("cancelled", { job_id: "task-stuck" });
  const { tasks } = await client.experimental.tasks.listTasks();
  check("core tasks/list", ["ts-task-ok", "ts-task-stuck"].every((id) => tasks.some((t) => t.taskId === id)), JSON.stringify(tasks));

  // A restart while a task is outstanding: the host's next tasks/get,
  // on a new connection to the new server, finds the same task.
  const made = await client.request({ method: "tools/call", params: { name: "watch_job", arguments:
    { contract, job_id: "task-restart", operation_id: "ts-task-restart" }, task: {} } }, CreateTaskResultSchema);
  check("core task before restart", made.task.taskId === "ts-task-restart" && made.task.status === "working", JSON.stringify(made));
  await client.close();
  const answer = await ask("restart");
  if (env.PW_TRANSPORT !== "stdio") url = answer;
  client = await connect();
  const again = await client.experimental.tasks.getTask("ts-task-restart");
  check("core tasks/get after restart", again.taskId === "ts-task-restart" && again.status === "working", JSON.stringify(again));
  await ask("succeed", { job_id: "task-restart" });
  let t = again;
  for (let i = 0; i < 120 && t.status === "working"; i++) {
    await sleep(Math.min(t.pollInterval ?? 1000, 2000));
    t = await client.experimental.tasks.getTask("ts-task-restart");
  }
  const res = await client.experimental.tasks.getTaskResult("ts-task-restart", CallToolResultSchema);
  check("core completed after restart", t.status === "completed" && res.structuredContent?.phase === "succeeded", JSON.stringify({ t, res }));
  return client;
}

// extension: @modelcontextprotocol/ext-tasks over a port. Over stdio it
// frames each tools/call and tasks/* request as a 2026-07-28 client
// declaring the extension does (what the package's own adapter does for
// the v2 SDK client). The Go SDK's stateful streamable HTTP server refuses
// 2026-07-28 requests, so over HTTP the client declares the extension in
// its initialize capabilities instead, and the port sends the requests
// as they are.
function extPort(client) {
  const framing = env.PW_TRANSPORT !== "stdio" ? {} : {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": { name: "pollwarden-ts-tasks", version: "0" },
    "io.modelcontextprotocol/clientCapabilities": { extensions: { "io.modelcontextprotocol/tasks": {} } },
  };
  return {
    endpointId: "pollwarden-e2e",
    taskCapabilities: { generation: "v2", capabilities: {} },
    invalidated: false,
    async dispatch(request, options = {}) {
      let req = { method: request.method, ...(request.params ? { params: request.params } : {}) };
      if (req.method === "tools/call" || req.method.startsWith("tasks/")) {
        req = { ...req, params: { ...(req.params ?? {}), _meta: { ...(req.params?._meta ?? {}), ...framing } } };
      }
      try {
        const result = await client.request(req, ResultSchema.passthrough(), options.signal ? { signal: options.signal } : {});
        return { kind: "result", result };
      } catch (e) {
        if (e instanceof McpError) return { kind: "error", error: { code: e.code, message: e.message } };
        throw e;
      }
    },
    onServerRequest: () => () => {},
    onNotification: () => () => {},
    onInvalidated: () => () => {},
  };
}

async function extension() {
  const client = await connect({ extensions: { "io.modelcontextprotocol/tasks": {} } });
  const caps = client.getServerCapabilities();
  check("ext advertised", JSON.stringify(caps?.extensions?.["io.modelcontextprotocol/tasks"]) === "{}", JSON.stringify(caps));
  const session = withTasks(extPort(client));
  const execution = await session.callTool("watch_job", { contract, job_id: "ext-ok", operation_id: "ts-ext-ok" });
  const first = execution.handle ?? {};
  check("ext task created", JSON.stringify(first).includes("ts-ext-ok") || received.some((s) => s.includes('"resultType":"task"') && s.includes("ts-ext-ok")),
    JSON.stringify(first));
  await ask("succeed", { job_id: "ext-ok" });
  const { outcome } = await execution.settle();
  if (outcome.status === "failed") {
    fail(`ext outcome failed: ${outcome.error?.message}; cause ${outcome.error?.cause?.stack ?? outcome.error?.cause}; issues ${JSON.stringify(outcome.error?.cause, null, 0)} ${JSON.stringify(Object.keys(outcome.error?.cause ?? {}))}; last received ${received.slice(-3).join("\n")}`);
  }
  const result = resultFromTaskOutcome(outcome);
  check("ext completed", outcome.status === "completed" && result.structuredContent?.phase === "succeeded", JSON.stringify(outcome));
  // The server decides: a finished operation is answered at once.
  const now = await session.callTool("wait_job", { operation_id: "ts-ext-ok" });
  const { outcome: immediate } = await now.settle();
  check("ext immediate", immediate.status === "completed" && resultFromTaskOutcome(immediate).structuredContent?.phase === "succeeded",
    JSON.stringify(immediate));
  await session.close();
  await client.close();
}

async function main() {
  const client = await core();
  await client.close();
  await extension();
  check("canary", !received.some((s) => s.includes(env.PW_CANARY)), "the provider's credential reached an MCP message");
  process.stdout.write(JSON.stringify({ ok: true, checks }) + "\n");
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stdout.write(JSON.stringify({ ok: false, error: String(err?.stack ?? err), checks }) + "\n");
    process.exit(1);
  },
);
