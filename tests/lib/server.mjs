// Starts a real icestream server for node-based tests: a free 127.0.0.1 port, a
// temporary data dir, waits for /health. stop() sends SIGTERM to that process only and
// waits for it; the data dir is removed.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, openSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

async function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

export async function startServer(binary, { extraArgs = [] } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'icestream-node-'));
  const dataDir = join(dir, 'data');
  const port = await freePort();
  const logPath = join(dir, 'server.log');
  const log = openSync(logPath, 'a');
  const proc = spawn(binary, ['serve', '--data-dir', dataDir, '--listen', `127.0.0.1:${port}`,
                              '--log-level', 'warn', ...extraArgs], { stdio: ['ignore', log, log] });
  const endpoint = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 20000;
  let exited = null;
  proc.on('exit', (code) => { exited = code; });
  while (true) {
    if (exited !== null) throw new Error(`server exited with ${exited}: ${readFileSync(logPath, 'utf8')}`);
    try {
      const r = await fetch(`${endpoint}/health`);
      if (r.ok) break;
    } catch { /* not up yet */ }
    if (Date.now() > deadline) {
      proc.kill('SIGKILL');
      throw new Error('server did not become healthy');
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    endpoint, dataDir, dir, proc,
    async stop() {
      if (exited === null) {
        const done = new Promise((r) => proc.on('exit', r));
        proc.kill('SIGTERM');
        const timer = setTimeout(() => proc.kill('SIGKILL'), 30000);
        await done;
        clearTimeout(timer);
      }
      rmSync(dir, { recursive: true, force: true });
    },
    log() { return readFileSync(logPath, 'utf8'); },
  };
}
