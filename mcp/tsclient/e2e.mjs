// End-to-end check of pollwarden's MCP server with the official TypeScript
// SDK client, the one most hosts are built on. Driven by tsclient_test.go,
// which starts the server (or tells where it listens) and plays the
// provider's side of the steps that need a change at the provider.
//
// Environment:
//   PW_TRANSPORT  stdio or http
//   PW_BIN, PW_ARGS (JSON array), PW_SERVER_ENV (JSON object)  for stdio
//   PW_URL, PW_TOKEN                                           for http
//   PW_CONTRACT   the contract's name; PW_CANARY the provider's credential
//   PW_LOG        file to which every message received is appended
//   PW_DEBUG      when set, each check is reported on stderr with its time
//
// Protocol with the Go test: a line {"await": STEP, ...} on stdout asks it
// to act (change a job at the provider); it answers with one line on stdin.
// The last line on stdout is {"ok": true, "protocolVersion": ..., "checks": [...]}.
import { appendFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const env = process.env;
const contract = env.PW_CONTRACT;
const canary = env.PW_CANARY;
const received = [];
const checks = [];
const started = Date.now();

function fail(msg) {
  throw new Error(msg);
}

function check(name, cond, detail) {
  if (!cond) fail(`${name}: ${detail ?? "failed"}`);
  checks.push(name);
  if (env.PW_DEBUG) process.stderr.write(`${Date.now() - started} ms: ${name}\n`);
}

// Lines from the Go test, one per await.
const lines = createInterface({ input: process.stdin });
const pending = [];
const waiters = [];
lines.on("line", (l) => (waiters.length ? waiters.shift()(l) : pending.push(l)));
function ask(step, extra = {}) {
  process.stdout.write(JSON.stringify({ await: step, ...extra }) + "\n");
  return new Promise((resolve) => (pending.length ? resolve(pending.shift()) : waiters.push(resolve)));
}

// recording wraps a transport so every message received is kept, for the
// canary check and for the negotiated protocol version.
function recording(inner) {
  const t = {
    start: () => inner.start(),
    send: (m, o) => inner.send(m, o),
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
  return new StreamableHTTPClientTransport(new URL(env.PW_URL), {
    requestInit: { headers: { Authorization: `Bearer ${env.PW_TOKEN}` } },
  });
}

const client = new Client({ name: "pollwarden-ts-e2e", version: "0" }, { capabilities: {} });
const updates = [];
const updateWaiters = [];
client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
  const uri = n.params.uri;
  updateWaiters.length ? updateWaiters.shift()(uri) : updates.push(uri);
});
function nextUpdate() {
  return new Promise((resolve, reject) => {
    if (updates.length) return resolve(updates.shift());
    const timer = setTimeout(() => reject(new Error("no notifications/resources/updated within 60 s")), 60000);
    updateWaiters.push((u) => {
      clearTimeout(timer);
      resolve(u);
    });
  });
}

function text(res) {
  return (res.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("");
}

async function ok(name, args, options) {
  const res = await client.callTool({ name, arguments: args }, undefined, options);
  if (res.isError) fail(`${name} ${JSON.stringify(args)}: tool error ${text(res)}`);
  if (!res.structuredContent) fail(`${name}: no structured content`);
  // A host that shows the text shows what the structured content says.
  const fromText = JSON.parse(text(res));
  if (JSON.stringify(Object.keys(fromText).sort()) !== JSON.stringify(Object.keys(res.structuredContent).sort())) {
    fail(`${name}: the text is not the structured content`);
  }
  return res.structuredContent;
}

async function toolError(name, args, ...want) {
  const res = await client.callTool({ name, arguments: args });
  const msg = text(res);
  check(`error ${name} ${Object.keys(args).join(",")}`, res.isError === true && want.every((w) => msg.includes(w)),
    `want isError naming ${JSON.stringify(want)}, got isError=${res.isError} ${JSON.stringify(msg)}`);
}

async function main() {
  await client.connect(recording(transport()));
  const init = received.map((s) => JSON.parse(s)).find((m) => m.result?.protocolVersion);
  const protocolVersion = init?.result?.protocolVersion;
  check("initialize", protocolVersion && client.getServerVersion()?.name === "pollwarden", JSON.stringify(init));

  // tools/list: the SDK parses every schema; a boolean property schema
  // fails here.
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name).sort();
  check("tools/list", JSON.stringify(names) === JSON.stringify(["get_job", "get_result", "list_jobs", "request_extension", "submit_job", "wait_job", "watch_job"]),
    JSON.stringify(names));
  for (const t of tools) {
    check(`schemas ${t.name}`, t.inputSchema?.type === "object" && t.outputSchema?.type === "object" && t.description,
      JSON.stringify(t));
  }

  const { resourceTemplates } = await client.listResourceTemplates();
  check("resources/templates/list", resourceTemplates.some((r) => r.uriTemplate === "pollwarden://operations/{id}"),
    JSON.stringify(resourceTemplates));
  const { resources } = await client.listResources();
  check("resources/list", Array.isArray(resources), JSON.stringify(resources));

  // watch_job, then wait_job with progress: the Go test lets the job
  // finish once a progress notification has arrived.
  const w = await ok("watch_job", { contract, job_id: "ok" });
  const id = w.operation_id;
  check("watch_job", typeof id === "string" && w.phase === "waiting" && w.credential_name?.startsWith("env:"), JSON.stringify(w));
  const again = await ok("watch_job", { contract, job_id: "ok" });
  check("watch_job resumes", again.operation_id === id, JSON.stringify(again));
  const progress = [];
  let released;
  const done = await ok("wait_job", { operation_id: id, max_wait_seconds: 50 }, {
    resetTimeoutOnProgress: true,
    onprogress: (p) => {
      progress.push(p);
      if (!released) released = ask("progress", { job_id: "ok" });
    },
  });
  await released;
  check("progress on wait_job", progress.length >= 1 && progress[0].message?.includes(id) && progress[0].total === 50,
    JSON.stringify({ progress, done }));
  let final = done;
  for (let i = 0; i < 10 && final.phase === "waiting"; i++) {
    final = await ok("wait_job", { operation_id: id, max_wait_seconds: 10 });
  }
  check("wait_job", final.phase === "succeeded" && final.result?.["result.url"] === "https://files.example.com/report.csv",
    JSON.stringify(final));
  const g = await ok("get_job", { operation_id: id });
  check("get_job", g.phase === "succeeded" && g.operation_id === id && typeof g.guidance === "string", JSON.stringify(g));

  // A job that runs out of its budget escalates; request_extension
  // records a request and grants nothing.
  await ok("watch_job", { contract, job_id: "stuck", operation_id: "ts-stuck", max_status_requests: 1 });
  // An escalated job may still change (a person decides), so wait_job
  // holds on it: look first, wait only while it waits.
  let esc = await ok("get_job", { operation_id: "ts-stuck" });
  for (let i = 0; i < 20 && esc.phase === "waiting"; i++) {
    await ok("wait_job", { operation_id: "ts-stuck", max_wait_seconds: 5 });
    esc = await ok("get_job", { operation_id: "ts-stuck" });
  }
  check("escalated", esc.phase === "escalated" && esc.reason === "request_budget_exhausted" && esc.escalation?.options?.length > 0,
    JSON.stringify(esc));
  const ext = await ok("request_extension", { operation_id: "ts-stuck", extra_time: "30m", extra_status_requests: 5,
    justification: "the export usually takes 20 minutes" });
  check("request_extension", ext.granted === false && ext.max_status_requests === 1 && ext.message.includes("Nothing was granted") &&
    ext.message.includes("it awaits that decision now"), JSON.stringify(ext));
  // The approver is offered the extension as asked: 30m and 5 requests,
  // within the contract's bounds.
  const asked = await ok("get_job", { operation_id: "ts-stuck" });
  const extend = asked.escalation?.options?.find((o) => o.id === "extend");
  check("extension offered as asked", extend?.extra_time === "30m" && extend?.extra_status_requests === 5 &&
    extend?.label.startsWith("Extend waiting once by 30 minutes with 5 more status requests"), JSON.stringify(asked.escalation));
  const list = await ok("list_jobs", {});
  check("list_jobs", list.operations.map((o) => o.operation_id).sort().join(",") === [id, "ts-stuck"].sort().join(","),
    JSON.stringify(list));
  const escalated = await ok("list_jobs", { phase: "escalated" });
  check("list_jobs phase", escalated.operations.length === 1 && escalated.operations[0].operation_id === "ts-stuck",
    JSON.stringify(escalated));

  // A subscription: subscribe while the job waits, let the provider
  // finish it, get notified, read the outcome.
  await ok("watch_job", { contract, job_id: "gated", operation_id: "ts-gated" });
  const uri = "pollwarden://operations/ts-gated";
  await client.subscribeResource({ uri });
  await ask("subscribed", { job_id: "gated" });
  const got = await nextUpdate();
  check("resources/updated", got === uri, got);
  const rr = await client.readResource({ uri });
  const out = JSON.parse(rr.contents[0].text);
  check("resources/read", rr.contents[0].mimeType === "application/json" && out.phase === "succeeded" && out.operation_id === "ts-gated",
    JSON.stringify(rr));
  await client.unsubscribeResource({ uri });

  // Priority under a shared quota: an agent may lower its own (a larger
  // number), never raise it; out of range or not a number names it.
  const low = await ok("watch_job", { contract, job_id: "low", operation_id: "ts-low", priority: 8, max_status_requests: 1 });
  check("priority", low.priority === 8, JSON.stringify(low));
  await toolError("watch_job", { contract, job_id: "x", priority: 2 }, "priority", "approver");
  await toolError("watch_job", { contract, job_id: "x", priority: 0 }, "priority", "from 1");
  await toolError("watch_job", { contract, job_id: "x", priority: "urgent" }, "priority");

  // Bad input: a tool error with a message naming the problem.
  await toolError("watch_job", { contract, job_id: "x", max_status_requests: 101 }, "max_status_requests", "request_extension");
  await toolError("watch_job", { contract: "nope", job_id: "x" }, "unknown contract", contract);
  await toolError("watch_job", { contract }, "exactly one");
  await toolError("watch_job", { contract, job_id: "x", max_status_requests: "ten" }, "max_status_requests");
  await toolError("get_job", { operation_id: "missing" }, "watch_job");
  await toolError("wait_job", { operation_id: id, max_wait_seconds: 601 }, "max_wait_seconds", "600");
  await toolError("list_jobs", { phase: "done" }, "phase");
  await toolError("request_extension", { operation_id: id, extra_time: "soon", extra_status_requests: 1, justification: "j" }, "extra_time");

  check("canary", !received.some((s) => s.includes(canary)), "the provider's credential reached an MCP message");
  await client.close();
  process.stdout.write(JSON.stringify({ ok: true, protocolVersion, checks }) + "\n");
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stdout.write(JSON.stringify({ ok: false, error: String(err?.stack ?? err), checks }) + "\n");
    process.exit(1);
  },
);
