// Issue 26 §2: a workspace that sets a setting which changes what requests cost is named to the user
// once per set of values; names only, never the repository's text.
import assert from 'node:assert/strict';
import { afterEach, test } from 'node:test';
import * as stub from './vscode-stub';
import type * as vscode from 'vscode';
import { tellWorkspaceCostly } from '../../extension/overrides';

afterEach(() => {
  for (const key of Object.keys(stub.workspaceSettings)) delete stub.workspaceSettings[key];
  stub.shownInfos.length = 0;
});

test('told once per workspace and set of values; names only', async () => {
  const state = new stub.Memento() as unknown as vscode.Memento;
  await tellWorkspaceCostly(state);
  assert.equal(stub.shownInfos.length, 0, 'nothing set, nothing said');
  stub.workspaceSettings['vercelAiGateway.reasoningEffort'] = 'high';
  stub.workspaceSettings['vercelAiGateway.attribution.tags'] = ['[open](command:workbench.action.terminal.new)'];
  stub.workspaceSettings['vercelAiGateway.logLevel'] = 'trace'; // harmless: not told
  await tellWorkspaceCostly(state);
  assert.equal(stub.shownInfos.length, 1);
  const [told] = stub.shownInfos;
  assert.match(told.message, /change what your Vercel AI Gateway requests cost: reasoningEffort, attribution\.tags\./);
  assert.doesNotMatch(told.message, /command:|high/, "the repository's values are not shown");
  await tellWorkspaceCostly(state);
  assert.equal(stub.shownInfos.length, 1, 'the same values: not again');
  stub.workspaceSettings['vercelAiGateway.reasoningEffort'] = 'xhigh';
  await tellWorkspaceCostly(state);
  assert.equal(stub.shownInfos.length, 2, 'a changed value is told again');
});
