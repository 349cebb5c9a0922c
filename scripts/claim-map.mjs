// The book's claim map: every section of a chapter that describes behaviour ends with the tests
// that exercise it, and those tests exist. Used by scripts/book-links.mjs; tested by
// scripts/claim-map.test.mjs.
//
// A section is a `#` or `##` heading and the prose up to the next `#`/`##` heading (a `###`
// belongs to its `##`); a section with no prose under its heading is not checked. Each section
// carries exactly one of:
//
//   Tested by: `crates/pixelgrad-cli/tests/backends.rs` `webgl_matches_cpu_loss_curve`,
//   `web/tests/precision.test.mjs` "webgl precision low: training reduces the loss"
//
// a paragraph starting `Tested by:` (it may wrap): a file in a code span (its path from the
// repository root, or a unique end of one) followed by one or more test names in that file —
//   - Rust (`.rs`): a code span `NAME`; the file must contain `fn NAME`;
//   - JavaScript (`.mjs`, `.js`): a quoted title "PREFIX"; some `test(`/`it(` in the file must
//     have a title that starts with it. A title built per backend (`${backend}: ...` inside
//     `for (const backend of ['webgpu', 'webgl', 'cpu'])`) counts as each of its values, so
//     "webgl: ..." matches and "metal: ..." does not; any other `${...}` or `+ expr` part of a
//     title matches any text;
//   - shell (`.sh`): a quoted "PREFIX" of a stage the script announces with `echo "== ..."`;
//   a conformance family (`edges`, `errors`, ...) is named by the function that defines it in
//   `crates/pixelgrad-conformance/src/families/` (`conformance_tests!` runs every family on the
//   CPU, WebGPU, WebGL2 and WebGL1 backends, natively and in Chromium). A remark in parentheses
//   is prose and may name files without naming tests;
// or the marker
//
//   <!-- no behaviour claims: WHY -->
//
// (an HTML comment the rendered book does not show) for a section that claims nothing a test
// could check: design rationale, a table of contents, how to run something that has its own
// section. A section with neither, a file that does not exist, or a name that is not in its
// file is a problem line.

/** A `#`/`##` heading outside code (the caller blanks fenced blocks). */
const HEADING = /^(#{1,2})\s+(.*?)\s*#*\s*$/;
export const NO_CLAIMS = /<!--\s*no behaviour claims:\s*(\S[^]*?)-->/;

/** Sections of a chapter's prose (fenced blocks already blanked, lines kept). */
export function sections(prose) {
  const out = [];
  let cur = null;
  for (const [i, line] of prose.split('\n').entries()) {
    const m = HEADING.exec(line);
    if (m) {
      cur = { title: m[2], line: i + 1, lines: [] };
      out.push(cur);
    } else if (cur) {
      cur.lines.push({ no: i + 1, text: line });
    }
  }
  return out;
}

/** The `Tested by:` paragraphs of a section: [{ line, text }]. */
function testedByParagraphs(sec) {
  const paras = [];
  let cur = null;
  for (const { no, text } of sec.lines) {
    if (!text.trim()) {
      cur = null;
    } else if (cur) {
      cur.text += ` ${text.trim()}`;
    } else if (/^Tested by:/.test(text.trim())) {
      cur = { line: no, text: text.trim() };
      paras.push(cur);
    }
  }
  return paras;
}

/**
 * `Tested by:` text -> [{ file, names: [{ name, quoted }] }] (a leading name has file null).
 * A remark in parentheses is prose, not a test: `(the same split through the CLI)`.
 */
export function parseTestedBy(text) {
  const entries = [];
  const refs = text.replace(/`[^`]*`|"[^"]*"|\([^()]*\)/g, (m) => (m[0] === '(' ? '' : m));
  for (const m of refs.matchAll(/`([^`]+)`|"([^"]+)"/g)) {
    const span = m[1];
    if (span !== undefined && /\/|\.(?:rs|mjs|js|sh)$/.test(span)) {
      entries.push({ file: span, names: [] });
      continue;
    }
    const name = { name: span ?? m[2], quoted: span === undefined };
    if (!entries.length) entries.push({ file: null, names: [] });
    entries[entries.length - 1].names.push(name);
  }
  return entries;
}

/** Reads a string literal at text[i] (', " or `): { parts, end } or null. */
function literal(text, i) {
  const q = text[i];
  if (!`'"\``.includes(q)) return null;
  const parts = [];
  let lit = '';
  let j = i + 1;
  while (j < text.length && text[j] !== q) {
    if (text[j] === '\\') {
      lit += text[j + 1] ?? '';
      j += 2;
    } else if (q === '`' && text.startsWith('${', j)) {
      let depth = 1;
      let k = j + 2;
      while (k < text.length && depth) {
        if (text[k] === '{') depth++;
        else if (text[k] === '}') depth--;
        k++;
      }
      parts.push({ lit });
      parts.push({ hole: text.slice(j + 2, k - 1).trim() });
      lit = '';
      j = k;
    } else {
      lit += text[j++];
    }
  }
  parts.push({ lit });
  return { parts, end: j + 1 };
}

/** The values a loop variable takes: `for (const NAME of ['a', 'b'])` before `at`, or null. */
function loopValues(text, name, at) {
  const re = new RegExp(`for\\s*\\(\\s*const\\s+${name}\\s+of\\s+\\[([^\\]]*)\\]`, 'g');
  let values = null;
  for (const m of text.slice(0, at).matchAll(re)) {
    const items = m[1].split(',').map((s) => s.trim()).filter(Boolean);
    values = items.every((s) => /^(['"]).*\1$/.test(s)) ? items.map((s) => s.slice(1, -1)) : null;
  }
  return values;
}

/** Titles of `test(`/`it(` calls: each a list of parts { lit } / { any } / { oneOf }. */
export function jsTitles(text) {
  const titles = [];
  for (const m of text.matchAll(/\b(?:test|it)\s*\(\s*/g)) {
    let pos = m.index + m[0].length;
    const parts = [];
    for (;;) {
      const l = literal(text, pos);
      if (l) {
        for (const p of l.parts) {
          if (p.lit !== undefined) parts.push(p);
          else if (/^\w+$/.test(p.hole) && loopValues(text, p.hole, m.index)) parts.push({ oneOf: loopValues(text, p.hole, m.index) });
          else parts.push({ any: true });
        }
        pos = l.end;
      } else {
        const e = /^[\w.$]+(?:\([^()]*\))?/.exec(text.slice(pos));
        if (!e) break;
        parts.push(/^\w+$/.test(e[0]) && loopValues(text, e[0], m.index) ? { oneOf: loopValues(text, e[0], m.index) } : { any: true });
        pos += e[0].length;
      }
      const plus = /^\s*\+\s*/.exec(text.slice(pos));
      if (!plus) break;
      pos += plus[0].length;
    }
    if (parts.length) titles.push(parts);
  }
  return titles;
}

/** Whether `q` is the start of some title the parts can make. */
export function titleStartsWith(parts, q) {
  if (!q) return true;
  if (!parts.length) return false;
  const [p, ...rest] = parts;
  const tryValue = (v) => (q.startsWith(v) ? titleStartsWith(rest, q.slice(v.length)) : v.startsWith(q));
  if (p.lit !== undefined) return tryValue(p.lit);
  if (p.oneOf) return p.oneOf.some(tryValue);
  for (let i = 0; i <= q.length; i++) if (titleStartsWith(rest, q.slice(i))) return true;
  return false;
}

/** Whether the test file's text has a test called `name`; null when the file type is unknown. */
export function hasTest(file, text, name) {
  if (file.endsWith('.rs')) {
    return new RegExp(`\\bfn\\s+${name.replace(/[^\w]/g, '\\$&')}\\b`).test(text);
  }
  if (/\.m?js$/.test(file)) return jsTitles(text).some((t) => titleStartsWith(t, name));
  if (file.endsWith('.sh')) {
    return text.split('\n').some((l) => {
      const m = /^\s*echo\s+(["'])== (.*)$/.exec(l);
      return m !== null && m[2].startsWith(name);
    });
  }
  return null;
}

/**
 * Problems of one chapter's claim map. `where`: its path for messages; `prose`: its text with
 * fenced blocks blanked; `read(span)`: { path, text } of the file a code span names, or null.
 */
export function claimProblems(where, prose, read) {
  const problems = [];
  for (const sec of sections(prose)) {
    const body = sec.lines.map((l) => l.text).join('\n');
    if (!body.trim()) continue;
    const paras = testedByParagraphs(sec);
    const marked = NO_CLAIMS.test(body.replace(/`[^`\n]*`/g, '')); // quoted in a code span, it is prose
    const at = `${where}:${sec.line}: section "${sec.title}"`;
    if (marked && paras.length) problems.push(`${at}: both a Tested by list and a no-behaviour-claims marker`);
    if (!marked && !paras.length) {
      problems.push(`${at} has no Tested by list (name its tests, or mark it <!-- no behaviour claims: WHY -->)`);
    }
    for (const para of paras) {
      const entries = parseTestedBy(para.text);
      if (!entries.length) problems.push(`${where}:${para.line}: a Tested by list that names no test`);
      for (const { file, names } of entries) {
        if (file === null) {
          problems.push(`${where}:${para.line}: ${names.map((n) => n.name).join(', ')}: a test name before any file`);
          continue;
        }
        if (!names.length) problems.push(`${where}:${para.line}: \`${file}\` names no test (follow it with a test name)`);
        const found = read(file);
        if (!found) {
          problems.push(`${where}:${para.line}: \`${file}\` is not a file in the repository`);
          continue;
        }
        for (const { name } of names) {
          const ok = hasTest(found.path, found.text, name);
          if (ok === null) problems.push(`${where}:${para.line}: \`${file}\`: cannot look up tests in this kind of file`);
          else if (!ok) problems.push(`${where}:${para.line}: \`${file}\` has no test ${JSON.stringify(name)}`);
        }
      }
    }
  }
  return problems;
}
