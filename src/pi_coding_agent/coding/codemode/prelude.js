// Evaluated in the QuickJS VM before the script. It evaluates to a function of the host bridge and
// the job (JSON text: code, tools, globals, store snapshot, limits) and returns { deliver, run,
// stalled }. The bridge stays in this closure, so the script can only reach the host through the
// globals built here. Every message to the host is one line of JSON built here, with functions
// captured before the script runs, so a script that patches JSON or prototypes cannot forge it;
// the worker process only moves lines, which keeps its start-up to the engine itself.
(function (bridge, jobJson) {
  "use strict";
  const encode = JSON.stringify;
  const decode = JSON.parse;
  const then = Promise.prototype.then;
  const BaseError = Error;
  const TypeErr = TypeError;
  const RangeErr = RangeError;
  const job = decode(jobJson);
  const limits = job.limits;
  const post = (message) => bridge(message.type, encode(message));
  const waiting = new Map();
  let lastId = 0;
  let settled = false;
  const EXIT = Object.freeze({});
  const OUT_OF_MEMORY = encode({ name: "InternalError", message: "out of memory", stack: "InternalError: out of memory" });

  function finish(ok, payload, writes) {
    if (settled) return;
    settled = true;
    const message = { type: "done", ok };
    if (ok) {
      if (payload !== undefined) message.value = payload;
      message.writes = writes;
    } else {
      message.error = payload;
    }
    post(message);
  }

  // QuickJS stacks hold only frames; lead with "Name: message" as V8 does. The worker evaluates
  // this prelude below line PRELUDE_FIRST_LINE, so frames past it are ours and are dropped, as is
  // the indirect eval that compiled the script; the script's frames name codemode.js.
  function ownFrame(line) {
    const at = /:(\d+):\d+\)?$/.exec(line);
    return line.indexOf("eval (native)") !== -1 || (at !== null && Number(at[1]) >= limits.preludeFirstLine);
  }
  function errorText(error) {
    const head = error.message ? error.name + ": " + error.message : String(error.name);
    const frames = typeof error.stack === "string"
      ? error.stack.split("\n").filter((line) => line.trim() !== "" && !ownFrame(line)).map((line) => line.split("<input>").join("codemode.js"))
      : [];
    return [head].concat(frames).join("\n");
  }

  function show(value) {
    if (typeof value === "string") return value;
    if (value instanceof BaseError) return errorText(value);
    if (typeof value === "number") return String(value);
    try {
      const json = encode(value);
      return json === undefined ? String(value) : json;
    } catch (e) {
      return String(value);
    }
  }

  function describeError(error) {
    try {
      if (error instanceof BaseError) {
        return encode({ name: String(error.name), message: String(error.message), stack: errorText(error) });
      }
      return encode({ message: String(show(error)) });
    } catch (e) {
      return encode({ message: "The script threw a value that cannot be described" });
    }
  }

  function hostCall(kind, name, spread) {
    return function (...args) {
      return new Promise((resolve, reject) => {
        let json;
        try {
          const value = spread ? args : args[0];
          json = value === undefined ? null : encode(value);
        } catch (error) {
          reject(error);
          return;
        }
        const id = ++lastId;
        waiting.set(id, { resolve, reject });
        const message = { type: "call", id, target: kind === "call" ? "tool" : "global", name };
        if (json !== undefined && json !== null) message.args = json;
        post(message);
      });
    };
  }

  const squash = (name) => name.toLowerCase().replace(/[^a-z0-9]/g, "");
  // A member that does not exist fails at once with the close matches, not later as "not a function".
  function guarded(target, label, names, hint) {
    return new Proxy(target, {
      get(object, key, receiver) {
        if (typeof key !== "string" || key in object || key in Object.prototype || key === "then" || key === "toJSON") {
          return Reflect.get(object, key, receiver);
        }
        const wanted = squash(key);
        const same = names.filter((name) => squash(name) === wanted);
        const near = same.length > 0 ? same
          : names.filter((name) => wanted !== "" && (squash(name).includes(wanted) || wanted.includes(squash(name))));
        let message = label + "." + key + " does not exist.";
        if (near.length > 0) message += " Did you mean " + near.slice(0, 5).map((name) => label + "." + name).join(", ") + "?";
        else if (names.length <= 20) message += " Available: " + names.join(", ") + ".";
        if (hint) message += " " + hint;
        message += ' Check for a member with "' + key + '" in ' + label + ".";
        throw new TypeErr(message);
      },
    });
  }

  const toolTable = Object.create(null);
  const listing = [];
  for (const tool of job.tools) {
    const call = hostCall("call", tool.name, false);
    if (!(tool.jsName in toolTable)) {
      toolTable[tool.jsName] = call;
      listing.push(Object.freeze({ name: tool.jsName, description: tool.description }));
    }
    if (!(tool.name in toolTable)) toolTable[tool.name] = call;
  }
  Object.freeze(toolTable);
  Object.freeze(listing);
  const tools = guarded(toolTable, "tools", listing.map((tool) => tool.name),
    "ALL_TOOLS lists every tool; searchTools(query) finds tools by topic.");

  const groups = new Map();
  for (const global of job.globals) {
    const call = hostCall("global", global.name, global.spread);
    const dot = global.name.indexOf(".");
    if (dot === -1) {
      Object.defineProperty(globalThis, global.name, { value: call, enumerable: true });
      continue;
    }
    const group = global.name.slice(0, dot);
    if (!groups.has(group)) groups.set(group, Object.create(null));
    groups.get(group)[global.name.slice(dot + 1)] = call;
  }
  for (const [group, members] of groups) {
    Object.freeze(members);
    Object.defineProperty(globalThis, group, { value: guarded(members, group, Object.keys(members)), enumerable: true });
  }

  // The store holds JSON text per key; sizes count key and JSON characters.
  const stored = new Map(Object.entries(job.store));
  const written = new Map();
  let storedChars = 0;
  for (const [key, json] of stored) storedChars += key.length + json.length;
  const STORE_HINT = "store() is for small state such as IDs or summaries. Show images with image(), keep large data in variables, or write it to a file with a tool.";

  function needKey(fn, key) {
    if (typeof key !== "string") throw new TypeErr(fn + "() key must be a string");
  }

  function store(key, value) {
    needKey("store", key);
    const before = stored.has(key) ? key.length + stored.get(key).length : 0;
    if (value === undefined) {
      stored.delete(key);
      storedChars -= before;
      written.set(key, undefined);
      return;
    }
    let json;
    try {
      json = encode(value);
    } catch (error) {
      throw new TypeErr("store(" + encode(key) + ") value is not JSON-serializable: " + show(error));
    }
    if (json === undefined) throw new TypeErr("store(" + encode(key) + ") value is not JSON-serializable");
    if (json.length > limits.storeValue) {
      throw new RangeErr("store(" + encode(key) + ") value has " + json.length + " characters of JSON, more than the limit of " + limits.storeValue + ". " + STORE_HINT);
    }
    const after = storedChars - before + key.length + json.length;
    if (after > limits.storeTotal) {
      throw new RangeErr("store is full: stored values would exceed " + limits.storeTotal + " characters of JSON. Delete keys with store(key, undefined). " + STORE_HINT);
    }
    stored.set(key, json);
    storedChars = after;
    written.set(key, json);
  }

  function load(key) {
    needKey("load", key);
    const json = stored.get(key);
    return json === undefined ? undefined : decode(json);
  }

  function writesJson() {
    const entries = [];
    for (const [key, json] of written) entries.push(json === undefined ? [key] : [key, json]);
    return encode(entries);
  }

  let outChars = 0;
  let outItems = 0;
  function emit(kind, data, mimeType) {
    if (settled) return;
    outChars += data.length;
    outItems += 1;
    if (outChars > limits.outputChars || outItems > limits.outputItems) {
      const error = new RangeErr("script output exceeded the limit of " + limits.outputChars + " characters or " + limits.outputItems + " text(), image(), and console calls. Print a summary instead, or write large data to a file with a tool.");
      finish(false, describeError(error));
      throw error;
    }
    const message = { type: "output", kind, data };
    if (mimeType !== undefined) message.mimeType = mimeType;
    post(message);
  }

  function asText(value) {
    if (value === undefined || value === null || (typeof value !== "object" && typeof value !== "function")) return String(value);
    const json = encode(value);
    return json === undefined ? String(value) : json;
  }

  function text(value) {
    let rendered;
    try {
      rendered = asText(value);
    } catch (error) {
      throw new TypeErr(error instanceof BaseError ? error.message : String(error));
    }
    emit("text", rendered);
  }

  const IMAGE_EXPECTS = 'image expects a non-empty image URL string, an object with image_url, or an image block { type: "image", data, mimeType }';
  function imageUrl(value) {
    if (typeof value === "string") return value;
    if (typeof value !== "object" || value === null || Array.isArray(value)) throw new TypeErr(IMAGE_EXPECTS);
    if (value.image_url !== undefined) {
      if (typeof value.image_url !== "string") throw new TypeErr(IMAGE_EXPECTS);
      return value.image_url;
    }
    if (typeof value.type !== "string") throw new TypeErr(IMAGE_EXPECTS);
    if (value.type !== "image") throw new TypeErr('image only accepts image blocks, got "' + value.type + '"');
    if (typeof value.data !== "string" || value.data === "") throw new TypeErr("image expected image block data");
    if (value.data.toLowerCase().startsWith("data:")) return value.data;
    return "data:;base64," + value.data;
  }

  // Base64 prefixes of the PNG, JPEG (not JPEG-LS), GIF and WebP signatures.
  const SIGNATURES = [
    ["image/png", /^iVBORw0KGg/],
    ["image/jpeg", /^[/]9j[/](?!9)/],
    ["image/gif", /^R0lGOD[dl]h/],
    ["image/webp", /^UklG.{8}RUJQ/],
  ];

  function image(value) {
    const url = imageUrl(value);
    if (url === "") throw new TypeErr(IMAGE_EXPECTS);
    const colon = url.indexOf(":");
    const scheme = colon === -1 ? "" : url.slice(0, colon).toLowerCase();
    if (scheme === "http" || scheme === "https") {
      throw new TypeErr("remote image URLs are not supported in tool outputs. Pass a base64 data URI instead");
    }
    const comma = url.indexOf(",");
    const params = comma === -1 ? [] : url.slice(colon + 1, comma).split(";");
    if (scheme !== "data" || comma === -1 || params.slice(1).every((part) => part.toLowerCase() !== "base64")) {
      throw new TypeErr("invalid image output. Pass a base64 data URI instead");
    }
    const data = url.slice(comma + 1).replace(/\s+/g, "");
    if (data.length % 4 !== 0 || !/^[A-Za-z0-9+/]+={0,2}$/.test(data)) {
      throw new TypeErr("invalid image output. The image data is not valid base64 (truncated or corrupted?)");
    }
    const head = data.slice(0, 16);
    const found = SIGNATURES.find((entry) => entry[1].test(head));
    if (!found) throw new TypeErr("invalid image output. The image data is not a PNG, JPEG, GIF, or WebP image");
    emit("image", data, found[0]);
  }

  function exit() {
    let writes;
    try {
      writes = writesJson();
    } catch (error) {
      finish(false, describeError(error));
      throw EXIT;
    }
    finish(true, undefined, writes);
    throw EXIT;
  }

  const consoleObject = {};
  for (const level of ["log", "info", "warn", "error", "debug"]) {
    consoleObject[level] = (...args) => emit("console", args.map(show).join(" "));
  }
  Object.freeze(consoleObject);

  const define = (name, value) => Object.defineProperty(globalThis, name, { value, enumerable: true });
  define("tools", tools);
  define("ALL_TOOLS", listing);
  define("console", consoleObject);
  define("text", text);
  define("image", image);
  define("exit", exit);
  define("store", store);
  define("load", load);

  return {
    // One result line from the host: { id, ok, payload?, properties? }.
    deliver(line) {
      const { id, ok, payload, properties } = decode(line);
      const propertiesJson = properties;
      const entry = waiting.get(id);
      if (!entry) return;
      waiting.delete(id);
      if (!ok) {
        const error = new BaseError(payload);
        if (propertiesJson !== null && propertiesJson !== undefined) {
          const properties = decode(propertiesJson);
          for (const key of Object.keys(properties)) {
            if (key === "name" || key === "message" || key === "stack") continue;
            Object.defineProperty(error, key, { value: properties[key], writable: true, enumerable: true, configurable: true });
          }
        }
        entry.reject(error);
        return;
      }
      let value;
      try {
        value = payload === null || payload === undefined ? undefined : decode(payload);
      } catch (error) {
        entry.reject(error);
        return;
      }
      entry.resolve(value);
    },
    run() {
      const source = job.code;
      let promise;
      try {
        // Indirect eval: the script is an async function body, so top-level await and return work.
        const body = (0, eval)("(async (tools, console) => {" + source + "\n})");
        promise = body(tools, consoleObject);
      } catch (error) {
        finish(false, describeError(error));
        return;
      }
      then.call(promise, (value) => {
        let json;
        try {
          json = value === undefined ? undefined : encode(value);
        } catch (error) {
          finish(false, describeError(error));
          return;
        }
        finish(true, json, writesJson());
      }, (error) => {
        if (error === EXIT) return;
        // QuickJS throws null when it cannot even allocate the out-of-memory error at the heap limit
        finish(false, error === null ? OUT_OF_MEMORY : describeError(error));
      });
    },
    stalled() {
      if (settled || waiting.size > 0) return false;
      finish(false, encode({ name: "Error", message: "The script is waiting on a promise that can never settle: no tool call is pending, and timers do not exist here." }));
      return true;
    },
  };
})
