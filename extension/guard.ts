// The spend guard's question. The sidecar refuses a request over a limit before anything goes
// upstream (error kind `spend_limit`); the user decides here, and a Send is remembered
// (extension/approval.ts) so the next steps of an agent loop go through without asking again.
import * as vscode from 'vscode';
import { BILLED_BEYOND_TOKENS, Setting, setting, settingId } from './config';
import { notify } from './notify';
import { dollars } from './shared/money';
import type { Refusal } from './records';

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
  const detail = detailOf(refusal) + leftOut(refusal);
  const picked = await notify('warning', refusal.message, { modal: true, detail }, SEND, CHANGE, CANCEL);
  const answer = picked?.answer ?? 'cancel';
  if (answer === 'change') void vscode.commands.executeCommand('workbench.action.openSettings', settingId(limitOf(refusal)));
  return answer;
}

/** What a Send lets through (extension/approval.ts), under the sidecar's sentence. */
function detailOf(refusal: Refusal): string {
  switch (refusal.scope) {
    case 'request':
      return 'Send lets requests up to twice this estimate through for 10 minutes. The daily limit still applies to each.';
    case 'day': {
      const spent = refusal.spentToday === null ? '' : `Spent today (UTC): ${dollars(refusal.spentToday, 'cents')}. `;
      return `${spent}Send lets this request through; the next one is checked against the daily limit again.`;
    }
    case 'unpriced':
      return 'Send lets requests to this model through for 10 minutes without a cost check.';
  }
}

/** What the estimate leaves out, when a setting the gateway bills beyond token prices is on. */
function leftOut(refusal: Refusal): string {
  if (refusal.estimate === null) return ''; // no estimate to qualify
  const on = BILLED_BEYOND_TOKENS.filter((name) => {
    const value = setting<unknown>(name);
    return value === true || (typeof value === 'string' && value !== '') || (Array.isArray(value) && value.length > 0);
  });
  if (!on.length) return '';
  return `\n\nThe estimate is token prices only. What the gateway may charge on your plan for ${on.map(settingId).join(', ')} is not in it; the billed cost is.`;
}

/** The setting that refused: for a model without a price, the request limit when one is set. */
function limitOf(refusal: Refusal): Setting {
  if (refusal.scope === 'day') return 'spend.maxDailyCost';
  if (refusal.scope === 'request' || setting<number | null>('spend.maxRequestCost') != null) return 'spend.maxRequestCost';
  return 'spend.maxDailyCost';
}
