// The claim map's checker (scripts/claim-map.mjs) on small made-up chapters and test files: a
// wrong test name and a section without a list are problems; names that exist, per-backend JS
// titles and marked sections pass. Run by scripts/book.sh: node --test scripts/
import test from 'node:test';
import assert from 'node:assert/strict';
import { claimProblems, jsTitles, titleStartsWith } from './claim-map.mjs';

const files = {
  'crates/x/tests/a.rs': '#[test]\nfn trains_on_cpu() {}\nfn helper() {}\n',
  'web/tests/b.test.mjs': [
    "for (const backend of ['webgpu', 'webgl']) {",
    '  test(`${backend}: a model trains`, async () => {});',
    '}',
    "test('page server: security headers', { timeout: 1 }, async () => {});",
    "test('fit ' + kind + ' stops', () => {});",
  ].join('\n'),
  'scripts/c.sh': 'echo "== a federation over TLS: 4 rounds"\n',
};
const read = (span) => (files[span] ? { path: span, text: files[span] } : null);
const check = (md) => claimProblems('x.md', md, read);

test('a section whose tests exist passes; a marked section and an empty one need no list', () => {
  const md = [
    '# Page',
    '<!-- no behaviour claims: a table of contents -->',
    'Read on.',
    '## Empty',
    '## Training',
    'It trains.',
    '',
    'Tested by: `crates/x/tests/a.rs` `trains_on_cpu`, `web/tests/b.test.mjs` "webgl: a model",',
    '"page server: security", "fit cancelled stops"; `scripts/c.sh` "a federation over TLS"',
  ].join('\n');
  assert.deepEqual(check(md), []);
});

test('a wrong test name is a problem line naming the file and the name', () => {
  const p = check('## S\nIt trains.\n\nTested by: `crates/x/tests/a.rs` `trains_on_gpu`, `trains_on_cpu`\n');
  assert.deepEqual(p, ['x.md:4: `crates/x/tests/a.rs` has no test "trains_on_gpu"']);
  const js = check('## S\nIt trains.\n\nTested by: `web/tests/b.test.mjs` "metal: a model trains"\n');
  assert.equal(js.length, 1);
  assert.match(js[0], /has no test "metal: a model trains"/);
  const sh = check('## S\nx\n\nTested by: `scripts/c.sh` "a federation over plain HTTP"\n');
  assert.match(sh[0], /has no test/);
});

test('a section without a list, a missing file and a file without names are problem lines', () => {
  assert.deepEqual(check('# Page\nIt does things.\n'), [
    'x.md:1: section "Page" has no Tested by list (name its tests, or mark it <!-- no behaviour claims: WHY -->)',
  ]);
  const p = check('## S\nx\n\nTested by: `crates/x/tests/gone.rs` `a`, `crates/x/tests/a.rs`\n');
  assert.deepEqual(p, [
    'x.md:4: `crates/x/tests/gone.rs` is not a file in the repository',
    'x.md:4: `crates/x/tests/a.rs` names no test (follow it with a test name)',
  ]);
});

test('a remark in parentheses names no test; a marker quoted in a code span does not mark the section', () => {
  assert.deepEqual(check('## S\nx\n\nTested by: `crates/x/tests/a.rs` `trains_on_cpu` (like `crates/x/tests/other.rs`)\n'), []);
  const p = check('## S\nWrite `<!-- no behaviour claims: WHY -->` on such a section.\n');
  assert.equal(p.length, 1);
  assert.match(p[0], /has no Tested by list/);
});

test('per-backend titles count as each loop value; other holes match any text', () => {
  const [perBackend, literal, concat] = jsTitles(files['web/tests/b.test.mjs']);
  assert.ok(titleStartsWith(perBackend, 'webgpu: a model trains'));
  assert.ok(titleStartsWith(perBackend, 'webgl'));
  assert.ok(!titleStartsWith(perBackend, 'cpu: a model trains'));
  assert.ok(titleStartsWith(literal, 'page server: security headers'));
  assert.ok(!titleStartsWith(literal, 'page server: security headers on'));
  assert.ok(titleStartsWith(concat, 'fit anything at all stops'));
});
