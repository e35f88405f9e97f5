// An MCP server with tasks, built only from the TypeScript SDK 1.32.2's
// own parts (McpServer, StreamableHTTPServerTransport, InMemoryTaskStore),
// as its examples/server/simpleStreamableHttp.js does: the independent
// peer pollwarden's mcp-task built-in is replayed against
// (taskpeer_test.go). One transport per session; a request with an
// unknown session id answers 404, as the SDK's example does.
//
//   node taskserver.mjs [--sse]
//
// prints "listening on http://127.0.0.1:PORT/mcp". Every request must
// carry "Authorization: Bearer $TASK_SERVER_TOKEN". With --sse, answers
// come as text/event-stream (the SDK's default) instead of JSON.
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import * as z from 'zod/v4';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { InMemoryTaskStore, InMemoryTaskMessageQueue } from '@modelcontextprotocol/sdk/experimental/tasks/stores/in-memory.js';

const sse = process.argv.includes('--sse');
const token = process.env.TASK_SERVER_TOKEN;
const taskStore = new InMemoryTaskStore();
const sessions = new Map();
const counts = { initialize: 0, 'tasks/get': 0, 'tools/call': 0, other: 0 };

function mcpServer() {
  const server = new McpServer({ name: 'pollwarden-task-peer', version: '1.0.0' }, {
    capabilities: { tasks: { requests: { tools: { call: {} } } } },
    taskStore,
    taskMessageQueue: new InMemoryTaskMessageQueue(),
  });
  // A tool that finishes after `duration` ms with `outcome`: completed,
  // failed, or input_required (it then waits for input that never comes).
  server.experimental.tasks.registerToolTask('delay', {
    description: 'Finishes after duration ms',
    inputSchema: {
      duration: z.number().default(500),
      outcome: z.enum(['completed', 'failed', 'input_required']).default('completed'),
    },
  }, {
    async createTask({ duration, outcome }, { taskStore, taskRequestedTtl }) {
      const task = await taskStore.createTask({ ttl: taskRequestedTtl, pollInterval: 200 });
      setTimeout(async () => {
        if (outcome === 'input_required') {
          await taskStore.updateTaskStatus(task.taskId, 'input_required', 'Which account should be charged?');
        } else if (outcome === 'failed') {
          await taskStore.storeTaskResult(task.taskId, 'failed', {
            content: [{ type: 'text', text: 'the export backend refused the job' }], isError: true });
        } else {
          await taskStore.storeTaskResult(task.taskId, 'completed', {
            content: [{ type: 'text', text: `Completed ${duration}ms delay` }] });
        }
      }, duration);
      return { task };
    },
    async getTask(_args, { taskId, taskStore }) { return await taskStore.getTask(taskId); },
    async getTaskResult(_args, { taskId, taskStore }) { return await taskStore.getTaskResult(taskId); },
  });
  return server;
}

async function readJSON(req) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const text = Buffer.concat(chunks).toString('utf8');
  return text ? JSON.parse(text) : undefined;
}

const http = createServer(async (req, res) => {
  // Counted before the credential is checked, so a test sees every
  // request that arrived, refused or not.
  const body = req.method === 'POST' ? await readJSON(req) : undefined;
  if (body && body.method) counts[body.method in counts ? body.method : 'other']++;
  if (req.headers.authorization !== `Bearer ${token}`) {
    res.writeHead(401, { 'Content-Type': 'application/json' }).end('{"error":"unauthorized"}');
    return;
  }
  if (req.url === '/counts') {
    res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(counts));
    return;
  }
  if (req.url === '/forget-sessions') {
    for (const s of sessions.values()) await s.close();
    sessions.clear();
    res.writeHead(204).end();
    return;
  }
  const sid = req.headers['mcp-session-id'];
  let transport = sid ? sessions.get(sid) : undefined;
  if (!transport && !sid && isInitializeRequest(body)) {
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: !sse,
      onsessioninitialized: id => sessions.set(id, transport),
    });
    await mcpServer().connect(transport);
  } else if (!transport) {
    const [code, message] = sid ? [404, 'Session not found'] : [400, 'Bad Request: No valid session ID provided'];
    res.writeHead(code, { 'Content-Type': 'application/json' })
      .end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message }, id: null }));
    return;
  }
  await transport.handleRequest(req, res, body);
});

http.listen(0, '127.0.0.1', () => {
  console.log(`listening on http://127.0.0.1:${http.address().port}/mcp`);
});
