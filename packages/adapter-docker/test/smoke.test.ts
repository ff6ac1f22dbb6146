import { describe, expect, it } from 'vitest';
import { unless } from '@sandstream/test-support/skips';
import { createDockerSandbox } from '../src/index.js';
import { SKIP, useEngine } from './engine.js';

const file = useEngine();

unless(describe, SKIP)('smoke', () => {
  it('runs', async () => {
    const c = await file.container();
    const sb = await createDockerSandbox({ docker: file.docker, container: c.id });
    const r = await sb.run(['sh', '-c', 'echo hi; echo err >&2; exit 3']);
    console.log(r);
    const t0 = performance.now();
    for (let i = 0; i < 5; i++) await sb.run(['true']);
    console.log('true x5', performance.now() - t0);
    const bad = await sb.run(['true'], { cwd: '/nonexistent' }).catch((e) => e);
    console.log(bad);
    const cat = await sb.run(['cat'], { input: 'abc' });
    console.log(cat.stdoutText);
    await sb.close();
    expect(r.exitCode).toBe(3);
  }, 60_000);
});
