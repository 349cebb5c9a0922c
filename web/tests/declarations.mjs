// What index.d.ts declares, read from its text (the file is hand-written in one style: one
// `export` per top-level declaration, class members two spaces in). Used by the package test
// to check that the typed usage file and the built package cover every declaration.

/** Names of every top-level export (values and types). */
export function exportedNames(dts) {
  return [...dts.matchAll(/^export (?:declare )?(?:function|const|class|type|interface) ([A-Za-z_$][\w$]*)/gm)].map((m) => m[1]).filter((n, i, all) => all.indexOf(n) === i);
}

/** Names of the exports that exist at run time (functions, constants, classes). */
export function valueNames(dts) {
  return [...dts.matchAll(/^export declare (?:function|const|class) ([A-Za-z_$][\w$]*)/gm)].map((m) => m[1]).filter((n, i, all) => all.indexOf(n) === i);
}

/** `{ ClassName: [member, ...] }` for every exported class (constructor left out). */
export function classMembers(dts) {
  const out = {};
  for (const m of dts.matchAll(/^export declare class ([A-Za-z_$][\w$]*)[^{]*\{\n([\s\S]*?)^\}/gm)) {
    const names = [...m[2].matchAll(/^ {2}(?:readonly |static )*([A-Za-z_$][\w$]*)\??\s*[(:<]/gm)].map((x) => x[1]);
    out[m[1]] = names.filter((n, i, all) => n !== 'constructor' && all.indexOf(n) === i);
  }
  return out;
}

/**
 * Modules whose top level runs statements with effects beyond their own declarations (a call
 * or an assignment as a statement, e.g. patching another module's classes): the ones a
 * bundler must not drop, so package.json's `sideEffects` has to name them.
 */
export function hasTopLevelEffects(source) {
  return source.split('\n').some((line) => /^(?!(?:import|export|function|async|class|const|let|var)\b)[A-Za-z_$[(]/.test(line));
}
