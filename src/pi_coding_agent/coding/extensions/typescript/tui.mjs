// What a TypeScript extension gets for @earendil-works/pi-tui in the Python pi's sidecar: the shim's
// exports and the components a message renderer builds its drawing from (Text, Box, Container, Spacer,
// TruncatedText; Markdown draws its text without Markdown styling), with the width helpers. Each
// component's render(width) gives lines of at most `width` columns holding ANSI styling, which the
// session draws in its transcript. Written for this bridge: only the names and signatures follow pi-tui.
export * from "./shim.mjs";

const ESCAPE = /\x1b\[[0-9;:?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]/y;

function charWidth(code) {
  if (code < 0x20 || (code >= 0x300 && code <= 0x36f) || (code >= 0x200b && code <= 0x200f) || code === 0xfe0f) {
    return 0;
  }
  const wide = (code >= 0x1100 && code <= 0x115f) || (code >= 0x2e80 && code <= 0xa4cf) ||
    (code >= 0xac00 && code <= 0xd7a3) || (code >= 0xf900 && code <= 0xfaff) || (code >= 0xfe30 && code <= 0xfe4f) ||
    (code >= 0xff00 && code <= 0xff60) || (code >= 0xffe0 && code <= 0xffe6) || (code >= 0x1f300 && code <= 0x1faff) ||
    (code >= 0x20000 && code <= 0x3fffd);
  return wide ? 2 : 1;
}

// A line as pieces: escape sequences (no width) and characters (with theirs).
function pieces(line) {
  const out = [];
  for (let at = 0; at < line.length; ) {
    ESCAPE.lastIndex = at;
    const escape = ESCAPE.exec(line);
    if (escape) {
      out.push({ text: escape[0], width: 0, escape: true });
      at += escape[0].length;
      continue;
    }
    const code = line.codePointAt(at);
    const text = String.fromCodePoint(code);
    out.push({ text, width: charWidth(code), space: text === " " });
    at += text.length;
  }
  return out;
}

export function visibleWidth(text) {
  return pieces(String(text)).reduce((sum, piece) => sum + piece.width, 0);
}

const RESET = /\x1b\[0?m/g;

// The SGR state carried from one wrapped line to the next: each line opens with what was on, so any
// line can be drawn alone.
function carryStyles(lines) {
  let on = "";
  return lines.map((line) => {
    const opened = on;
    for (const piece of pieces(line)) {
      if (!piece.escape || !piece.text.endsWith("m") || !piece.text.startsWith("\x1b[")) continue;
      on = piece.text === "\x1b[0m" || piece.text === "\x1b[m" ? "" : on + piece.text;
    }
    return opened + line;
  });
}

// One line of text broken at spaces into lines of at most `width` columns (a longer word is cut).
function wrapOne(line, width) {
  const lines = [];
  let current = [];
  let used = 0;
  let word = [];
  let wordWidth = 0;
  const flush = () => {
    lines.push(current.map((p) => p.text).join("").replace(/ +$/, ""));
    current = [];
    used = 0;
  };
  const place = () => {
    if (used + wordWidth > width && used > 0) flush();
    for (const piece of word) {
      if (used + piece.width > width) flush();
      if (used === 0 && lines.length && piece.space) continue; // a wrapped line does not open with the space it broke at
      current.push(piece);
      used += piece.width;
    }
    word = [];
    wordWidth = 0;
  };
  for (const piece of pieces(line)) {
    if (piece.space && word.some((p) => !p.space && !p.escape)) place();
    word.push(piece);
    wordWidth += piece.width;
  }
  place();
  if (current.length || !lines.length) lines.push(current.map((p) => p.text).join(""));
  return lines;
}

export function wrapTextWithAnsi(text, width) {
  const lines = String(text).replace(/\t/g, "   ").split("\n").flatMap((line) => wrapOne(line, Math.max(1, width)));
  return carryStyles(lines);
}

export function truncateToWidth(text, width, ellipsis = "…") {
  const line = String(text);
  if (visibleWidth(line) <= width) return line;
  const room = Math.max(0, width - visibleWidth(ellipsis));
  let used = 0;
  let out = "";
  let styled = false;
  for (const piece of pieces(line)) {
    styled ||= piece.escape;
    if (used + piece.width > room) {
      if (piece.escape) out += piece.text;
      continue;
    }
    out += piece.text;
    used += piece.width;
  }
  return out + (styled ? "\x1b[0m" : "") + ellipsis;
}

function padTo(line, width) {
  return line + " ".repeat(Math.max(0, width - visibleWidth(line)));
}

// Lines framed by padding (blank lines above and below, columns left) to the full width, then styled.
function framed(body, width, paddingX, paddingY, style) {
  const blank = " ".repeat(width);
  const margin = " ".repeat(paddingX);
  const lines = [...Array(paddingY).fill(blank), ...body.map((line) => padTo(margin + line, width)),
    ...Array(paddingY).fill(blank)];
  if (!style) return lines;
  const [open] = style("\0").split("\0"); // what the style opens with, opened again after each reset inside
  return lines.map((line) => style(line.replace(RESET, (reset) => reset + open)));
}

export class Container {
  constructor() {
    this.children = [];
  }
  addChild(component) {
    this.children.push(component);
  }
  removeChild(component) {
    this.children = this.children.filter((child) => child !== component);
  }
  clear() {
    this.children = [];
  }
  invalidate() {
    for (const child of this.children) child.invalidate?.();
  }
  render(width) {
    return this.children.flatMap((child) => child.render(width));
  }
}

export class Box extends Container {
  constructor(paddingX = 1, paddingY = 1, bgFn) {
    super();
    Object.assign(this, { paddingX, paddingY, bgFn });
  }
  setPaddingX(value) {
    this.paddingX = value;
  }
  setPaddingY(value) {
    this.paddingY = value;
  }
  setBgFn(bgFn) {
    this.bgFn = bgFn;
  }
  render(width) {
    const body = super.render(Math.max(1, width - 2 * this.paddingX));
    return body.length ? framed(body, width, this.paddingX, this.paddingY, this.bgFn) : [];
  }
}

export class Text {
  constructor(text = "", paddingX = 1, paddingY = 1, customBgFn) {
    Object.assign(this, { text, paddingX, paddingY, customBgFn });
  }
  setText(text) {
    this.text = text;
  }
  setCustomBgFn(customBgFn) {
    this.customBgFn = customBgFn;
  }
  setPaddingX(paddingX) {
    this.paddingX = paddingX;
  }
  invalidate() {}
  render(width) {
    if (!this.text || !String(this.text).trim()) return [];
    const paddingX = Math.min(this.paddingX, Math.max(0, Math.floor((width - 1) / 2))); // a column is left for text
    const body = wrapTextWithAnsi(this.text, Math.max(1, width - 2 * paddingX));
    return framed(body, width, paddingX, this.paddingY, this.customBgFn);
  }
}

export class TruncatedText {
  constructor(text = "", paddingX = 0, paddingY = 0) {
    Object.assign(this, { text, paddingX, paddingY });
  }
  setText(text) {
    this.text = text;
  }
  invalidate() {}
  render(width) {
    const first = String(this.text).split("\n")[0];
    return framed([truncateToWidth(first, Math.max(1, width - 2 * this.paddingX))], width, this.paddingX, this.paddingY);
  }
}

export class Spacer {
  constructor(lines = 1) {
    this.lines = lines;
  }
  setLines(lines) {
    this.lines = lines;
  }
  invalidate() {}
  render() {
    return Array(this.lines).fill("");
  }
}

// Markdown(text, paddingX, paddingY, theme, defaultTextStyle): the text as written, wrapped, in the
// default style's colour when it has one.
export class Markdown extends Text {
  constructor(text = "", paddingX = 1, paddingY = 1, _theme, defaultTextStyle) {
    super(text, paddingX, paddingY);
    this.color = defaultTextStyle?.color;
  }
  render(width) {
    const lines = super.render(width);
    return this.color ? lines.map((line) => this.color(line)) : lines;
  }
}
