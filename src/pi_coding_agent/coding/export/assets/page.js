/* Session page renderer: decodes the embedded session and builds the page with DOM nodes only.
 * Session text never reaches an HTML parser: every string becomes a text node or a checked
 * attribute, so nothing a session contains can become markup or script.
 * Sections: DOM helpers, Markdown, highlighter, session model, entry views, lazy list, navigation. */
(function () {
  'use strict';

  // ------------------------------------------------------------------ DOM helpers

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function add(parent) {
    for (let i = 1; i < arguments.length; i++) {
      const child = arguments[i];
      if (child === null || child === undefined || child === false) continue;
      parent.appendChild(typeof child === 'string' ? document.createTextNode(child) : child);
    }
    return parent;
  }

  const SAFE_URL = /^(https?:|mailto:|#|\/|\.{1,2}\/|[^:/?#]*(?:[/?#]|$))/i;

  function safeLink(href, parent) {
    const url = String(href).trim();
    if (!SAFE_URL.test(url) || /^(javascript|data|vbscript):/i.test(url.replace(/[\s\u0000-\u001f]/g, ''))) {
      return parent;  // unsafe scheme: keep the text, drop the link
    }
    const a = el('a');
    a.href = url;
    a.rel = 'noopener noreferrer';
    a.target = '_blank';
    return a;
  }

  const IMAGE_MIME = /^image\/(png|jpeg|jpg|gif|webp|bmp|avif)$/i;

  function imageNode(block) {
    const mime = String(block.mimeType || '');
    const data = String(block.data || '');
    if (!IMAGE_MIME.test(mime) || !/^[A-Za-z0-9+/=\s]*$/.test(data)) {
      return el('div', 'muted', '[image: ' + (mime || 'unknown type') + ']');
    }
    const img = el('img', 'image');
    img.alt = 'image (' + mime + ')';
    img.src = 'data:' + mime + ';base64,' + data.replace(/\s/g, '');
    img.addEventListener('click', function () { img.classList.toggle('zoomed'); });
    return img;
  }

  function formatNumber(n) {
    return Number(n || 0).toLocaleString('en-US');
  }

  function formatCost(n) {
    const value = Number(n || 0);
    return '$' + value.toFixed(value !== 0 && value < 0.01 ? 4 : 2);
  }

  function formatDate(value) {
    const date = typeof value === 'number' ? new Date(value) : new Date(String(value || ''));
    if (isNaN(date.getTime())) return '';
    return date.toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
  }

  function truncate(text, max) {
    const flat = String(text || '').replace(/\s+/g, ' ').trim();
    return flat.length > max ? flat.slice(0, max - 1) + '…' : flat;
  }

  // ------------------------------------------------------------------ Markdown

  const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([^\s`]*)[^`]*$/;
  const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
  const RULE = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
  const QUOTE = /^ {0,3}> ?/;
  const ITEM = /^( {0,12})([-*+]|\d{1,9}[.)])(?:[ \t]+(.*)|$)/;
  const TABLE_RULE = /^ *\|? *:?-+:? *(\| *:?-+:? *)*\|? *$/;

  function isBlank(line) { return /^\s*$/.test(line); }

  function indentOf(line) { return line.match(/^ */)[0].length; }

  function startsBlock(lines, i) {
    const line = lines[i];
    return FENCE.test(line) || HEADING.test(line) || RULE.test(line) || QUOTE.test(line) ||
      ITEM.test(line) || isTableStart(lines, i);
  }

  function isTableStart(lines, i) {
    return i + 1 < lines.length && lines[i].indexOf('|') >= 0 && lines[i + 1].indexOf('-') >= 0 &&
      TABLE_RULE.test(lines[i + 1]) && splitRow(lines[i]).length === splitRow(lines[i + 1]).length;
  }

  function renderMarkdown(text, parent) {
    const lines = String(text || '').replace(/\r\n?/g, '\n').replace(/\t/g, '    ').split('\n');
    parseBlocks(lines, parent);
    return parent;
  }

  function parseBlocks(lines, parent) {
    let i = 0;
    while (i < lines.length) {
      const line = lines[i];
      if (isBlank(line)) { i++; continue; }
      let m;
      if ((m = FENCE.exec(line))) { i = parseFence(lines, i, m, parent); continue; }
      if ((m = HEADING.exec(line))) {
        add(parent, inline(m[2] || '', el('h' + Math.min(m[1].length + 1, 6), 'md-h' + m[1].length)));
        i++;
        continue;
      }
      if (RULE.test(line)) { add(parent, el('hr')); i++; continue; }
      if (QUOTE.test(line)) { i = parseQuote(lines, i, parent); continue; }
      if (ITEM.test(line)) { i = parseList(lines, i, parent); continue; }
      if (isTableStart(lines, i)) { i = parseTable(lines, i, parent); continue; }
      i = parseParagraph(lines, i, parent);
    }
  }

  function parseFence(lines, i, m, parent) {
    const marker = m[1];
    const body = [];
    let j = i + 1;
    const close = new RegExp('^ {0,3}' + marker[0] + '{' + marker.length + ',}\\s*$');
    while (j < lines.length && !close.test(lines[j])) body.push(lines[j++]);
    add(parent, codeBlock(body.join('\n'), m[2]));
    return j + 1;
  }

  function parseQuote(lines, i, parent) {
    const body = [];
    while (i < lines.length && QUOTE.test(lines[i])) body.push(lines[i++].replace(QUOTE, ''));
    const quote = el('blockquote');
    parseBlocks(body, quote);
    add(parent, quote);
    return i;
  }

  function parseList(lines, i, parent) {
    const first = ITEM.exec(lines[i]);
    const ordered = /\d/.test(first[2]);
    const indent = first[1].length;
    const list = el(ordered ? 'ol' : 'ul');
    if (ordered && parseInt(first[2], 10) !== 1) list.start = parseInt(first[2], 10);
    while (i < lines.length) {
      const m = ITEM.exec(lines[i]);
      if (!m || m[1].length !== indent || /\d/.test(m[2]) !== ordered) break;
      const contentIndent = indent + m[2].length + 1;
      const body = [m[3] || ''];
      i++;
      while (i < lines.length) {
        const line = lines[i];
        if (isBlank(line)) {
          let k = i + 1;
          while (k < lines.length && isBlank(lines[k])) k++;
          if (k < lines.length && indentOf(lines[k]) > indent) { while (i < k) { body.push(''); i++; } continue; }
          break;
        }
        const deeper = indentOf(line) > indent;
        if (!deeper && (ITEM.test(line) || startsBlock(lines, i))) break;
        body.push(line.slice(Math.min(indentOf(line), contentIndent)));
        i++;
      }
      const li = el('li');
      const task = /^\[([ xX])\][ \t]+/.exec(body[0]);
      if (task) body[0] = body[0].slice(task[0].length);
      parseBlocks(body, li);
      if (task) {
        const box = el('span', 'task', task[1] === ' ' ? '☐ ' : '☑ ');
        const first = li.firstElementChild && li.firstElementChild.tagName === 'P' ? li.firstElementChild : li;
        first.insertBefore(box, first.firstChild);
        li.className = 'task-item';
      }
      add(list, li);
      while (i < lines.length && isBlank(lines[i])) {
        const next = i + 1 < lines.length ? ITEM.exec(lines[i + 1]) : null;
        if (next && next[1].length === indent) i++; else break;
      }
    }
    add(parent, list);
    return i;
  }

  function splitRow(line) {
    let row = line.trim();
    if (row.startsWith('|')) row = row.slice(1);
    if (row.endsWith('|') && !row.endsWith('\\|')) row = row.slice(0, -1);
    const cells = [];
    let cell = '';
    let inCode = false;
    for (let k = 0; k < row.length; k++) {
      const c = row[k];
      if (c === '\\' && row[k + 1] === '|') { cell += '|'; k++; continue; }
      if (c === '`') inCode = !inCode;
      if (c === '|' && !inCode) { cells.push(cell.trim()); cell = ''; continue; }
      cell += c;
    }
    cells.push(cell.trim());
    return cells;
  }

  function parseTable(lines, i, parent) {
    const head = splitRow(lines[i]);
    const aligns = splitRow(lines[i + 1]).map(function (spec) {
      const left = spec.startsWith(':');
      const right = spec.endsWith(':');
      return left && right ? 'center' : right ? 'right' : left ? 'left' : '';
    });
    const table = el('table');
    const row = function (cells, tag) {
      const tr = el('tr');
      for (let k = 0; k < head.length; k++) {
        const cell = inline(cells[k] || '', el(tag));
        if (aligns[k]) cell.style.textAlign = aligns[k];
        add(tr, cell);
      }
      return tr;
    };
    add(table, add(el('thead'), row(head, 'th')));
    const body = el('tbody');
    i += 2;
    while (i < lines.length && !isBlank(lines[i]) && lines[i].indexOf('|') >= 0) add(body, row(splitRow(lines[i++]), 'td'));
    add(table, body);
    add(parent, add(el('div', 'table-wrap'), table));
    return i;
  }

  function parseParagraph(lines, i, parent) {
    const body = [lines[i++]];
    while (i < lines.length && !isBlank(lines[i]) && !startsBlock(lines, i)) body.push(lines[i++]);
    add(parent, inline(body.join('\n'), el('p')));
    return i;
  }

  // Inline Markdown: code spans, links, autolinks, bare URLs, strong/emphasis/strikethrough, breaks.
  const PUNCT = /[!-\/:-@\[-`{-~]/;
  const BARE_URL = /^https?:\/\/[^\s<>"'`]*[^\s<>"'`.,:;!?)\]]/;
  const WORD = /[\p{L}\p{N}]/u;
  // How far an opening delimiter looks for its closing one: keeps a long paragraph full of stray
  // `*`, `[` or backticks linear instead of quadratic.
  const REACH = 4000;

  function inline(text, parent) {
    let buffer = '';
    const flush = function () { if (buffer) { parent.appendChild(document.createTextNode(buffer)); buffer = ''; } };
    let i = 0;
    while (i < text.length) {
      const c = text[i];
      if (c === '\\' && i + 1 < text.length && PUNCT.test(text[i + 1])) { buffer += text[i + 1]; i += 2; continue; }
      if (c === '\\' && text[i + 1] === '\n') { flush(); add(parent, el('br')); i += 2; continue; }
      if (c === '\n') {
        if (/ {2,}$/.test(buffer)) { buffer = buffer.replace(/ +$/, ''); flush(); add(parent, el('br')); }
        else buffer += ' ';
        i++;
        continue;
      }
      if (c === '`') {
        const run = /^`+/.exec(text.slice(i, i + REACH))[0];
        const end = text.indexOf(run, i + run.length);
        if (end > 0 && end - i < REACH && text[end + run.length] !== '`') {
          flush();
          let code = text.slice(i + run.length, end).replace(/\n/g, ' ');
          if (/^ .* $/.test(code) && code.trim()) code = code.slice(1, -1);
          add(parent, el('code', 'inline', code));
          i = end + run.length;
          continue;
        }
        buffer += run;
        i += run.length;
        continue;
      }
      if (c === '[' || (c === '!' && text[i + 1] === '[')) {
        const link = parseLink(text, c === '!' ? i + 1 : i);
        if (link) {
          flush();
          if (c === '!') {
            const holder = safeLink(link.href, null);
            const label = '[image: ' + (link.label || link.href) + ']';
            add(parent, holder ? add(holder, label) : label);
          } else {
            const holder = safeLink(link.href, null);
            if (holder) add(parent, inline(link.label, holder)); else inline(link.label, parent);
          }
          i = link.end;
          continue;
        }
      }
      if (c === '<') {
        const auto = /^<((?:https?:\/\/|mailto:)[^\s<>]+)>/i.exec(text.slice(i, i + REACH));
        if (auto) {
          flush();
          add(parent, add(safeLink(auto[1], null) || el('span'), auto[1]));
          i += auto[0].length;
          continue;
        }
      }
      if ((c === 'h' || c === 'H') && (i === 0 || !WORD.test(text[i - 1]))) {
        const url = BARE_URL.exec(text.slice(i, i + REACH));
        if (url) {
          flush();
          add(parent, add(safeLink(url[0], null) || el('span'), url[0]));
          i += url[0].length;
          continue;
        }
      }
      if (c === '*' || c === '_' || c === '~') {
        const span = parseEmphasis(text, i);
        if (span) {
          flush();
          add(parent, inline(text.slice(span.start, span.stop), el(span.tag)));
          i = span.end;
          continue;
        }
        const run = /^([*_~])\1*/.exec(text.slice(i, i + REACH))[0];
        buffer += run;
        i += run.length;
        continue;
      }
      buffer += c;
      i++;
    }
    flush();
    return parent;
  }

  function parseLink(text, open) {
    let depth = 0;
    let k = open;
    const stop = Math.min(text.length, open + REACH);
    for (; k < stop; k++) {
      if (text[k] === '\\') { k++; continue; }
      if (text[k] === '[') depth++;
      else if (text[k] === ']' && --depth === 0) break;
    }
    if (k >= stop || text[k + 1] !== '(') return null;
    const target = /^\(\s*(<[^>\n]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)(?:\s+("[^"]*"|'[^']*'))?\s*\)/.exec(text.slice(k + 1, k + 1 + REACH));
    if (!target) return null;
    return { label: text.slice(open + 1, k), href: target[1].replace(/^<|>$/g, ''), end: k + 1 + target[0].length };
  }

  function parseEmphasis(text, i) {
    const c = text[i];
    const run = /^([*_~])\1*/.exec(text.slice(i, i + REACH))[0].length;
    let size;
    if (c === '~') { if (run !== 2) return null; size = 2; } else size = Math.min(run, 2);
    if (c === '_' && i > 0 && WORD.test(text[i - 1])) return null;
    const delim = c.repeat(size);
    const start = i + size;
    if (start >= text.length || /\s/.test(text[start])) return null;
    let j = start;
    while ((j = text.indexOf(delim, j + 1)) > 0 && j - i < REACH) {
      if (/\s/.test(text[j - 1])) continue;
      if (size === 1 && text[j + 1] === c) { j++; continue; }
      if (c === '_' && j + 1 < text.length && WORD.test(text[j + 1])) continue;
      if (size === 2 && text[j + 2] === c) j++;  // ***x***: the outer pair is strong, the inner one emphasis
      const tag = c === '~' ? 'del' : size === 2 ? 'strong' : 'em';
      return { tag: tag, start: start, stop: j, end: j + size };
    }
    return null;
  }

  // ------------------------------------------------------------------ syntax highlighter

  const C_KEYWORDS = 'auto break case catch char class const continue default delete do double else enum extends ' +
    'final finally float for goto if implements import int interface long namespace new package private protected ' +
    'public return short signed sizeof static struct super switch template this throw throws try typedef typename ' +
    'union unsigned using virtual void volatile while override fun val var when object func go chan select defer ' +
    'map range type struct fn let mut impl trait pub use mod crate self match loop where async await move dyn ref ' +
    'unsafe extern as in is';
  const LANGUAGES = {
    js: {
      line: ['//'], block: [['/*', '*/']], strings: ['"', "'", '`'],
      keywords: 'async await break case catch class const continue debugger default delete do else export ' +
        'extends finally for from function get if import in instanceof interface let new of return set static ' +
        'super switch this throw try type typeof var void while with yield enum implements private public ' +
        'protected readonly declare namespace abstract as satisfies keyof',
      literals: 'true false null undefined NaN Infinity'
    },
    py: {
      line: ['#'], block: [], strings: ['"""', "'''", '"', "'"],
      keywords: 'and as assert async await break class continue def del elif else except finally for from ' +
        'global if import in is lambda nonlocal not or pass raise return try while with yield match case',
      literals: 'True False None self cls'
    },
    sh: {
      line: ['#'], block: [], strings: ['"', "'"],
      keywords: 'if then else elif fi for while until do done case esac function in return local export ' +
        'readonly declare set unset shift exit source alias cd echo printf test',
      literals: 'true false', variables: true
    },
    json: { line: [], block: [], strings: ['"'], keywords: '', literals: 'true false null' },
    c: { line: ['//'], block: [['/*', '*/']], strings: ['"', "'"], keywords: C_KEYWORDS, literals: 'true false null nil NULL nullptr None' },
    rb: {
      line: ['#'], block: [], strings: ['"', "'"],
      keywords: 'alias and begin break case class def defined do else elsif end ensure for if in module next not ' +
        'or redo rescue retry return self super then undef unless until when while yield require attr_accessor',
      literals: 'true false nil'
    },
    yaml: { line: ['#'], block: [], strings: ['"', "'"], keywords: '', literals: 'true false null yes no on off' },
    css: { line: [], block: [['/*', '*/']], strings: ['"', "'"], keywords: '', literals: 'important' },
    sql: {
      line: ['--'], block: [['/*', '*/']], strings: ["'", '"'],
      keywords: 'select from where insert into values update set delete create table drop alter add index join ' +
        'left right inner outer on group by order having limit offset as and or not in is distinct union all ' +
        'primary key foreign references default exists case when then else end begin commit',
      literals: 'null true false', caseless: true
    },
    markup: { markup: true }
  };
  const ALIASES = {
    javascript: 'js', jsx: 'js', mjs: 'js', cjs: 'js', ts: 'js', typescript: 'js', tsx: 'js', mts: 'js',
    python: 'py', pyi: 'py', bash: 'sh', shell: 'sh', zsh: 'sh', console: 'sh', shellscript: 'sh',
    jsonc: 'json', json5: 'json', jsonl: 'json', ipynb: 'json',
    h: 'c', cpp: 'c', cc: 'c', cxx: 'c', hpp: 'c', hh: 'c', java: 'c', cs: 'c', csharp: 'c', go: 'c', golang: 'c',
    rs: 'c', rust: 'c', kt: 'c', kotlin: 'c', swift: 'c', scala: 'c', dart: 'c', php: 'c', zig: 'c',
    ruby: 'rb', yml: 'yaml', toml: 'yaml', ini: 'yaml', scss: 'css', less: 'css',
    html: 'markup', htm: 'markup', xml: 'markup', svg: 'markup', vue: 'markup', svelte: 'markup',
    patch: 'diff', udiff: 'diff'
  };
  const HIGHLIGHT_LIMIT = 200000;
  const compiled = {};

  function escapeRe(s) { return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'); }

  function languageFor(name) {
    const key = String(name || '').toLowerCase();
    const lang = ALIASES[key] || key;
    return LANGUAGES[lang] || lang === 'diff' ? lang : null;
  }

  function languageForPath(path) {
    const base = String(path || '').split(/[\\/]/).pop().toLowerCase();
    if (base === 'makefile' || base === 'dockerfile' || /^\.?(bash|zsh)rc$/.test(base)) return 'sh';
    const dot = base.lastIndexOf('.');
    return dot > 0 ? languageFor(base.slice(dot + 1)) : null;
  }

  function tokenizer(lang) {
    if (compiled[lang]) return compiled[lang];
    const spec = LANGUAGES[lang];
    let source;
    if (spec.markup) {
      source = '(<!-{2}[\\s\\S]*?(?:-->|$))|("[^"]*"|\'[^\']*\')|(<\\/?[A-Za-z][\\w:.-]*|\\/?>)|(&[#\\w]+;)';
    } else {
      const comments = spec.line.map(function (p) { return (p === '#' ? '(?<![^\\s;])' : '') + escapeRe(p) + '[^\\n]*'; })
        .concat(spec.block.map(function (b) { return escapeRe(b[0]) + '[\\s\\S]*?(?:' + escapeRe(b[1]) + '|$)'; }));
      const strings = spec.strings.map(function (q) {
        if (q.length === 3) return escapeRe(q) + '[\\s\\S]*?(?:' + escapeRe(q) + '|$)';
        const multi = q === '`' ? '[\\s\\S]' : '[^\\n]';
        return q + '(?:\\\\[\\s\\S]|(?!' + escapeRe(q) + ')' + multi + ')*(?:' + q + '|$)';
      });
      source = '(' + (comments.join('|') || '(?!)') + ')|(' + strings.join('|') + ')' +
        '|(\\b(?:0[xX][\\da-fA-F_]+|\\d[\\d_]*(?:\\.\\d+)?(?:[eE][+-]?\\d+)?)\\b)' +
        (spec.variables ? '|(\\$\\{[^}\\n]*\\}|\\$[\\w@#?$!*-])' : '|((?!))') +
        '|([A-Za-z_$][\\w$]*)';
    }
    compiled[lang] = {
      re: new RegExp(source, 'g'),
      keywords: new Set((spec.keywords || '').split(' ')),
      literals: new Set((spec.literals || '').split(' ')),
      caseless: !!spec.caseless,
      markup: !!spec.markup
    };
    return compiled[lang];
  }

  function classify(t, m, text, end) {
    if (t.markup) return m[1] ? 'tok-comment' : m[2] ? 'tok-string' : m[3] ? 'tok-keyword' : 'tok-literal';
    if (m[1]) return 'tok-comment';
    if (m[2]) return 'tok-string';
    if (m[3]) return 'tok-number';
    if (m[4]) return 'tok-variable';
    const word = t.caseless ? m[5].toLowerCase() : m[5];
    if (t.keywords.has(word)) return 'tok-keyword';
    if (t.literals.has(word)) return 'tok-literal';
    if (/^\s*\(/.test(text.slice(end, end + 8))) return 'tok-function';
    if (/^[A-Z][a-z]/.test(m[5])) return 'tok-type';
    return null;
  }

  function highlightInto(code, text, lang) {
    if (lang === 'diff') { diffInto(code, text); return code; }
    if (!lang || !LANGUAGES[lang] || text.length > HIGHLIGHT_LIMIT) { code.textContent = text; return code; }
    const t = tokenizer(lang);
    t.re.lastIndex = 0;
    let last = 0;
    let m;
    while ((m = t.re.exec(text))) {
      if (m[0] === '') { t.re.lastIndex++; continue; }
      const end = m.index + m[0].length;
      const cls = classify(t, m, text, end);
      if (!cls) continue;
      if (m.index > last) code.appendChild(document.createTextNode(text.slice(last, m.index)));
      add(code, el('span', cls, m[0]));
      last = end;
    }
    if (last < text.length) code.appendChild(document.createTextNode(text.slice(last)));
    return code;
  }

  function diffInto(code, text) {
    const lines = text.split('\n');
    for (let k = 0; k < lines.length; k++) {
      const line = lines[k];
      const kind = /^\+(?!\+\+ )/.test(line) ? 'diff-add' : /^-(?!-- )/.test(line) ? 'diff-del'
        : /^(@@|\+\+\+ |--- )/.test(line) ? 'diff-hunk' : 'diff-ctx';
      add(code, el('span', 'diff-line ' + kind, line + (k < lines.length - 1 ? '\n' : '')));
    }
    return code;
  }

  function codeBlock(text, langName) {
    const lang = languageFor(langName);
    const pre = el('pre', 'code');
    if (langName) pre.dataset.lang = String(langName);
    add(pre, highlightInto(el('code'), text, lang));
    return pre;
  }

  // Long text shows its first lines, with a button that renders the rest on demand.
  const PREVIEW_LINES = 24;

  function outputBlock(text, lang, cls) {
    const wrap = el('div', 'output' + (cls ? ' ' + cls : ''));
    const value = String(text || '');
    const lines = value.split('\n');
    if (lines.length <= PREVIEW_LINES + 4) {
      add(wrap, add(el('pre', 'code'), highlightInto(el('code'), value, lang)));
      return wrap;
    }
    const pre = add(el('pre', 'code'), highlightInto(el('code'), lines.slice(0, PREVIEW_LINES).join('\n'), lang));
    const more = el('button', 'expand', 'Show all ' + formatNumber(lines.length) + ' lines');
    more.type = 'button';
    more.addEventListener('click', function () {
      pre.replaceChildren(highlightInto(el('code'), value, lang));
      more.remove();
    });
    add(wrap, pre, more);
    return wrap;
  }

  // ------------------------------------------------------------------ session model

  function decodeData() {
    const raw = document.getElementById('session-data').textContent.replace(/\s/g, '');
    const binary = atob(raw);
    const bytes = new Uint8Array(binary.length);
    for (let k = 0; k < binary.length; k++) bytes[k] = binary.charCodeAt(k);
    return JSON.parse(new TextDecoder('utf-8').decode(bytes));
  }

  function buildModel(data) {
    const entries = Array.isArray(data.entries) ? data.entries : [];
    const byId = new Map();
    const order = new Map();
    const children = new Map();
    const labels = new Map();
    let name = '';
    entries.forEach(function (entry, index) {
      if (!entry || typeof entry.id !== 'string') return;
      byId.set(entry.id, entry);
      order.set(entry.id, index);
      if (entry.type === 'label' && typeof entry.targetId === 'string') {
        if (entry.label) labels.set(entry.targetId, String(entry.label)); else labels.delete(entry.targetId);
      }
      if (entry.type === 'session_info') name = String(entry.name || '').trim();
    });
    byId.forEach(function (entry, id) {
      const parent = entry.parentId;
      if (parent && parent !== id && byId.has(parent)) {
        if (!children.has(parent)) children.set(parent, []);
        children.get(parent).push(id);
      }
    });
    const leaves = [];
    byId.forEach(function (_entry, id) { if (!children.has(id)) leaves.push(id); });
    leaves.sort(function (a, b) { return order.get(b) - order.get(a); });
    return {
      data: data, header: data.header || {}, entries: entries, byId: byId, order: order, children: children,
      labels: labels, name: name, leaves: leaves, totals: totals(entries)
    };
  }

  function totals(entries) {
    const sum = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, cost: 0, messages: 0 };
    const addUsage = function (usage) {
      if (!usage || typeof usage !== 'object') return;
      sum.input += Number(usage.input) || 0;
      sum.output += Number(usage.output) || 0;
      sum.cacheRead += Number(usage.cacheRead) || 0;
      sum.cacheWrite += Number(usage.cacheWrite) || 0;
      sum.cost += Number(usage.cost && usage.cost.total) || 0;
    };
    entries.forEach(function (entry) {
      if (!entry) return;
      if (entry.type === 'usage' || entry.type === 'compaction' || entry.type === 'branch_summary') addUsage(entry.usage);
      if (entry.type !== 'message' || !entry.message) return;
      sum.messages++;
      if (entry.message.role === 'assistant' || entry.message.role === 'toolResult') addUsage(entry.message.usage);
    });
    sum.total = sum.input + sum.output + sum.cacheRead + sum.cacheWrite;
    return sum;
  }

  function pathTo(model, leafId) {
    const path = [];
    const seen = new Set();
    let current = leafId ? model.byId.get(leafId) : null;
    while (current && !seen.has(current.id)) {
      path.push(current);
      seen.add(current.id);
      current = current.parentId ? model.byId.get(current.parentId) : null;
    }
    return path.reverse();
  }

  function newestLeaf(model, id) {
    let current = id;
    for (;;) {
      const kids = model.children.get(current);
      if (!kids || !kids.length) return current;
      current = kids.reduce(function (a, b) { return model.order.get(a) > model.order.get(b) ? a : b; });
    }
  }

  function contentText(content) {
    if (typeof content === 'string') return content;
    if (!Array.isArray(content)) return '';
    return content.filter(function (b) { return b && b.type === 'text'; }).map(function (b) { return b.text || ''; }).join('\n');
  }

  function userText(entry) {
    const m = entry && entry.type === 'message' ? entry.message : null;
    return m && m.role === 'user' ? contentText(m.content) : null;
  }

  function branchTitle(model, leafId) {
    let current = model.byId.get(leafId);
    for (let steps = 0; current && steps < 5000; steps++) {
      const text = userText(current);
      if (text) return text;
      current = current.parentId ? model.byId.get(current.parentId) : null;
    }
    return '(no user message)';
  }

  function firstUserBelow(model, id) {
    let current = id;
    for (let steps = 0; current && steps < 200; steps++) {
      const text = userText(model.byId.get(current));
      if (text) return text;
      const kids = model.children.get(current);
      current = kids && kids.length ? kids[0] : null;
    }
    const entry = model.byId.get(id);
    return entry ? entryKindLabel(entry) : id;
  }

  function entryKindLabel(entry) {
    if (entry.type === 'message' && entry.message) return entry.message.role + ' message';
    return String(entry.type).replace(/_/g, ' ');
  }

  // ------------------------------------------------------------------ entry views

  function card(kind, title, entry, extra) {
    const node = el('section', 'entry ' + kind);
    if (entry && entry.id) node.dataset.id = entry.id;
    const head = add(el('div', 'entry-head'), el('span', 'role', title));
    if (extra) add(head, el('span', 'meta', extra));
    const label = entry && view.model.labels.get(entry.id);
    if (label) add(head, el('span', 'label-badge', label));
    const edit = entry && view.edits.get(entry.id);
    if (edit) add(head, el('span', 'badge warn', edit.replacement === null ? 'hidden from context' : 'content replaced in context'));
    const time = entry && (entry.message && entry.message.timestamp || entry.timestamp);
    if (time) add(head, el('span', 'time', formatDate(time)));
    add(node, head);
    return node;
  }

  function eventLine(entry, text) {
    const node = el('div', 'entry event', text);
    node.dataset.id = entry.id;
    return node;
  }

  function blocksInto(parent, content, markdown) {
    if (typeof content === 'string') {
      if (content) add(parent, markdown ? renderMarkdown(content, el('div', 'md')) : el('div', 'plain', content));
      return parent;
    }
    (Array.isArray(content) ? content : []).forEach(function (block) {
      if (!block) return;
      if (block.type === 'text') add(parent, markdown ? renderMarkdown(block.text, el('div', 'md')) : el('div', 'plain', block.text));
      else if (block.type === 'image') add(parent, imageNode(block));
    });
    return parent;
  }

  function renderUser(entry) {
    return blocksInto(card('user', 'User', entry), entry.message.content, false);
  }

  function thinkingNode(block) {
    const details = el('details', 'thinking');
    add(details, el('summary', null, block.redacted ? 'Thinking (redacted)' : 'Thinking'));
    const body = el('div', 'thinking-body');
    let rendered = false;
    details.addEventListener('toggle', function () {
      if (!details.open || rendered) return;
      rendered = true;
      renderMarkdown(block.thinking || '', body);
    });
    return add(details, body);
  }

  function usageLine(message) {
    const u = message.usage;
    if (!u) return null;
    const parts = ['in ' + formatNumber(u.input), 'out ' + formatNumber(u.output)];
    if (u.cacheRead) parts.push('cache read ' + formatNumber(u.cacheRead));
    if (u.cacheWrite) parts.push('cache write ' + formatNumber(u.cacheWrite));
    if (u.cost && u.cost.total) parts.push(formatCost(u.cost.total));
    return el('div', 'usage', parts.join(' · '));
  }

  function renderAssistant(entry) {
    const message = entry.message;
    const model = [message.provider, message.model].filter(Boolean).join('/');
    const node = card('assistant', 'Assistant', entry, model);
    (Array.isArray(message.content) ? message.content : []).forEach(function (block) {
      if (!block) return;
      if (block.type === 'text' && block.text) add(node, renderMarkdown(block.text, el('div', 'md')));
      else if (block.type === 'thinking') add(node, thinkingNode(block));
      else if (block.type === 'toolCall') add(node, renderTool(block, view.results.get(block.id)));
      else if (block.type === 'image') add(node, imageNode(block));
    });
    if (message.stopReason === 'error') {
      node.classList.add('failed');
      add(node, el('div', 'status error', 'Error: ' + (message.errorMessage || 'the request failed')));
    } else if (message.stopReason === 'aborted') {
      node.classList.add('failed');
      add(node, el('div', 'status aborted', 'Aborted' + (message.errorMessage ? ': ' + message.errorMessage : '')));
    } else if (message.stopReason === 'length') {
      add(node, el('div', 'status warn', 'Stopped: output token limit reached'));
    }
    return add(node, usageLine(message));
  }

  function argSummary(name, args) {
    const a = args || {};
    if (name === 'bash') return a.command ? '$ ' + a.command : '';
    if (name === 'read') {
      const range = a.offset || a.limit ? ':' + (a.offset || 1) + (a.limit ? '+' + a.limit : '') : '';
      return String(a.path || '') + range;
    }
    if (name === 'write' || name === 'edit' || name === 'ls') return String(a.path || '');
    if (name === 'grep' || name === 'find') return [a.pattern, a.path].filter(Boolean).join('  in ');
    return '';
  }

  function editArgsDiff(args) {
    const edits = Array.isArray(args.edits) ? args.edits.slice() : [];
    if (typeof args.oldText === 'string') edits.push({ oldText: args.oldText, newText: args.newText });
    return edits.map(function (e) {
      const minus = String(e.oldText || '').split('\n').map(function (l) { return '-' + l; });
      const plus = String(e.newText || '').split('\n').map(function (l) { return '+' + l; });
      return minus.concat(plus).join('\n');
    }).join('\n@@\n');
  }

  function renderTool(call, result) {
    const name = String(call.name || 'tool');
    const args = call.arguments && typeof call.arguments === 'object' ? call.arguments : {};
    const node = el('div', 'tool tool-' + name.replace(/[^\w-]/g, ''));
    if (result && result.isError) node.classList.add('error');
    if (!result) node.classList.add('pending');
    add(node, add(el('div', 'tool-head'), el('span', 'tool-name', name), el('span', 'tool-args', argSummary(name, args))));
    const details = result && result.details && typeof result.details === 'object' ? result.details : {};
    if (name === 'write' && typeof args.content === 'string') add(node, outputBlock(args.content, languageForPath(args.path)));
    else if (name === 'edit') add(node, outputBlock(typeof details.diff === 'string' ? details.diff : editArgsDiff(args), 'diff', 'diff'));
    else if (!argSummary(name, args) || name === 'bash' && Object.keys(args).length > 1) {
      add(node, outputBlock(JSON.stringify(args, null, 2), 'json', 'args'));
    }
    if (!result) return add(node, el('div', 'muted', '(no result recorded)'));
    const text = contentText(result.content);
    const lang = name === 'read' && !result.isError ? languageForPath(args.path) : null;
    if (name === 'edit' && !result.isError) add(node, el('div', 'muted', text));
    else if (text) add(node, outputBlock(text, lang, 'result'));
    else add(node, el('div', 'muted', '(no output)'));
    (Array.isArray(result.content) ? result.content : []).forEach(function (b) { if (b && b.type === 'image') add(node, imageNode(b)); });
    if (details.truncation && details.truncation.truncated) add(node, el('div', 'status warn', 'Output truncated'));
    return node;
  }

  function renderToolResult(entry) {
    const m = entry.message;
    const node = card('tool-result', 'Tool result', entry, m.toolName || '');
    return add(node, renderTool({ name: m.toolName, arguments: {} }, m));
  }

  function renderBash(entry) {
    const m = entry.message;
    const node = card('bash-exec', 'User shell', entry);
    add(node, el('div', 'command', '$ ' + (m.command || '')));
    add(node, m.output ? outputBlock(m.output, null, 'result') : el('div', 'muted', '(no output)'));
    const notes = el('div', 'badges');
    if (m.cancelled) add(notes, el('span', 'badge error', 'cancelled'));
    if (typeof m.exitCode === 'number' && m.exitCode !== 0) add(notes, el('span', 'badge error', 'exit code ' + m.exitCode));
    if (m.truncated) add(notes, el('span', 'badge warn', 'truncated' + (m.fullOutputPath ? ': ' + m.fullOutputPath : '')));
    if (m.excludeFromContext) add(notes, el('span', 'badge', 'not sent to the model'));
    if (notes.childNodes.length) { add(node, notes); if (m.cancelled || m.exitCode) node.classList.add('failed'); }
    return node;
  }

  function renderSystem(entry) {
    const m = entry.message;
    const patch = view.systemSeen;
    view.systemSeen = true;
    const details = add(el('details', 'entry system'), el('summary', null, patch ? 'System prompt update' : 'System prompt'));
    details.dataset.id = entry.id;
    if (m.content) add(details, el('pre', 'plain', contentText(m.content)));
    const sections = m.sections && typeof m.sections === 'object' ? m.sections : {};
    Object.keys(sections).forEach(function (key) {
      add(details, el('h4', null, key));
      add(details, sections[key] === null ? el('div', 'muted', '(section removed)') : el('pre', 'plain', sections[key]));
    });
    if (Array.isArray(m.toolsAdded) && m.toolsAdded.length) {
      add(details, el('h4', null, 'Tools'));
      const list = el('ul', 'tools');
      m.toolsAdded.forEach(function (t) { add(list, add(el('li'), el('code', 'inline', t.name), ' ' + truncate(t.description, 160))); });
      add(details, list);
    }
    if (Array.isArray(m.toolsRemoved) && m.toolsRemoved.length) {
      add(details, el('div', 'muted', 'Tools removed: ' + m.toolsRemoved.map(function (t) { return t.name; }).join(', ')));
    }
    return details;
  }

  function renderCustomMessage(entry) {
    const node = card('custom', String(entry.customType || 'custom'), entry, entry.display === false ? 'not displayed' : 'extension message');
    return blocksInto(node, entry.content, true);
  }

  function renderSummary(entry, kind, title, extra) {
    const node = card('summary ' + kind, title, entry, extra);
    return add(node, renderMarkdown(entry.summary || '', el('div', 'md')));
  }

  function renderMessage(entry) {
    const role = entry.message && entry.message.role;
    if (role === 'user') return renderUser(entry);
    if (role === 'assistant') return renderAssistant(entry);
    if (role === 'toolResult') return renderToolResult(entry);
    if (role === 'bashExecution') return renderBash(entry);
    if (role === 'system') return renderSystem(entry);
    const node = card('other', String(role || 'message'), entry);
    return blocksInto(node, entry.message && entry.message.content, true);
  }

  function renderEntry(entry) {
    switch (entry.type) {
      case 'message': return renderMessage(entry);
      case 'model_change': return eventLine(entry, 'Model: ' + entry.provider + '/' + entry.modelId);
      case 'thinking_level_change': return eventLine(entry, 'Thinking level: ' + entry.thinkingLevel);
      case 'session_info': return eventLine(entry, entry.name ? 'Session named “' + entry.name + '”' : 'Session name cleared');
      case 'compaction':
        return renderSummary(entry, 'compaction', 'Context compacted', formatNumber(entry.tokensBefore) + ' tokens before');
      case 'branch_summary': return renderSummary(entry, 'branch', 'Branch summary', 'left branch ending at ' + entry.fromId);
      case 'custom_message': return renderCustomMessage(entry);
      case 'context_edit':
        return eventLine(entry, 'Context edit: ' + entry.targetId + (entry.replacement === null ? ' hidden from the model' : ' content replaced'));
      default: return eventLine(entry, String(entry.type || 'unknown') + ' entry');
    }
  }

  // Entries without a view of their own: labels become badges, extension state and usage feed totals.
  const SILENT = new Set(['label', 'custom', 'usage']);

  function forkNode(entry, nextId) {
    const others = (view.model.children.get(entry.id) || []).filter(function (id) { return id !== nextId; });
    const node = el('nav', 'fork');
    add(node, el('span', 'fork-title', 'Branch point: ' + (others.length + (nextId ? 1 : 0)) + ' branches continue here. Others:'));
    const list = el('ul');
    others.forEach(function (id) {
      const button = el('button', 'link', truncate(firstUserBelow(view.model, id), 90));
      button.type = 'button';
      button.dataset.leaf = newestLeaf(view.model, id);
      button.addEventListener('click', function () { navigate(button.dataset.leaf); });
      add(list, add(el('li'), button));
    });
    return add(node, list);
  }

  // ------------------------------------------------------------------ lazy list

  const BATCH = 60;
  const view = { model: null, leafId: null, items: [], pos: 0, results: new Map(), edits: new Map(), systemSeen: false, observer: null };

  function planItems(path) {
    const callIds = new Set();
    view.results = new Map();
    view.edits = new Map();
    path.forEach(function (entry) {
      const m = entry.type === 'message' ? entry.message : null;
      if (m && m.role === 'assistant' && Array.isArray(m.content)) {
        m.content.forEach(function (b) { if (b && b.type === 'toolCall') callIds.add(b.id); });
      }
      if (m && m.role === 'toolResult' && callIds.has(m.toolCallId)) view.results.set(m.toolCallId, m);
      if (entry.type === 'context_edit') view.edits.set(entry.targetId, entry);
    });
    const items = [];
    path.forEach(function (entry, index) {
      const m = entry.type === 'message' ? entry.message : null;
      const paired = m && m.role === 'toolResult' && view.results.get(m.toolCallId) === m;
      if (!SILENT.has(entry.type) && !paired) items.push({ entry: entry });
      const kids = view.model.children.get(entry.id);
      if (kids && kids.length > 1) items.push({ fork: entry, next: path[index + 1] ? path[index + 1].id : null });
    });
    return items;
  }

  function renderItem(item) {
    try {
      return item.fork ? forkNode(item.fork, item.next) : renderEntry(item.entry);
    } catch (err) {
      return el('div', 'entry event error', 'Could not render entry ' + (item.entry && item.entry.id) + ': ' + err);
    }
  }

  function renderBatch() {
    const messages = document.getElementById('messages');
    const fragment = document.createDocumentFragment();
    const stop = Math.min(view.items.length, view.pos + BATCH);
    for (; view.pos < stop; view.pos++) fragment.appendChild(renderItem(view.items[view.pos]));
    messages.appendChild(fragment);
    updateMore();
  }

  function updateMore() {
    const more = document.getElementById('more');
    const left = view.items.length - view.pos;
    more.hidden = left <= 0;
    more.replaceChildren();
    if (left <= 0) return;
    const button = el('button', 'expand', 'Show ' + formatNumber(Math.min(left, BATCH)) + ' more of ' + formatNumber(left) + ' remaining');
    button.type = 'button';
    button.addEventListener('click', renderBatch);
    add(more, button);
  }

  // Near the bottom, add one batch per task until the sentinel is out of reach again: the browser
  // paints and handles input between batches, and a short batch cannot leave the list stalled.
  const LOOKAHEAD_PX = 1500;

  function fillViewport() {
    if (view.pos >= view.items.length) return;
    if (document.getElementById('more').getBoundingClientRect().top > window.innerHeight + LOOKAHEAD_PX) return;
    renderBatch();
    setTimeout(fillViewport, 0);
  }

  function watchMore() {
    if (!('IntersectionObserver' in window)) return;  // the "Show more" button still works
    view.observer = new IntersectionObserver(function (records) {
      if (records.some(function (r) { return r.isIntersecting; })) setTimeout(fillViewport, 0);
    }, { rootMargin: '0px 0px ' + LOOKAHEAD_PX + 'px 0px' });
    view.observer.observe(document.getElementById('more'));
  }

  // ------------------------------------------------------------------ header, sidebar, navigation

  function pathFacts(path) {
    const models = [];
    let thinking = '';
    path.forEach(function (entry) {
      let model = null;
      if (entry.type === 'model_change') model = entry.provider + '/' + entry.modelId;
      else if (entry.type === 'message' && entry.message && entry.message.role === 'assistant' && entry.message.model) {
        model = [entry.message.provider, entry.message.model].filter(Boolean).join('/');
      }
      if (model && models.indexOf(model) < 0) models.push(model);
      if (entry.type === 'thinking_level_change') thinking = entry.thinkingLevel;
    });
    return { models: models, thinking: thinking || 'off' };
  }

  function lastActivity(model) {
    let latest = '';
    for (let k = model.entries.length - 1; k >= 0 && !latest; k--) latest = model.entries[k] && model.entries[k].timestamp;
    return latest;
  }

  function renderHeader(model, path) {
    const header = document.getElementById('session-header');
    const h = model.header;
    const facts = pathFacts(path);
    const t = model.totals;
    const title = model.name || 'Session ' + (h.id || '');
    document.title = title + ' · pi session';
    const grid = el('dl', 'facts');
    const fact = function (label, value) { if (value) add(grid, el('dt', null, label), el('dd', null, value)); };
    fact('Session', h.id);
    fact('Model', facts.models.join(', '));
    fact('Thinking', facts.thinking);
    fact('Directory', h.cwd);
    fact('Created', formatDate(h.timestamp));
    fact('Last activity', formatDate(lastActivity(model)));
    fact('Messages', formatNumber(t.messages) + ' in ' + formatNumber(model.entries.length) + ' entries, ' +
      formatNumber(model.leaves.length) + (model.leaves.length === 1 ? ' branch' : ' branches'));
    fact('Tokens', formatNumber(t.total) + ' (in ' + formatNumber(t.input) + ', out ' + formatNumber(t.output) +
      ', cache read ' + formatNumber(t.cacheRead) + ', cache write ' + formatNumber(t.cacheWrite) + ')');
    fact('Cost', formatCost(t.cost));
    fact('Forked from', h.parentSession);
    const parts = [el('h1', null, title), grid];
    if (typeof model.data.systemPrompt === 'string' && model.data.systemPrompt) {
      parts.push(add(el('details', 'system'), el('summary', null, 'Current system prompt'), el('pre', 'plain', model.data.systemPrompt)));
    }
    if (Array.isArray(model.data.tools) && model.data.tools.length) {
      const list = el('ul', 'tools');
      model.data.tools.forEach(function (tool) {
        add(list, add(el('li'), el('code', 'inline', tool.name), ' ' + truncate(tool.description, 200)));
      });
      parts.push(add(el('details', 'system'), el('summary', null, 'Tools (' + model.data.tools.length + ')'), list));
    }
    header.replaceChildren.apply(header, parts);
  }

  const MAX_BRANCHES = 500;

  // The branches the shown path belongs to: every leaf at or below the selected entry.
  function leavesBelow(model, id) {
    const found = new Set();
    const stack = id ? [id] : [];
    while (stack.length) {
      const current = stack.pop();
      const kids = model.children.get(current);
      if (!kids) found.add(current); else stack.push.apply(stack, kids);
    }
    return found;
  }

  function renderBranches(model, leafId) {
    const list = document.getElementById('branches');
    const shown = leavesBelow(model, leafId);
    const items = model.leaves.slice(0, MAX_BRANCHES).map(function (id) {
      const entry = model.byId.get(id);
      const button = el('button', 'branch');
      button.type = 'button';
      add(button, el('span', 'branch-title', truncate(branchTitle(model, id), 80)));
      const meta = el('span', 'branch-meta', formatDate(entry.timestamp) + ' · ' + id);
      const label = model.labels.get(id);
      add(button, meta, label ? el('span', 'label-badge', label) : null);
      button.addEventListener('click', function () { navigate(id); });
      const li = add(el('li'), button);
      if (shown.has(id)) li.className = 'active';
      return li;
    });
    if (model.leaves.length > MAX_BRANCHES) items.push(el('li', 'muted', '+' + (model.leaves.length - MAX_BRANCHES) + ' more branches'));
    list.replaceChildren.apply(list, items);
  }

  function requestedLeaf(model) {
    const params = new URLSearchParams(location.hash.replace(/^#/, ''));
    const query = new URLSearchParams(location.search);
    const wanted = params.get('leafId') || params.get('leaf') || query.get('leafId') || query.get('leaf');
    if (wanted && model.byId.has(wanted)) return wanted;
    const fallback = model.data.leafId;
    return fallback && model.byId.has(fallback) ? fallback : model.leaves[0] || null;
  }

  function show(leafId) {
    const model = view.model;
    const path = pathTo(model, leafId);
    view.leafId = leafId;
    view.systemSeen = false;
    view.items = planItems(path);
    view.pos = 0;
    document.getElementById('messages').replaceChildren();
    document.body.dataset.leaf = leafId || '';
    renderHeader(model, path);
    renderBranches(model, leafId);
    if (!view.items.length) add(document.getElementById('messages'), el('p', 'muted', 'This branch has no messages.'));
    renderBatch();
  }

  function navigate(leafId) {
    if (location.hash !== '#leafId=' + encodeURIComponent(leafId)) location.hash = 'leafId=' + encodeURIComponent(leafId);
    else show(leafId);
    window.scrollTo(0, 0);
  }

  function main() {
    try {
      view.model = buildModel(decodeData());
    } catch (err) {
      add(document.getElementById('messages'), el('p', 'status error', 'Could not read the embedded session: ' + err));
      return;
    }
    show(requestedLeaf(view.model));
    watchMore();
    window.addEventListener('hashchange', function () {
      const leaf = requestedLeaf(view.model);
      if (leaf !== view.leafId) show(leaf);
    });
  }

  main();
})();
