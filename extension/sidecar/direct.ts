// Requests sent past vscode-languageclient, for the one Copilot sends by the thousand, one awaited call
// at a time: a token count. Through the client a count's round trip pays the client's async wrappers,
// vscode-jsonrpc's write queue (a setImmediate) and two pipe writes on the way out, and on the way
// back the reader's hand-over and the connection's setImmediate queue (rfcs/0005-performance.md,
// "The round trip"). Here the request is one write in the same turn (FrameWriter), and its response is
// taken from the reader as it is read, as `gateway/parts` are (frames.ts). Ids are strings with a
// prefix vscode-jsonrpc never uses (its ids are numbers), so the two never answer each other's.
import { ErrorCodes, ResponseError } from 'vscode-languageclient/node';
import type { FrameWriter } from './frames';

const PREFIX = 'direct:';

interface Waiting {
  resolve: (result: unknown) => void;
  reject: (error: Error) => void;
}

export class DirectRequests {
  private next = 0;
  private readonly waiting = new Map<string, Waiting>();
  private closed = false;

  constructor(private readonly writer: FrameWriter) {}

  /** Fails when no answer came within `ms` (lost, or answered under another id): the answer, should
   * it come later, is then dropped. */
  request(method: string, params: object, ms: number): Promise<unknown> {
    if (this.closed) return Promise.reject(gone());
    const id = `${PREFIX}${++this.next}`;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        if (this.waiting.delete(id)) reject(new Error(`The sidecar did not answer ${method} within ${ms / 1000} s.`));
      }, ms);
      const done = () => clearTimeout(timer);
      this.waiting.set(id, {
        resolve: (result) => (done(), resolve(result)),
        reject: (error) => (done(), reject(error)),
      });
      this.writer.send({ jsonrpc: '2.0', id, method, params }, (error) => {
        if (!error || !this.waiting.delete(id)) return;
        done();
        reject(new Error(`Could not write to the sidecar (${error.message})`));
      });
    });
  }

  /** A message as the reader reads it: true when it is the response to one of these requests (it is
   * then handled here, also when nobody waits for it any more). The bytes come from another process:
   * a response that is neither a result nor a well-formed error rejects its request. */
  take(message: object): boolean {
    const { id, method } = message as { id?: unknown; method?: unknown };
    if (typeof id !== 'string' || !id.startsWith(PREFIX) || method !== undefined) return false;
    const waiting = this.waiting.get(id);
    if (!waiting) return true;
    this.waiting.delete(id);
    const { result, error } = message as { result?: unknown; error?: unknown };
    if (error !== undefined) {
      const { code, message: text, data } = (error ?? {}) as { code?: unknown; message?: unknown; data?: unknown };
      if (Number.isSafeInteger(code) && typeof text === 'string') waiting.reject(new ResponseError(code as number, text, data));
      else waiting.reject(new Error('The sidecar answered with an error that is not a JSON-RPC error'));
    } else if (result !== undefined) {
      waiting.resolve(result);
    } else {
      waiting.reject(new Error('The sidecar answered without a result or an error'));
    }
    return true;
  }

  /** The process is gone: what waits fails as vscode-jsonrpc fails its own pending requests (the
   * session explains that error as the sidecar stopping). */
  close(): void {
    this.closed = true;
    const waiting = [...this.waiting.values()];
    this.waiting.clear();
    for (const { reject } of waiting) reject(gone());
  }
}

function gone(): Error {
  return new ResponseError(ErrorCodes.PendingResponseRejected, 'Pending response rejected since connection got disposed');
}
