// Errors are classified once, in the sidecar (ErrorData: {kind, status, retryAfter}); this file renders them.
// Each kind's words (what happened and where to fix it) are the sidecar's message: a `gateway_budget`
// refusal names the budget and the Vercel dashboard's page as plain text, and has no button (waiting
// or retrying does not help; rfcs/0006-spend.md, "The gateway's budgets"); a `routing_rule` deny says
// that a rule of the team refused the model, that the team's Owners and Members can change it, and
// where, as plain text too (rfcs/0003-rpc-contract.md, "A team's routing rules").
import * as vscode from 'vscode';
import { COMMANDS } from './config';
import { ERROR_KINDS, ErrorKind, type BudgetScope } from './contract';
import { notify, plain } from './notify';

/** The sidecar's kinds, and the extension's own for failures that never reach it: `setup` (the
 * first-start setup) and `sidecar` (the connection to it). */
export type Kind = ErrorKind | 'setup' | 'sidecar';

/** A button of a notification: VS Code hands back the one picked, which runs its command. */
export interface Button extends vscode.MessageItem {
  command: string;
  args?: unknown[];
}

export const MANAGE_KEY: Button = { title: 'Manage API Key', command: COMMANDS.manage };
export const SHOW_LOGS: Button = { title: 'Show Logs', command: COMMANDS.showLogs };
export const RESTART_SERVER: Button = { title: 'Restart Server', command: COMMANDS.restartServer };
/** Opens a file picker for a Python executable (extension/sidecar/setup.ts chooseInterpreter). */
export const CHOOSE_INTERPRETER: Button = { title: 'Choose Interpreter', command: COMMANDS.chooseInterpreter };
/** Starts the sidecar again, its setup included (a Python installed, the network back). */
export const RETRY: Button = { title: 'Retry', command: COMMANDS.restartServer };

export class GatewayChatError extends Error {
  constructor(
    message: string,
    readonly kind: Kind,
    readonly status: number | null,
    /** gateway_budget: which of the gateway's budgets refused (null: its answer did not say). */
    readonly budget: BudgetScope | null = null,
  ) {
    // Copilot draws it as markdown in the chat, and the text is often the gateway's own.
    super(plain(message));
    this.name = 'Vercel AI Gateway';
    // Copilot Chat shows a provider's error as `${message}: ${stack}` whenever the stack is set, so
    // the message would appear twice, followed by our bundle's frames (rfcs/0003, "`gateway/chat`").
    this.stack = '';
  }
}

const CANCELLED = -32800;

export function isCancellation(error: unknown): boolean {
  return (error as { code?: number } | undefined)?.code === CANCELLED || error instanceof vscode.CancellationError;
}

/** A JSON-RPC failure from the sidecar → one clear error. Connection failures become `sidecar`;
 * the connection (extension/sidecar/session.ts) has already told most of them as what happened. */
export function fromRpcError(error: unknown): GatewayChatError {
  if (error instanceof GatewayChatError) return error;
  const e = error as { message?: string; data?: { kind?: unknown; status?: number | null; budget?: unknown } } | undefined;
  const data = e?.data;
  if (data && typeof data.kind === 'string') {
    // A kind outside the closed list would be a sidecar bug: told as one rather than trusted.
    const kind = isErrorKind(data.kind) ? data.kind : 'internal';
    const budget = kind === 'gateway_budget' && isBudgetScope(data.budget) ? data.budget : null;
    return new GatewayChatError(e?.message ?? 'The request failed.', kind, data.status ?? null, budget);
  }
  const detail = e?.message ?? String(error);
  return new GatewayChatError(
    `The Vercel AI Gateway sidecar did not answer (${detail}). Try again; if it keeps failing, run 'Vercel AI Gateway: Show Logs'.`,
    'sidecar',
    null,
  );
}

function isErrorKind(kind: string): kind is ErrorKind {
  return (ERROR_KINDS as readonly string[]).includes(kind);
}

const BUDGET_SCOPES: readonly BudgetScope[] = ['key', 'team', 'project', 'user'];

function isBudgetScope(value: unknown): value is BudgetScope {
  return typeof value === 'string' && (BUDGET_SCOPES as readonly string[]).includes(value);
}

const shown = new Set<string>();

/** Shows an error once per window: a failure met again without the user doing anything (VS Code asks
 * for the model list again and again, each ask starts the sidecar again) is in the log and in the
 * chat, not in another notification. What the user does to retry (a button, a command, a setting)
 * calls forgetShown, so its outcome is shown. */
export function showOnce(message: string, ...buttons: Button[]): void {
  if (shown.has(message)) return;
  shown.add(message);
  showError(message, ...buttons);
}

export function forgetShown(): void {
  shown.clear();
}

/** Shows an error with its buttons, without blocking the caller (a chat throws it, too). */
export function showError(message: string, ...buttons: Button[]): void {
  void notify('error', message, ...buttons).then((picked) => {
    if (picked) void vscode.commands.executeCommand(picked.command, ...(picked.args ?? []));
  });
}
