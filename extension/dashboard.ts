// The Show Usage command's webview: asks the sidecar for a range's records (gateway/usage), posts
// them to the page (extension/webview/page.ts draws them), and saves them as CSV on request.
import * as vscode from 'vscode';
import { fromRpcError } from './errors';
import { notify } from './notify';
import { parseUsageRecords } from './records';
import type { Rpc } from './sidecar/rpc';
import type { UsageRecord } from './contract';
import { FromWebview, parseRange, rangeParams, toCsv, ToWebview, USAGE_LIMIT } from './shared/dashboardData';
import { newNonce, dashboardHtml } from './dashboardHtml';

export const USAGE_VIEW_TYPE = 'vercelAiGateway.usage';

export class Dashboard {
  private static current: Dashboard | undefined;
  private records: UsageRecord[] = [];
  private since = '';
  private until = '';
  private asked = 0; // the latest range asked for: an older answer arriving late is dropped

  /** Opens the panel, or brings the open one to the front. */
  static show(extensionUri: vscode.Uri, rpc: Rpc, log: Pick<vscode.LogOutputChannel, 'warn'>): void {
    if (Dashboard.current) return Dashboard.current.panel.reveal();
    const root = vscode.Uri.joinPath(extensionUri, 'dist', 'webview');
    const panel = vscode.window.createWebviewPanel(USAGE_VIEW_TYPE, 'AI Gateway Usage', vscode.ViewColumn.Active, {
      enableScripts: true,
      localResourceRoots: [root],
    });
    Dashboard.current = new Dashboard(panel, root, rpc, log);
  }

  private constructor(
    private readonly panel: vscode.WebviewPanel,
    root: vscode.Uri,
    private readonly rpc: Rpc,
    private readonly log: Pick<vscode.LogOutputChannel, 'warn'>,
  ) {
    const { webview } = panel;
    webview.onDidReceiveMessage((message: unknown) => void this.receive(message));
    panel.onDidDispose(() => (Dashboard.current = undefined));
    webview.html = dashboardHtml({
      cspSource: webview.cspSource,
      nonce: newNonce(),
      scriptUri: webview.asWebviewUri(vscode.Uri.joinPath(root, 'page.js')).toString(),
      styleUri: webview.asWebviewUri(vscode.Uri.joinPath(root, 'page.css')).toString(),
    });
  }

  private async receive(message: unknown): Promise<void> {
    const m = message as { type?: unknown; range?: unknown } | null | undefined;
    if (m?.type === ('export' satisfies FromWebview['type'])) return this.exportCsv();
    const range = m?.type === 'range' ? parseRange(m.range) : undefined;
    if (!range) return this.log.warn('The usage page sent a message that is not one it sends; ignored.');
    const asked = ++this.asked;
    const params = rangeParams(range, new Date());
    try {
      const result = await this.rpc.request('gateway/usage', params);
      if (asked !== this.asked) return;
      const { records, dropped } = parseUsageRecords(result?.records);
      if (dropped) this.log.warn(`gateway/usage: ${dropped} records that are not usage records were dropped.`);
      // Unknown stays unknown: a history that cannot be read is not "$0.00 today".
      const dayTotal = typeof result?.dayTotal === 'number' && Number.isFinite(result.dayTotal) ? result.dayTotal : null;
      const problem = typeof result?.problem === 'string' ? result.problem.slice(0, 500) : null;
      [this.records, this.since, this.until] = [records, params.since!, params.until!];
      const truncated = records.length + dropped >= USAGE_LIMIT;
      this.post({ type: 'data', since: this.since, until: this.until, records, dayTotal, problem, truncated });
    } catch (error) {
      if (asked === this.asked) this.post({ type: 'error', message: `Could not read the usage history: ${fromRpcError(error).message}` });
    }
  }

  private post(message: ToWebview): void {
    void this.panel.webview.postMessage(message);
  }

  /** The records shown now, as CSV, where the user picks. */
  private async exportCsv(): Promise<void> {
    if (!this.since) return void notify('info', 'The usage history has not loaded yet: nothing to export.');
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
    const name = `ai-gateway-usage-${this.since}-to-${this.until}.csv`;
    const target = await vscode.window.showSaveDialog({
      defaultUri: folder ? vscode.Uri.joinPath(folder, name) : undefined,
      filters: { CSV: ['csv'] },
      title: 'Export usage as CSV',
    });
    if (!target) return;
    try {
      await vscode.workspace.fs.writeFile(target, new TextEncoder().encode(toCsv(this.records)));
      void notify('info', `Saved ${this.records.length} requests to ${target.fsPath}.`);
    } catch (error) {
      void notify('error', `Could not save the CSV: ${(error as Error).message}`);
    }
  }
}
