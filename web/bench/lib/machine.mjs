// The machine a benchmark ran on, recorded in every result file (so the generated
// docs/benchmarks.md can say where each number comes from).
import os from 'node:os';
import { execFileSync } from 'node:child_process';

/** CPU, cores, memory, OS, Node, load average at start and the checkout's short commit (null outside git). */
export function machine(repoRoot) {
  const cpus = os.cpus();
  let commit = null;
  try {
    commit = execFileSync('git', ['-C', repoRoot, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
  } catch {
    // not a git checkout: the commit is just not recorded
  }
  return {
    cpu: cpus[0]?.model?.trim() ?? 'unknown',
    cores: cpus.length,
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    node: process.version,
    loadAverageAtStart: os.loadavg().map((x) => Number(x.toFixed(2))),
    commit,
  };
}
