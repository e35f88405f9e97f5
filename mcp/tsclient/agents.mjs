// The agent-facing promises for a host without tasks, checked with the
// official TypeScript SDK client over stdio. Driven by agents_test.go,
// which starts nothing itself: this script starts `pollwarden mcp`.
//
// Environment: PW_BIN, PW_ARGS (JSON array), PW_SERVER_ENV (JSON object),
// PW_CONTRACT. Protocol with the Go test as in e2e.mjs: {"await":
// "progress", "job_id"} asks it to let the job succeed; the last line is
// {"ok": true, "checks": [...]} or {"ok": false, "error": ...}.
import { createInterface } from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const env = process.env;
const contract = env.PW_CONTRACT;
const checks = [];

function check(name, cond, detail) {
  if (!cond) throw new Error(`${name}: ${detail ?? "failed"}`);
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

const text = (res) => (res.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("");

const client = new Client({ name: "pollwarden-ts-agents", version: "0" }, { capabilities: {} });

async function main() {
  await client.connect(new StdioClientTransport({
    command: env.PW_BIN,
    args: JSON.parse(env.PW_ARGS),
    env: { PATH: env.PATH ?? "", HOME: env.HOME ?? "", ...JSON.parse(env.PW_SERVER_ENV ?? "{}") },
    stderr: "inherit",
  }));

  // Numbers sent as strings: a whole number is taken, anything else is
  // refused in words, not in the SDK's schema terms.
  let res = await client.callTool({ name: "watch_job", arguments: { contract, job_id: "stuck", operation_id: "ts-str", max_status_requests: "2" } });
  check("number as string taken", !res.isError && res.structuredContent?.max_status_requests === 2, text(res));
  res = await client.callTool({ name: "watch_job", arguments: { contract, job_id: "stuck", operation_id: "ts-str2", max_status_requests: "five" } });
  check("number as string refused in words", res.isError && text(res).includes("max_status_requests must be a number") && !text(res).includes("validating"), text(res));

  // An escalation's guidance says what to relay: the console page and the
  // decide command with the options offered.
  let op = res = await client.callTool({ name: "wait_job", arguments: { operation_id: "ts-str", max_wait_seconds: "30" } });
  op = res.structuredContent;
  for (let i = 0; i < 5 && op?.phase === "waiting"; i++) {
    op = (await client.callTool({ name: "wait_job", arguments: { operation_id: "ts-str", max_wait_seconds: 30 } })).structuredContent;
  }
  check("escalated", op?.phase === "escalated", JSON.stringify(op));
  check("escalation guidance relays the decision",
    op.guidance.includes("/ui/operations/ts-str") && /pollwarden decide ts-str OPTION \(one of [a-z_, ]*extend[a-z_, ]*\) --by NAME/.test(op.guidance),
    op.guidance);

  // wait_job holds up to 600 s (601 is refused naming 600), with progress
  // notifications that keep a client's timeout open.
  res = await client.callTool({ name: "wait_job", arguments: { operation_id: "ts-str", max_wait_seconds: 601 } });
  check("601 refused", res.isError && text(res).includes("between 1 and 600"), text(res));
  await client.callTool({ name: "watch_job", arguments: { contract, job_id: "gated", operation_id: "ts-long" } });
  const progress = [];
  let released;
  res = await client.callTool({ name: "wait_job", arguments: { operation_id: "ts-long", max_wait_seconds: 600 } }, undefined, {
    resetTimeoutOnProgress: true,
    timeout: 30000,
    onprogress: (p) => {
      progress.push(p);
      if (!released) released = ask("progress", { job_id: "gated" });
    },
  });
  await released;
  check("wait_job 600 accepted", !res.isError, text(res));
  check("progress during a 600 s hold", progress.length >= 1 && progress[0].total === 600 && progress[0].message?.includes("ts-long"), JSON.stringify(progress));
  check("wait_job 600 ends with the phase change", res.structuredContent?.phase === "succeeded", JSON.stringify(res.structuredContent));

  // resources/subscribe to a URI that is not this server's: invalid params.
  let code;
  try {
    await client.subscribeResource({ uri: "file:///etc/passwd" });
  } catch (e) {
    code = e.code;
  }
  check("subscribe foreign URI is -32602", code === -32602, `code ${code}`);

  await client.close();
  lines.close();
  process.stdout.write(JSON.stringify({ ok: true, checks }) + "\n", () => process.exit(0));
}

main().catch(async (e) => {
  process.stdout.write(JSON.stringify({ ok: false, error: String(e?.stack ?? e), checks }) + "\n");
  await client.close().catch(() => {});
  process.exit(1);
});
