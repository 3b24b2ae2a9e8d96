// What the provider needs from the sidecar connection: requests, and parts routed by requestId.
// The extension implements it on its session's vscode-jsonrpc connection (session.ts); tests
// implement it on a vscode-jsonrpc connection of their own to the real sidecar, so the provider code
// under test is the code users run. Every method's params and result are the contract's
// (extension/contract.ts).
import type { CancellationToken, Disposable } from 'vscode';
import type { Calibration, MetricsNotification, RpcMethods, RpcNotifications, StreamPart } from '../contract';
import { parseUsageRecord } from '../records';
import type { UsageRecord } from '../contract';

export type Method = keyof RpcMethods;
export type Params<M extends Method> = RpcMethods[M]['params'];
export type Result<M extends Method> = RpcMethods[M]['result'];

export interface Rpc {
  request<M extends Method>(method: M, params: Params<M>, token?: CancellationToken): Promise<Result<M>>;
  onParts(requestId: string, handler: (parts: StreamPart[]) => void): Disposable;
}

interface NotificationSource {
  onNotification<N extends keyof RpcNotifications>(method: N, handler: (params: RpcNotifications[N]) => void): unknown;
  onNotification(method: 'window/showMessage', handler: (params: { type?: unknown; message?: unknown } | undefined) => void): unknown;
}

/** The sidecar's notifications, each through the connection's `onNotification`: `gateway/parts` to
 * the request they belong to, `gateway/calibration` (a model's window moved) to the provider, which
 * fetches the model list again, `gateway/metrics` (the models' metrics changed) to the provider too,
 * `gateway/billed` to the status bar, `window/showMessage` to
 * onShowMessage. */
export class PartsRouter {
  private readonly handlers = new Map<string, (parts: StreamPart[]) => void>();
  onCalibration: (calibration: Calibration) => void = () => undefined;
  onMetrics: (metrics: MetricsNotification) => void = () => undefined;
  onBilled: (requestId: string, record: UsageRecord) => void = () => undefined;
  /** Told of each notification that is not the seam's shape (it is dropped). */
  onInvalid: (what: string) => void = () => undefined;
  /** Shows the sidecar's `window/showMessage` (LSP's MessageType: 1 error, 2 warning, else info)
   * through extension/notify.ts, which makes its text plain. */
  onShowMessage: ((type: number, message: string) => void) | undefined;

  /** Routes the notifications of a (re)started connection; subscriptions outlive connections. */
  attach(source: NotificationSource): void {
    source.onNotification('gateway/parts', (params) => {
      try {
        const { requestId, parts } = params;
        this.handlers.get(String(requestId))?.(parts);
      } catch (error) {
        // vscode-jsonrpc would log a handler's throw to its own logger: told here, and the stream goes on.
        this.onInvalid(`a gateway/parts notification could not be shown (${error instanceof Error ? error.message : String(error)})`);
      }
    });
    source.onNotification('gateway/calibration', (params) => this.onCalibration(params));
    source.onNotification('gateway/metrics', (params) => this.onMetrics(params));
    source.onNotification('gateway/billed', (params) => {
      const record = parseUsageRecord(params?.record);
      const id = params?.requestId;
      if (record && (typeof id === 'string' || typeof id === 'number')) this.onBilled(String(id), record);
      else this.onInvalid('a gateway/billed notification that is not a usage record was ignored');
    });
    source.onNotification('window/showMessage', (params: { type?: unknown; message?: unknown } | undefined) => {
      const { type, message } = params ?? {};
      if (typeof message === 'string') this.onShowMessage?.(typeof type === 'number' ? type : 3, message);
    });
  }

  subscribe(requestId: string, handler: (parts: StreamPart[]) => void): Disposable {
    this.handlers.set(requestId, handler);
    return { dispose: () => this.handlers.delete(requestId) };
  }
}
