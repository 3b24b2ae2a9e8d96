// provideTokenCount is called thousands of times per agent iteration, one await at a time: answer
// repeats from memory, and send the misses that arrive together as one gateway/countTokens call.
import type { Rpc } from './rpc';
import type { WireMessage } from './wire';

interface Pending {
  model: string;
  item: string | WireMessage;
  key: string;
  resolve: (count: number) => void;
  reject: (error: unknown) => void;
}

export class TokenCounter {
  private readonly memo = new Map<string, number>();
  private pending: Pending[] = [];

  constructor(
    private readonly rpc: Rpc,
    private readonly capacity = 100_000,
  ) {}

  count(model: string, item: string | WireMessage): Promise<number> {
    const key = `${model}\u0000${typeof item === 'string' ? item : JSON.stringify(item)}`;
    const known = this.memo.get(key);
    if (known !== undefined) return Promise.resolve(known);
    return new Promise((resolve, reject) => {
      if (this.pending.push({ model, item, key, resolve, reject }) === 1) queueMicrotask(() => void this.flush());
    });
  }

  private async flush(): Promise<void> {
    const batch = this.pending;
    this.pending = [];
    for (const [model, group] of groupByModel(batch)) {
      try {
        const { counts } = await this.rpc.request<{ counts: number[] }>('gateway/countTokens', {
          model,
          texts: group.map((p) => p.item),
        });
        group.forEach((p, i) => {
          this.remember(p.key, counts[i]);
          p.resolve(counts[i]);
        });
      } catch (error) {
        group.forEach((p) => p.reject(error));
      }
    }
  }

  private remember(key: string, count: number): void {
    if (this.memo.size >= this.capacity) {
      const oldest = this.memo.keys().next().value;
      if (oldest !== undefined) this.memo.delete(oldest);
    }
    this.memo.set(key, count);
  }
}

function groupByModel(batch: Pending[]): Map<string, Pending[]> {
  const groups = new Map<string, Pending[]>();
  for (const p of batch) groups.set(p.model, [...(groups.get(p.model) ?? []), p]);
  return groups;
}
