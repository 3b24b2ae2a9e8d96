// The stream workloads: a chat through the provider the shipped bundle registers (→ sidecar →
// gateway), beside an in-process fetch + SSE parse that reports the same parts, in the same run,
// against a gateway that flushes one event per HTTP chunk (and one that sends 64 KiB chunks).
import { gatewayRequests, hostCpuMs, median, model, now, percentile, processCpuMs, sidecarPids, vscode } from './host.mjs';

const RUNS = Number(process.env.BENCH_RUNS ?? 15);
const EVENTS = 5004;
const EXPECTED_TEXT = Array.from({ length: EVENTS - 3 }, (_, n) => ` word${n % 97}`).join('');

function progress(onText) {
  return {
    report(part) {
      if (part instanceof vscode.LanguageModelTextPart) onText(part.value);
    },
  };
}

/** Our path: VS Code calls the provider; parts come back through the sidecar. */
export async function viaProvider(provider, scenario, onText = () => {}, token = new vscode.CancellationTokenSource().token) {
  let text = '';
  const messages = [vscode.LanguageModelChatMessage.User('go')];
  await provider.provideLanguageModelChatResponse(
    model(`fake/${scenario}`),
    messages,
    { tools: [], toolMode: 1 },
    progress((t) => ((text += t), onText(t))),
    token,
  );
  return text;
}

/** The baseline: what an in-process TypeScript provider does — fetch, parse SSE, report parts. */
export async function direct(gateway, scenario, onText = () => {}) {
  const response = await fetch(`${gateway}/v1/responses`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: `fake/${scenario}`, input: [], stream: true }),
  });
  const decoder = new TextDecoder();
  const report = progress((t) => ((text += t), onText(t)));
  let buffer = '';
  let text = '';
  for await (const chunk of response.body) {
    buffer += decoder.decode(chunk, { stream: true });
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = frame
        .split('\n')
        .filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(5).trim())
        .join('\n');
      if (!data || data === '[DONE]') continue;
      const event = JSON.parse(data);
      if (event.type === 'response.output_text.delta') report.report(new vscode.LanguageModelTextPart(event.delta));
    }
  }
  return text;
}

async function measured(fn, pid) {
  const cpu = hostCpuMs();
  const side = pid ? processCpuMs(pid) : 0;
  const started = performance.now();
  const text = await fn();
  return { ms: performance.now() - started, host: hostCpuMs() - cpu, side: pid ? processCpuMs(pid) - side : 0, text };
}

export async function streamRows(gateway, ext) {
  const rows = [];
  for (const [scenario, label, target] of [
    [`chunked-${EVENTS}`, 'one HTTP chunk per event', 2.0],
    [`chunked64k-${EVENTS}`, '64 KiB chunks', 2.5],
  ]) {
    for (let i = 0; i < 3; i++) (await direct(gateway, scenario), await viaProvider(ext.provider, scenario));
    const a = [];
    const b = [];
    for (let i = 0; i < RUNS; i++) {
      a.push(await measured(() => direct(gateway, scenario)));
      b.push(await measured(() => viaProvider(ext.provider, scenario), ext.pid));
      if (a.at(-1).text !== EXPECTED_TEXT || b.at(-1).text !== EXPECTED_TEXT) throw new Error(`${scenario}: the text arrived incomplete`);
    }
    const ratio = median(b.map((r) => r.ms)) / median(a.map((r) => r.ms));
    rows.push({
      metric: `${EVENTS}-event stream, ${label}: ours vs in-process fetch + SSE`,
      value: `${median(b.map((r) => r.ms)).toFixed(1)} vs ${median(a.map((r) => r.ms)).toFixed(1)} ms (${ratio.toFixed(2)}×)`,
      target: `≤ ${target}×`,
      ok: ratio <= target,
    });
    const hostRatio = median(b.map((r) => r.host)) / median(a.map((r) => r.host));
    const sideMs = b.reduce((s, r) => s + r.side, 0) / b.length;
    rows.push({
      metric: `  extension-host CPU per stream (${label}): ours vs in-process; sidecar CPU`,
      value: `${median(b.map((r) => r.host)).toFixed(1)} vs ${median(a.map((r) => r.host)).toFixed(1)} ms (${hostRatio.toFixed(2)}×); sidecar ${sideMs.toFixed(0)} ms`,
      target: scenario.startsWith('chunked-') ? '≤ 0.5×' : '',
      ok: scenario.startsWith('chunked-') ? hostRatio <= 0.5 : undefined,
    });
  }
  rows.push(...(await firstPartRows(gateway, ext)));
  return rows;
}

/** Time to first part after the gateway wrote the first delta, per run, ours minus the baseline's. */
async function firstPartRows(gateway, ext) {
  const added = [];
  const lags = { ours: [], base: [] };
  const lastFirstDelta = async () => (await gatewayRequests(gateway)).at(-1).first_delta_at * 1000;
  for (let i = 0; i < RUNS * 2; i++) {
    let first = 0;
    await direct(gateway, 'ttfp', () => (first ||= now()));
    const base = first - (await lastFirstDelta());
    first = 0;
    await viaProvider(ext.provider, 'ttfp', () => (first ||= now()));
    const ours = first - (await lastFirstDelta());
    lags.base.push(base);
    lags.ours.push(ours);
    added.push(ours - base);
  }
  return [
    {
      metric: 'first part after the gateway wrote it, p50: ours vs in-process',
      value: `${median(lags.ours).toFixed(2)} vs ${median(lags.base).toFixed(2)} ms`,
      target: '',
      ok: undefined,
    },
    {
      metric: `added time to first part, per-run difference, p50 / p95 (${added.length} runs)`,
      value: `${median(added).toFixed(2)} / ${percentile(added, 95).toFixed(2)} ms`,
      target: '≤ 0.3 / ≤ 1 ms',
      ok: median(added) <= 0.3 && percentile(added, 95) <= 1,
    },
  ];
}

/** A chat sent as soon as the sidecar has started, against the same chat warm. */
export async function startRows(gateway, ext) {
  const cold = [];
  const warm = [];
  const scenario = 'chunked-1000';
  for (let i = 0; i < RUNS; i++) {
    await vscode.commands.executeCommand('vercelAiGateway.restartServer'); // resolves once initialize is answered
    cold.push((await measured(() => viaProvider(ext.provider, scenario))).ms);
    warm.push((await measured(() => viaProvider(ext.provider, scenario))).ms);
  }
  ext.pid = sidecarPids().at(-1);
  const ratio = median(cold) / median(warm);
  return [
    {
      metric: 'first chat right after the sidecar starts vs the same chat warm (1,000 events)',
      value: `${median(cold).toFixed(1)} vs ${median(warm).toFixed(1)} ms (${ratio.toFixed(2)}×)`,
      target: '≤ 1.5×',
      ok: ratio <= 1.5,
    },
  ];
}

/** A stream that is producing while a huge text is counted: its longest pause, and a cancel. */
export async function hugeCountRows(gateway, ext) {
  const huge = Array.from({ length: 400_000 }, (_, i) => `    const value${i % 1000} = compute(input[${i}], "chunk ${i % 97}");\n`).join('');
  const gpt5 = model('openai/gpt-5');
  const token = () => new vscode.CancellationTokenSource().token;
  const longestPause = async (during) => {
    let last = 0;
    let longest = 0;
    const counting = during?.();
    await viaProvider(ext.provider, 'paced-300-3', () => {
      const t = performance.now();
      if (last) longest = Math.max(longest, t - last);
      last = t;
    });
    await counting;
    return longest;
  };
  await ext.provider.provideTokenCount(gpt5, 'warm', token()); // as Copilot's first walk would have (the tokenizer loads once)
  const alone = [];
  const counted = [];
  for (let i = 0; i < 5; i++) {
    alone.push(await longestPause());
    counted.push(await longestPause(() => ext.provider.provideTokenCount(gpt5, `${huge}${i}`, token())));
  }
  // Cancel a stream while a huge text is being counted: the provider returns and the gateway sees
  // the connection close.
  const cancels = [];
  for (let i = 0; i < 5; i++) {
    const source = new vscode.CancellationTokenSource();
    const counting = ext.provider.provideTokenCount(gpt5, `${huge}cancel${i}`, token());
    const chat = viaProvider(ext.provider, 'paced-2000-2', () => {}, source.token).catch(() => '');
    await new Promise((r) => setTimeout(r, 150));
    const cancelledAt = now();
    source.cancel();
    await chat;
    const returned = now() - cancelledAt;
    await counting;
    // A chat held up so long that it never reached the gateway counts by when the provider returned.
    const seen = (await gatewayRequests(gateway)).filter((r) => r.scenario === 'paced-2000-2' && r.received_at * 1000 > cancelledAt - 1000).at(-1);
    cancels.push(Math.max(returned, !seen ? 0 : seen.client_closed_at ? seen.client_closed_at * 1000 - cancelledAt : Infinity));
  }
  return [
    {
      metric: `longest pause in a stream while ${(huge.length / 1e6).toFixed(0)} MB are counted (alone: ${median(alone).toFixed(0)} ms)`,
      value: `${Math.max(...counted).toFixed(0)} ms (worst of 5)`,
      target: '≤ 50 ms',
      ok: Math.max(...counted) <= 50,
    },
    {
      metric: 'cancel of that stream → the gateway sees the close',
      value: `${Math.max(...cancels).toFixed(0)} ms (worst of 5)`,
      target: '≤ 200 ms',
      ok: Math.max(...cancels) <= 200,
    },
  ];
}
