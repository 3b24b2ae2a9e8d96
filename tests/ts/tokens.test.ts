import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Rpc } from '../../extension/rpc';
import { TokenCounter } from '../../extension/tokens';

function countingRpc(): { rpc: Rpc; calls: unknown[] } {
  const calls: unknown[] = [];
  const rpc: Rpc = {
    async request<R>(_method: string, params: unknown): Promise<R> {
      calls.push(params);
      const { texts } = params as { texts: unknown[] };
      return { counts: texts.map((t) => (typeof t === 'string' ? t.length : 99)) } as R;
    },
    onParts: () => ({ dispose() {} }),
  };
  return { rpc, calls };
}

test('misses asked together go in one request; repeats are answered from memory', async () => {
  const { rpc, calls } = countingRpc();
  const counter = new TokenCounter(rpc);
  const first = await Promise.all(['a', 'bb', 'ccc'].map((t) => counter.count('m', t)));
  assert.deepEqual(first, [1, 2, 3]);
  assert.equal(calls.length, 1);
  assert.equal(await counter.count('m', 'bb'), 2);
  assert.equal(calls.length, 1);
  await counter.count('other-model', 'bb');
  assert.equal(calls.length, 2, 'counts are per model');
});

test('a failed batch rejects its callers and is not remembered', async () => {
  let fail = true;
  const rpc: Rpc = {
    async request<R>(): Promise<R> {
      if (fail) throw new Error('down');
      return { counts: [5] } as R;
    },
    onParts: () => ({ dispose() {} }),
  };
  const counter = new TokenCounter(rpc);
  await assert.rejects(counter.count('m', 'x'));
  fail = false;
  assert.equal(await counter.count('m', 'x'), 5);
});

test('memory is bounded', async () => {
  const { rpc } = countingRpc();
  const counter = new TokenCounter(rpc, 2);
  for (const t of ['a', 'b', 'c']) await counter.count('m', t);
  const memo = (counter as unknown as { memo: Map<string, number> }).memo;
  assert.equal(memo.size, 2);
});
