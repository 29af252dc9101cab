// The Node.js side of pi's TypeScript extensions in the Python pi: loads each extension with jiti and
// gives it an ExtensionAPI whose registrations, events and calls travel as JSON lines over
// stdin/stdout (see coding/extensions/typescript/host.py for the protocol). Extension output written
// with console.* goes to stderr so stdout carries only the protocol.
//
// argv: <runtime dir holding node_modules/jiti and node_modules/typebox> <shim module path> <sync fd>
// The sync fd is the read end of a pipe on which the session answers the calls pi makes synchronous
// (ctx.sessionManager.*, ctx.modelRegistry.find/getAll/...): the sidecar blocks on it for the reply.
import fs from "node:fs";
import { createRequire } from "node:module";
import { spawn } from "node:child_process";
import path from "node:path";
import readline from "node:readline";

const [runtimeDir, shimPath, syncFdArg] = process.argv.slice(2);
const syncFd = Number(syncFdArg);
const require = createRequire(path.join(runtimeDir, "package.json"));
const { createJiti } = require("jiti");

for (const name of ["log", "info", "debug", "warn"]) console[name] = (...args) => console.error(...args);

const typebox = require.resolve("typebox");
const alias = { typebox, "@sinclair/typebox": typebox };
for (const scope of ["@earendil-works", "@mariozechner"]) {
  for (const pkg of ["pi-coding-agent", "pi-ai", "pi-agent-core"]) alias[`${scope}/${pkg}`] = shimPath;
  alias[`${scope}/pi-tui`] = path.join(path.dirname(shimPath), "tui.mjs"); // the shim and message renderers' components
}

const handlers = new Map(); // handler id -> function
const pending = new Map(); // call id -> {resolve, reject}
const events = new Map(); // call id -> what takes its "event" records
let nextHandler = 1;
let nextCall = 1;
let loading = null; // registrations of the extension being loaded, sent with its load result
let state = {}; // what the synchronous getters answer: the session's state sent with the latest invoke
let streamed = null; // the latest message_update event: its message is kept here and changed in place
let current = { signal: 0, controller: null }; // the AbortSignal of the session's run, by its number there

function send(record) {
  process.stdout.write(JSON.stringify(record, (_key, value) => (typeof value === "bigint" ? String(value) : value)) + "\n");
}

function call(method, args, ctx, expectReply = true, extId = null) {
  const id = nextCall++;
  send({ type: "call", id: expectReply ? id : null, ctx: ctx ?? null, extId, method, args });
  if (!expectReply) return undefined;
  return new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
}

// A call answered before this function returns: written to stdout, its reply read from the sync pipe.
let syncBuffer = Buffer.alloc(0);
function callSync(method, args, ctx) {
  send({ type: "call", id: nextCall++, sync: true, ctx: ctx ?? null, method, args });
  const chunk = Buffer.alloc(1 << 16);
  let newline;
  while ((newline = syncBuffer.indexOf(10)) < 0) {
    const count = fs.readSync(syncFd, chunk, 0, chunk.length, null);
    if (count === 0) throw new Error("the session closed the sidecar's sync pipe");
    syncBuffer = Buffer.concat([syncBuffer, chunk.subarray(0, count)]);
  }
  const reply = JSON.parse(syncBuffer.subarray(0, newline).toString("utf8"));
  syncBuffer = syncBuffer.subarray(newline + 1);
  if (reply.error !== undefined) throw new Error(reply.error);
  return reply.result ?? undefined;
}

// A call whose options may hold an AbortSignal (a dialog, a model call): the signal stays here, the call
// carries "aborted" when it is already aborted, and an abort record follows when it fires while the
// call runs. onEvent gets the call's "event" records (a model stream's events).
function callWithSignal(method, args, opts, token, onEvent) {
  const { signal, ...rest } = opts ?? {};
  const id = nextCall++;
  const record = { type: "call", id, ctx: token, method, args: [...args, rest] };
  if (signal) record.signal = signal.aborted ? "aborted" : "live";
  const answer = new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
  if (onEvent) {
    events.set(id, onEvent);
    answer.finally(() => events.delete(id)).catch(() => {});
  }
  send(record);
  if (signal && !signal.aborted) {
    const onAbort = () => send({ type: "abort", id });
    signal.addEventListener("abort", onAbort, { once: true });
    answer.finally(() => signal.removeEventListener("abort", onAbort)).catch(() => {});
  }
  return answer;
}

// ctx.modelRegistry.streamSimple: pi's AssistantMessageEventStream (iterate it; await result()). The
// session runs the request and sends its events; a failure to start is an error event and result.
function modelStream(token, model, context, options) {
  const mirror = { message: null };
  const queue = [];
  let wake = null;
  let finished = false;
  const push = (event) => {
    queue.push(event);
    if (wake) wake();
  };
  const result = callWithSignal("models.streamSimple", [model, context], options, token,
    (record) => push(applyChange(mirror, record)))
    .catch((error) => {
      const failed = failedMessage(model, error);
      push({ type: "error", reason: "error", error: failed });
      return failed;
    })
    .finally(() => {
      finished = true;
      if (wake) wake();
    });
  return {
    async *[Symbol.asyncIterator]() {
      for (let next = 0; ; ) {
        if (next < queue.length) yield queue[next++];
        else if (finished) return;
        else await new Promise((resolve) => (wake = resolve)).then(() => (wake = null));
      }
    },
    result: () => result,
  };
}

function failedMessage(model, error) {
  return {
    role: "assistant", content: [], api: model?.api, provider: model?.provider, model: model?.id,
    usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
    stopReason: "error", errorMessage: error instanceof Error ? error.message : String(error), timestamp: Date.now(),
  };
}

function register(extId, kind, spec) {
  if (loading && loading.extId === extId) loading.registrations.push({ kind, spec });
  else send({ type: "register", extId, kind, spec });
}

function handlerId(fn) {
  const id = nextHandler++;
  handlers.set(id, fn);
  return id;
}

function plainSchema(schema) {
  return schema === undefined ? undefined : JSON.parse(JSON.stringify(schema));
}

function makeApi(extId) {
  const flags = new Map();
  const bus = new Map();
  const fire = (method, ...args) => call(method, args, null, false, extId);
  const ask = (method, ...args) => call(method, args, null, true, extId);
  return {
    on(event, handler) {
      register(extId, "on", { event, handler: handlerId(handler) });
    },
    registerCommand(name, options) {
      register(extId, "command", { name, description: options?.description, handler: handlerId(options.handler) });
    },
    registerTool(tool) {
      register(extId, "tool", {
        name: tool.name, label: tool.label, description: tool.description ?? "",
        parameters: plainSchema(tool.parameters), promptSnippet: tool.promptSnippet,
        promptGuidelines: tool.promptGuidelines, executionMode: tool.executionMode,
        handler: handlerId(tool.execute),
      });
    },
    registerFlag(name, options = {}) {
      flags.set(name, options.default);
      register(extId, "flag", { name, type: options.type ?? "boolean", description: options.description, default: options.default });
    },
    getFlag: (name) => flags.get(name),
    getCommands: () => state.commands ?? [],
    getActiveTools: () => state.activeTools ?? [],
    getAllTools: () => state.allTools ?? [],
    getSessionName: () => state.sessionName ?? undefined,
    getThinkingLevel: () => state.thinkingLevel,
    registerShortcut(shortcut, options) {
      register(extId, "shortcut", { key: shortcut, description: options?.description, handler: handlerId(options.handler) });
    },
    registerMessageRenderer(customType, renderer) {
      register(extId, "messageRenderer", { customType, handler: handlerId(renderer) });
    },
    registerEntryRenderer(customType, renderer) {
      register(extId, "entryRenderer", { customType, handler: handlerId(renderer) });
    },
    registerProvider: (name, config) => fire("pi.registerProvider", name, plainSchema(config)),
    unregisterProvider: (name) => fire("pi.unregisterProvider", name),
    registerVirtualModel(model) {
      const { route, ...definition } = model;
      register(extId, "virtualModel", { ...plainSchema(definition), handler: handlerId(route) });
    },
    unregisterVirtualModel: (provider, id) => fire("pi.unregisterVirtualModel", provider, id),
    sendMessage: (message, options) => ask("pi.sendMessage", message, options ?? {}),
    sendUserMessage: (content, options) => ask("pi.sendUserMessage", content, options ?? {}),
    appendEntry: (customType, data) => fire("pi.appendEntry", customType, data),
    setSessionName: (name) => fire("pi.setSessionName", name),
    setLabel: (entryId, label) => fire("pi.setLabel", entryId, label),
    setActiveTools: (names) => fire("pi.setActiveTools", names),
    setThinkingLevel: (level) => fire("pi.setThinkingLevel", level),
    exec: (command, args = [], options = {}) => run(command, args, options),
    events: {
      on(channel, handler) {
        const list = bus.get(channel) ?? [];
        list.push(handler);
        bus.set(channel, list);
        return () => bus.set(channel, (bus.get(channel) ?? []).filter((h) => h !== handler));
      },
      emit(channel, data) {
        for (const handler of bus.get(channel) ?? []) handler(data);
      },
    },
  };
}

function run(command, args, options) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: options.cwd, shell: false });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("error", (error) => resolve({ stdout, stderr: String(error), code: 1, killed: false }));
    child.on("close", (code) => resolve({ stdout, stderr, code: code ?? 1, killed: false }));
  });
}

// pi's ReadonlySessionManager and the synchronous half of its ModelRegistry
const SESSION_READERS = ["getCwd", "getSessionDir", "getSessionId", "getSessionFile", "getSessionName", "getHeader",
  "getEntries", "getEntry", "getBranch", "getTree", "getLeafId", "getLeafEntry", "getLabel", "buildContextEntries"];
const MODEL_READERS = ["find", "getAll", "getAvailable", "hasConfiguredAuth", "getProviderDisplayName", "isUsingOAuth"];

// A handler's ctx: its members are built when first read (a message_update handler runs once a delta
// and usually reads none of them).
function makeContext(info) {
  if (!info) return undefined;
  const token = info.token;
  const signal = runSignal(info);
  const ask = (method, ...args) => call(method, args, token);
  const tell = (method, ...args) => call(method, args, token, false);
  let sessionManager, modelRegistry, ui;
  return {
    cwd: info.cwd,
    hasUI: info.hasUI,
    mode: info.mode,
    model: info.model,
    signal,
    isIdle: () => info.idle,
    abort: () => tell("ctx.abort"),
    waitForIdle: () => ask("ctx.waitForIdle"),
    shutdown: () => tell("ctx.shutdown"),
    get sessionManager() {
      return (sessionManager ??= readers("sm", SESSION_READERS, token));
    },
    get modelRegistry() {
      return (modelRegistry ??= {
        ...readers("models", MODEL_READERS, token),
        getApiKeyAndHeaders: (model) => ask("models.getApiKeyAndHeaders", model),
        getApiKeyForProvider: (provider) => ask("models.getApiKeyForProvider", provider),
        streamSimple: (model, context, options) => modelStream(token, model, context, options),
        complete: (model, context, options) => callWithSignal("models.complete", [model, context], options, token),
      });
    },
    get ui() {
      return (ui ??= makeUi(info, token, ask, tell));
    },
  };
}

// ctx.signal during a run: one AbortSignal per run (numbered by the session), aborted when the run is
function runSignal(info) {
  if (info.signal === undefined) return undefined;
  if (current.signal !== info.signal) current = { signal: info.signal, controller: new AbortController() };
  if (info.aborted && !current.controller.signal.aborted) current.controller.abort();
  return current.controller.signal;
}

function readers(prefix, names, token) {
  return Object.fromEntries(names.map((name) => [name, (...args) => callSync(`${prefix}.${name}`, args, token)]));
}

function makeUi(info, token, ask, tell) {
  return {
    select: (title, options, opts) => callWithSignal("ui.select", [title, options], opts, token),
    confirm: (title, message, opts) => callWithSignal("ui.confirm", [title, message], opts, token),
    input: (title, placeholder, opts) => callWithSignal("ui.input", [title, placeholder], opts, token),
    editor: (title, prefill) => ask("ui.editor", title, prefill),
    notify: (message, type) => tell("ui.notify", message, type),
    setStatus: (key, text) => tell("ui.setStatus", key, text),
    setWidget: (key, content, opts) => tell("ui.setWidget", key, Array.isArray(content) ? content : undefined, opts?.placement),
    setTitle: (title) => tell("ui.setTitle", title),
    setEditorText: (text) => tell("ui.setEditorText", text),
    pasteToEditor: (text) => tell("ui.pasteToEditor", text),
    getEditorText: () => info.editorText ?? "",
    setWorkingMessage() {},
    setFooter() {},
    setHeader() {},
  };
}

async function load(record) {
  const jiti = createJiti(path.join(runtimeDir, "sidecar.mjs"), { moduleCache: false, alias });
  loading = { extId: record.extId, registrations: [] };
  try {
    const factory = await jiti.import(record.path, { default: true });
    if (typeof factory !== "function") throw new Error(`Extension does not export a default function: ${record.path}`);
    await factory(makeApi(record.extId));
    return { registrations: loading.registrations };
  } finally {
    loading = null;
  }
}

// A mirrored message brought to one event (coding/extensions/typescript/streams.py): the message as a
// whole the first time, then what changed at this event (a text or thinking delta is appended here).
// The event gets the live message as its "partial", as pi's events do; done and error come whole.
function applyChange(mirror, record) {
  const change = record.event;
  if (change.type === "done" || change.type === "error") return change;
  if (record.message) mirror.message = record.message;
  const message = mirror.message;
  if (record.fields) {
    for (const key of Object.keys(message)) if (key !== "content" && !(key in record.fields)) delete message[key];
    Object.assign(message, record.fields);
  }
  const index = change.contentIndex;
  if (record.block !== undefined) message.content[index] = record.block;
  else if (change.type === "text_delta") message.content[index].text += change.delta;
  else if (change.type === "thinking_delta") message.content[index].thinking += change.delta;
  change.partial = message;
  return change;
}

// message_update handlers get one live message, as pi's get its partial message
const updates = { message: null };
function applyStream(record) {
  const change = applyChange(updates, record);
  streamed = { type: "message_update", message: updates.message, assistantMessageEvent: change };
}

async function invoke(record) {
  const handler = handlers.get(record.handler);
  if (!handler) throw new Error(`unknown handler ${record.handler}`);
  if (record.state) state = record.state;
  const ctx = makeContext(record.ctx);
  const args = record.streamed ? [streamed] : [...record.args];
  if (record.tool) {
    // execute(toolCallId, params, signal, onUpdate, ctx)
    const onUpdate = (partial) => send({ type: "update", id: record.id, partial });
    return handler(args[0], args[1], ctx.signal, onUpdate, ctx);
  }
  if (record.returnInput) {
    // tool_call handlers may change event.input in place, as in pi: it goes back with the result
    const result = await handler(...args, ctx);
    return { result: result ?? null, input: args[0].input };
  }
  return handler(...args, ctx);
}

// pi's Theme for a renderer: colours by name (the session's SGR parameters) and text attributes.
function makeTheme({ fg = {}, bg = {} }) {
  const wrap = (open, close) => (text) => (open ? `\x1b[${open}m${text}\x1b[${close}m` : String(text));
  const theme = {
    fg: (name, text) => wrap(fg[name], 39)(text),
    bg: (name, text) => wrap(bg[name], 49)(text),
    getFgAnsi: (name) => (fg[name] ? `\x1b[${fg[name]}m` : ""),
    getBgAnsi: (name) => (bg[name] ? `\x1b[${bg[name]}m` : ""),
    bold: wrap(1, 22),
    italic: wrap(3, 23),
    underline: wrap(4, 24),
    strikethrough: wrap(9, 29),
    inverse: wrap(7, 27),
    style(text, { fg: fgName, bg: bgName, bold, italic, underline, strikethrough } = {}) {
      let out = String(text);
      for (const [on, apply] of [[fgName, (t) => theme.fg(fgName, t)], [bgName, (t) => theme.bg(bgName, t)],
        [bold, theme.bold], [italic, theme.italic], [underline, theme.underline], [strikethrough, theme.strikethrough]]) {
        if (on) out = apply(out);
      }
      return out;
    },
  };
  return theme;
}

// A message renderer's drawing at one width: its component's lines, or null for the default drawing.
function renderMessage(record) {
  const renderer = handlers.get(record.handler);
  if (!renderer) throw new Error(`unknown handler ${record.handler}`);
  const theme = makeTheme(record.theme);
  const part = (name) => (process.platform === "darwin" && name.toLowerCase() === "alt" ? "option" : name);
  const keyText = (binding) => (record.keys?.[binding] ?? []).map((key) => key.split("+").map(part).join("+")).join("/");
  const keyHint = (binding, description) => theme.fg("dim", keyText(binding)) + theme.fg("muted", ` ${description}`);
  const component = renderer(record.message, { ...record.options, keyText, keyHint }, theme);
  return component ? component.render(record.width).map(String) : null;
}

async function handle(record) {
  try {
    const result = record.type === "load" ? await load(record)
      : record.type === "render" ? renderMessage(record) : await invoke(record);
    // a posted (streamed-event) handler's result changes nothing: only its end travels back
    send(record.post ? { type: "result", id: record.id } : { type: "result", id: record.id, result: result ?? null });
  } catch (error) {
    send({ type: "result", id: record.id, error: error instanceof Error ? error.message : String(error) });
  }
}

const lines = readline.createInterface({ input: process.stdin });
lines.on("line", (line) => {
  if (!line.trim()) return;
  const record = JSON.parse(line);
  if (record.type === "reply") {
    const waiter = pending.get(record.id);
    pending.delete(record.id);
    if (!waiter) return;
    if (record.error) waiter.reject(new Error(record.error));
    else waiter.resolve(record.result ?? undefined);
    return;
  }
  if (record.type === "stream") applyStream(record);
  else if (record.type === "event") events.get(record.id)?.(record);
  else if (record.type === "abort") {
    if (current.signal === record.signal) current.controller.abort();
  } else handle(record);
});
lines.on("close", () => process.exit(0));
