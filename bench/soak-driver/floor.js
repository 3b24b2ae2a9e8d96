// The host soak's baseline: the least a provider can do for the same session. It sends each request's
// whole history to the same gateway as plain input items and turns the stream's text deltas and tool
// calls into parts, with a length/4 token count and no sidecar, memo, retries or accounting. Run in
// a host of its own beside ours (bench/soak-host.mjs), it shows how the host's memory moves under the
// same turns when nothing of ours runs: V8 sizing the host's heap, not our extension.
const vscode = require('vscode');

const VENDOR = 'soak-floor';

/** Registers the floor's provider (its vendor is declared in package.json, as VS Code requires). */
function registerFloor(model) {
  const gateway = process.env.FAKE_GATEWAY_URL;
  const key = process.env.AI_GATEWAY_API_KEY ?? '';
  const info = {
    id: model,
    name: 'Soak floor',
    family: 'soak-floor',
    version: '1',
    maxInputTokens: 1_000_000,
    maxOutputTokens: 16_000,
    capabilities: { toolCalling: true },
  };
  return vscode.lm.registerLanguageModelChatProvider(VENDOR, {
    provideLanguageModelChatInformation: () => [info],
    provideTokenCount: (_model, value) => Math.ceil((typeof value === 'string' ? value : JSON.stringify(value.content)).length / 4),
    async provideLanguageModelChatResponse(_model, messages, options, progress, token) {
      const abort = new AbortController();
      const cancelled = token.onCancellationRequested(() => abort.abort());
      try {
        const body = {
          model,
          stream: true,
          input: messages.map((m) => ({ role: m.role === vscode.LanguageModelChatMessageRole.User ? 'user' : 'assistant', content: textOf(m) })),
          tools: (options.tools ?? []).map((t) => ({ type: 'function', name: t.name, description: t.description, parameters: t.inputSchema })),
        };
        const response = await fetch(`${gateway}/v1/responses`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, 'x-fake-scenario': 'soak' },
          body: JSON.stringify(body),
          signal: abort.signal,
        });
        if (!response.ok || !response.body) throw new Error(`the gateway answered ${response.status}`);
        let buffered = '';
        const decoder = new TextDecoder();
        for await (const chunk of response.body) {
          buffered += decoder.decode(chunk, { stream: true });
          let end;
          while ((end = buffered.indexOf('\n\n')) >= 0) {
            const block = buffered.slice(0, end);
            buffered = buffered.slice(end + 2);
            const data = block.split('\n').find((line) => line.startsWith('data: '));
            if (!data) continue;
            const event = JSON.parse(data.slice(6));
            if (event.type === 'response.output_text.delta') progress.report(new vscode.LanguageModelTextPart(event.delta));
            else if (event.type === 'response.output_item.done' && event.item?.type === 'function_call') {
              progress.report(new vscode.LanguageModelToolCallPart(event.item.call_id, event.item.name, JSON.parse(event.item.arguments || '{}')));
            } else if (event.type === 'response.completed') return;
          }
        }
        throw new Error('the stream ended before the answer did');
      } finally {
        cancelled.dispose();
      }
    },
  });
}

function textOf(message) {
  return message.content
    .map((part) => {
      if (part instanceof vscode.LanguageModelTextPart) return part.value;
      if (part instanceof vscode.LanguageModelToolCallPart) return JSON.stringify({ call: part.name, input: part.input });
      if (part instanceof vscode.LanguageModelToolResultPart) return part.content.map((c) => c.value ?? '').join('');
      return '';
    })
    .join('');
}

module.exports = { registerFloor, FLOOR_VENDOR: VENDOR };
