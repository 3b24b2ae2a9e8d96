// The spend guard's question. The sidecar refuses a request over a limit before anything goes
// upstream (error kind `spend_limit`); the user decides here, and a Send is remembered
// (extension/approval.ts) so the next steps of an agent loop go through without asking again.
import * as vscode from 'vscode';
import { settingId } from './config';
import type { Refusal } from './spendTypes';

export type SpendAnswer = 'send' | 'cancel' | 'change';

interface Choice extends vscode.MessageItem {
  answer: SpendAnswer;
}
const SEND: Choice = { title: 'Send', answer: 'send' };
const CHANGE: Choice = { title: 'Change limit', answer: 'change' };
// Escape and the dialog's close button answer this one too.
const CANCEL: Choice = { title: 'Cancel', answer: 'cancel', isCloseAffordance: true };

/** Asks; "Change limit" opens the limit that refused, and the request is not sent. */
export async function askToSend(refusal: Refusal): Promise<SpendAnswer> {
  const detail =
    refusal.scope === 'day'
      ? `Spent today (UTC): $${refusal.spentToday.toFixed(2)}. Send lets requests up to twice this estimate through for 10 minutes.`
      : 'Send lets requests up to twice this estimate through for 10 minutes.';
  const picked = await vscode.window.showWarningMessage(refusal.message, { modal: true, detail }, SEND, CHANGE, CANCEL);
  const answer = picked?.answer ?? 'cancel';
  if (answer === 'change') {
    const name = refusal.scope === 'day' ? 'spend.maxDailyCost' : 'spend.maxRequestCost';
    void vscode.commands.executeCommand('workbench.action.openSettings', settingId(name));
  }
  return answer;
}
