// What the provider needs from the sidecar connection: requests, and parts routed by requestId.
// The extension implements it on vscode-languageclient; tests implement it on a raw vscode-jsonrpc
// connection to the real sidecar, so the provider code under test is the code users run. Every
// method's params and result are the contract's (extension/contract.ts).
import type { CancellationToken, Disposable } from 'vscode';
import type { Calibration, RpcMethods, RpcNotifications, StreamPart } from './contract';

export type Method = keyof RpcMethods;
export type Params<M extends Method> = RpcMethods[M]['params'];
export type Result<M extends Method> = RpcMethods[M]['result'];

export interface Rpc {
  request<M extends Method>(method: M, params: Params<M>, token?: CancellationToken): Promise<Result<M>>;
  onParts(requestId: string, handler: (parts: StreamPart[]) => void): Disposable;
}

interface NotificationSource {
  onNotification<N extends keyof RpcNotifications>(method: N, handler: (params: RpcNotifications[N]) => void): unknown;
}

/** The sidecar's notifications: `gateway/parts` to the request they belong to, `gateway/calibration`
 * (a model's window moved) to the provider, which fetches the model list again. */
export class PartsRouter {
  private readonly handlers = new Map<string, (parts: StreamPart[]) => void>();
  onCalibration: (calibration: Calibration) => void = () => undefined;

  /** Routes the notifications of a (re)started connection; subscriptions outlive connections. */
  attach(source: NotificationSource): void {
    source.onNotification('gateway/parts', (params) => this.handlers.get(String(params.requestId))?.(params.parts));
    source.onNotification('gateway/calibration', (params) => this.onCalibration(params));
  }

  subscribe(requestId: string, handler: (parts: StreamPart[]) => void): Disposable {
    this.handlers.set(requestId, handler);
    return { dispose: () => this.handlers.delete(requestId) };
  }
}
