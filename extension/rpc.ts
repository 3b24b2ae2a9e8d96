// What the provider needs from the sidecar connection: requests, and parts routed by requestId.
// The extension implements it on vscode-languageclient; tests implement it on a raw vscode-jsonrpc
// connection to the real sidecar, so the provider code under test is the code users run.
import type { CancellationToken, Disposable } from 'vscode';
import type { StreamPart } from './wire';

export interface Rpc {
  request<R>(method: string, params: unknown, token?: CancellationToken): Promise<R>;
  onParts(requestId: string, handler: (parts: StreamPart[]) => void): Disposable;
}

export interface Calibration {
  model: string;
  factor: number;
}

interface NotificationSource {
  onNotification(method: string, handler: (params: PartsNotification & Calibration) => void): unknown;
}

interface PartsNotification {
  requestId: string;
  parts: StreamPart[];
}

/** The sidecar's notifications: `gateway/parts` to the request they belong to, `gateway/calibration`
 * to whoever counts tokens. */
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
