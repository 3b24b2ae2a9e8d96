// The usage dashboard: the range asked of the sidecar, the CSV it exports, what the spend chart
// stacks, the page's Content-Security-Policy, and the panel's messages.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type * as vscode from 'vscode';
import * as stub from './vscode-stub';
import type { Rpc } from '../../extension/sidecar/rpc';
import type { UsageRecord } from '../../extension/contract';
import {
  cacheShare,
  csvField,
  MAX_MODELS,
  OTHER_MODELS,
  parseRange,
  rangeParams,
  savedByDay,
  spendByDay,
  toCsv,
  USAGE_LIMIT,
} from '../../extension/shared/dashboardData';
import { parseUsageRecord } from '../../extension/records';
import { contentSecurityPolicy, newNonce, dashboardHtml } from '../../extension/dashboardHtml';
import { Dashboard } from '../../extension/dashboard';

const today = new Date('2026-11-26T23:59:00Z');
const record = (fields: Partial<UsageRecord> = {}): UsageRecord => ({
  id: 'gen_1',
  time: '2026-11-26T08:00:00Z',
  model: 'openai/gpt-5',
  provider: 'openai',
  inputTokens: 100,
  outputTokens: 10,
  cachedTokens: 0,
  cacheWriteTokens: 0,
  reasoningTokens: 0,
  cost: 0.01,
  billed: true,
  byok: false,
  group: null,
  requestedModel: null,
  cacheSaved: null,
  ...fields,
});

test('range → gateway/usage params: last N days end today (UTC) and include it; custom ranges in order', () => {
  assert.deepEqual(rangeParams({ kind: 'last', days: 7 }, today), { since: '2026-11-20', until: '2026-11-26', limit: USAGE_LIMIT });
  assert.deepEqual(rangeParams({ kind: 'last', days: 30 }, today), { since: '2026-10-28', until: '2026-11-26', limit: USAGE_LIMIT });
  assert.deepEqual(rangeParams({ kind: 'last', days: 90 }, today), { since: '2026-08-29', until: '2026-11-26', limit: USAGE_LIMIT });
  assert.deepEqual(rangeParams({ kind: 'custom', from: '2026-01-01', until: '2026-01-31' }, today), {
    since: '2026-01-01',
    until: '2026-01-31',
    limit: USAGE_LIMIT,
  });
  assert.deepEqual(rangeParams({ kind: 'custom', from: '2026-02-10', until: '2026-02-01' }, today), {
    since: '2026-02-01',
    until: '2026-02-10',
    limit: USAGE_LIMIT,
  });
  assert.deepEqual(
    rangeParams({ kind: 'custom', from: '1900-01-01', until: '2026-01-01' }, today).since,
    '2016-01-05',
    'a span is capped at 3650 days, both ends counted',
  );
});

test('a range from the webview is checked: known presets and real calendar days only', () => {
  assert.deepEqual(parseRange({ kind: 'last', days: 30 }), { kind: 'last', days: 30 });
  assert.deepEqual(parseRange({ kind: 'custom', from: '2024-02-29', until: '2024-03-01' }), { kind: 'custom', from: '2024-02-29', until: '2024-03-01' });
  for (const bad of [
    { kind: 'last', days: 8 },
    { kind: 'last', days: '7' },
    { kind: 'custom', from: '2025-02-29', until: '2025-03-01' },
    { kind: 'custom', from: '2025-1-1', until: '2025-01-02' },
    { kind: 'custom', from: '2025-01-01' },
    null,
    'last 7',
  ]) {
    assert.equal(parseRange(bad), undefined, JSON.stringify(bad));
  }
});

test('CSV: commas, quotes and line breaks are quoted; a model name with a comma stays one field; formulas are defused', () => {
  assert.equal(csvField('plain'), 'plain');
  assert.equal(csvField('a,b'), '"a,b"');
  assert.equal(csvField('say "hi"'), '"say ""hi"""');
  assert.equal(csvField('two\nlines'), '"two\nlines"');
  assert.equal(csvField('=HYPERLINK("http://x")'), `"'=HYPERLINK(""http://x"")"`);
  assert.equal(csvField(-1), '-1', 'numbers are ours, never defused');
  assert.equal(csvField(null), '');
  const csv = toCsv([
    record({ model: 'acme/model, large', provider: null, cost: null, byok: null }),
    record({ id: 'gen_2', model: 'acme/"quoted"', cost: 0.0004, billed: false, group: '3f9a1c2e4b5d', cacheSaved: -0.0002 }),
    // A team routing rule's rewrite: the model that answered, then the one picked (issue 45 §1).
    record({ id: 'gen_3', model: 'acme/small', requestedModel: 'acme/large' }),
  ]);
  const lines = csv.split('\r\n');
  assert.equal(
    lines[0],
    'time,model,requested_model,provider,input_tokens,output_tokens,cached_tokens,cache_write_tokens,reasoning_tokens,cost_usd,cost_kind,byok,key_group,id,cache_saved_usd',
  );
  assert.equal(lines[1], '2026-11-26T08:00:00Z,"acme/model, large",,,100,10,0,0,0,,,,,gen_1,');
  assert.equal(lines[2], '2026-11-26T08:00:00Z,"acme/""quoted""",,openai,100,10,0,0,0,0.0004,estimated,false,3f9a1c2e4b5d,gen_2,-0.0002');
  assert.match(lines[3], /^2026-11-26T08:00:00Z,acme\/small,acme\/large,openai,/);
  assert.equal(lines[4], '', 'ends with a line break');
  assert.equal(lines.length, 5);
});

test('what the prompt cache saved: per day of the range, in total, and a record before it was kept counts nothing (issue 42 §4)', () => {
  const records = [
    record({ time: '2026-11-24T10:00:00Z', cachedTokens: 80, cacheWriteTokens: 10, cacheSaved: 0.5 }),
    record({ time: '2026-11-26T10:00:00Z', cachedTokens: 0, cacheWriteTokens: 90, cacheSaved: -0.25 }), // writes not paid off yet
    record({ time: '2026-11-26T11:00:00Z', cachedTokens: 60, cacheWriteTokens: 0, cacheSaved: 0.125 }),
    record({ time: '2026-11-26T12:00:00Z', cacheSaved: null }),
  ];
  assert.deepEqual(savedByDay(records, '2026-11-24', '2026-11-26'), { days: ['2026-11-24', '2026-11-25', '2026-11-26'], values: [0.5, 0, -0.125] });
  assert.deepEqual(cacheShare(records), { cached: 140, written: 100, fresh: 160, saved: 0.375 });
  // The seam: a negative saving is one; an absent one (an older sidecar) unknown; a non-finite one no record.
  assert.equal(parseUsageRecord({ ...record(), cacheSaved: -0.25 })?.cacheSaved, -0.25);
  const older: Partial<UsageRecord> = { ...record() };
  delete older.cacheSaved;
  assert.equal(parseUsageRecord(older)?.cacheSaved, null);
  assert.equal(parseUsageRecord({ ...record(), cacheSaved: Number.NaN }), undefined);
  assert.equal(parseUsageRecord({ ...record(), cacheSaved: '0.1' }), undefined);
});

test('spend per day: every day of the range, stacked by model, dearest first, the tail as other models', () => {
  const { days, series } = spendByDay(
    [
      record({ time: '2026-11-24T10:00:00Z', model: 'a', cost: 1 }),
      record({ time: '2026-11-26T10:00:00Z', model: 'a', cost: 2 }),
      record({ time: '2026-11-26T11:00:00Z', model: 'b', cost: 5 }),
      record({ time: '2026-11-25T23:30:00-02:00', model: 'b', cost: 1 }), // 01:30 UTC on the 26th
      record({ time: '2026-11-26T12:00:00Z', model: 'c', cost: null }),
    ],
    '2026-11-23',
    '2026-11-26',
  );
  assert.deepEqual(days, ['2026-11-23', '2026-11-24', '2026-11-25', '2026-11-26']);
  assert.deepEqual(series, [
    { model: 'b', values: [0, 0, 0, 6] },
    { model: 'a', values: [0, 1, 0, 2] },
  ]);
  const many = Array.from({ length: MAX_MODELS + 2 }, (_, i) => record({ model: `m${i}`, cost: i + 1 }));
  const stacked = spendByDay(many, '2026-11-26', '2026-11-26').series;
  assert.equal(stacked.length, MAX_MODELS);
  assert.deepEqual(stacked.at(-1), { model: OTHER_MODELS, values: [1 + 2 + 3] });
});

test('the page: strict CSP with a nonce, no remote source, no inline style or eval', () => {
  const nonce = newNonce();
  assert.notEqual(nonce, newNonce());
  assert.match(nonce, /^[A-Za-z0-9_-]{24}$/);
  const cspSource = 'https://file+.vscode-resource.vscode-cdn.net';
  const html = dashboardHtml({ cspSource, nonce, scriptUri: `${cspSource}/dist/webview/page.js`, styleUri: `${cspSource}/dist/webview/page.css` });
  const csp = /<meta http-equiv="Content-Security-Policy" content="([^"]+)">/.exec(html)![1];
  assert.equal(csp, contentSecurityPolicy({ cspSource, nonce }));
  assert.match(csp, /^default-src 'none'; /);
  assert.match(csp, new RegExp(`script-src 'nonce-${nonce}'(;|$)`));
  assert.doesNotMatch(csp, /unsafe-|\*|http:|data:/);
  const sources = [...csp.matchAll(/(https?:\S+)/g)].map((m) => m[1].replace(/;$/, ''));
  assert.deepEqual([...new Set(sources)], [cspSource], 'the only source is the webview’s own');
  const scripts = [...html.matchAll(/<script\b([^>]*)>/g)].map((m) => m[1]);
  assert.deepEqual(scripts, [` nonce="${nonce}" src="${cspSource}/dist/webview/page.js"`], 'one script, with the nonce, from the extension');
  assert.doesNotMatch(html, /\sstyle=|<style|\son[a-z]+=/i, 'no inline style or handler');
  assert.match(html, /<title>AI Gateway Usage<\/title>/);
});

test('the panel: a range from the page becomes gateway/usage, bad records are dropped and told, Export CSV writes what is shown', async () => {
  const asked: unknown[] = [];
  const rpc = {
    request: async (method: string, params: unknown) => {
      asked.push([method, params]);
      return { records: [record({ model: 'acme/a, b' }), { ...record(), cost: -1 }], dayTotal: 0.5, problem: null };
    },
  } as unknown as Rpc;
  const warnings: string[] = [];
  Dashboard.show(stub.Uri.file('/ext') as unknown as vscode.Uri, rpc, { warn: (m: string) => warnings.push(m) });
  const panel = stub.webviewPanels.at(-1)!;
  assert.equal(panel.title, 'AI Gateway Usage');
  assert.match(panel.webview.html, /src="file:\/\/\/ext\/dist\/webview\/page\.js"/);
  panel.fromPage({ type: 'range', range: { kind: 'custom', from: '2026-11-01', until: '2026-11-02' } });
  panel.fromPage({ type: 'range', range: { kind: 'custom', from: '2026-11-01', until: '<script>' } });
  await new Promise((resolve) => setTimeout(resolve, 10));
  assert.deepEqual(asked, [['gateway/usage', { since: '2026-11-01', until: '2026-11-02', limit: USAGE_LIMIT }]], 'a bad range is not asked');
  assert.deepEqual(panel.posted, [
    { type: 'data', since: '2026-11-01', until: '2026-11-02', records: [record({ model: 'acme/a, b' })], dayTotal: 0.5, problem: null, truncated: false },
  ]);
  assert.equal(warnings.length, 2, 'one for the dropped record, one for the bad message');
  stub.answers.saveDialog.push(stub.Uri.file('/tmp/usage.csv'));
  panel.fromPage({ type: 'export' });
  await new Promise((resolve) => setTimeout(resolve, 10));
  assert.equal(stub.writtenFiles.get('/tmp/usage.csv'), toCsv([record({ model: 'acme/a, b' })]));
  Dashboard.show(stub.Uri.file('/ext') as unknown as vscode.Uri, rpc, { warn: () => undefined });
  assert.equal(panel.revealed, 1, 'a second Show Usage brings the open panel forward');
});
