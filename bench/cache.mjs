// What an agent session costs (issue 42; rfcs/0005-performance.md, "What an agent session costs"):
// the long session of bench/requests.mjs, 30 requests, sent through the built bundle's provider and
// the real sidecar to the fake gateway's `/cache/` route, where a provider's prompt cache bills each
// request as the provider would (tests/fake_cache.py). On the fake Claude model: the settings as a
// user has them, beside the same session with caching off (the baseline, same run), today's opt-in
// `routing.caching: "auto"`, and the bound a rolling breakpoint gives (computed from the session's
// own input tokens: every request reads all of the previous request's input). On the fake OpenAI
// model: two sessions, for the cache key each request carries and whether each body extends the last.
import { activate, gatewayRequests, model, storageDir, vscode } from './host.mjs';
import { messagesOf, session } from './requests.mjs';

export const CACHE_REQUESTS = 30;
const FROM = 11; // requests FROM…CACHE_REQUESTS: the session past its first few, where the cache must pay
const CLAUDE = 'anthropic/fake-claude';
const GPT = 'openai/fake-gpt';
const READ_TARGET = 0.8;
const COST_TARGET = 0.5;
const ignore = { report() {} };

/** One session on `modelId`: its requests in order, each the fake's log entry (the cache's record). */
async function runSession(gateway, provider, modelId, run, requests) {
  const { tools, history, requests: sizes } = session(run);
  for (let i = 0; i < requests; i++) {
    const messages = messagesOf(history, sizes[i]);
    await provider.provideLanguageModelChatResponse(model(modelId), messages, { tools, toolMode: 1 }, ignore, new vscode.CancellationTokenSource().token);
  }
  const log = (await gatewayRequests(gateway)).filter((e) => e.cache && e.body?.model === modelId).slice(-requests);
  await fetch(`${gateway}/_reset`, { method: 'POST', body: '{}' }); // the log keeps every body; the cache starts empty
  if (log.length !== requests) throw new Error(`the gateway saw ${log.length} of ${requests} requests`);
  return log.map((e) => ({ ...e.cache, key: e.body.prompt_cache_key, affinity: e.headers['x-session-affinity'] }));
}

/** A session under `settings` (over the bench's), on an activation of its own. */
async function withSettings(gateway, settings, run) {
  const ext = await activate(storageDir(), gateway, { 'vercelAiGateway.baseUrl': `${gateway}/cache/v1`, ...settings });
  try {
    return await run(ext.provider);
  } finally {
    await ext.deactivate();
    for (const name of Object.keys(settings)) delete vscode.settings[name];
  }
}

/** Catalogue prices per token, as the fake lists them. */
async function prices(gateway, id) {
  const list = await (await fetch(`${gateway}/cache/v1/models`)).json();
  const p = list.data.find((m) => m.id === id).pricing;
  return { input: Number(p.input), read: Number(p.input_cache_read ?? p.input), write: Number(p.input_cache_write ?? p.input) };
}

/** Share of input read from the cache in requests FROM…end, and the session's input cost. */
export function summary(log, price) {
  const late = log.slice(FROM - 1);
  const sum = (xs, f) => xs.reduce((n, x) => n + f(x), 0);
  const cost = sum(
    log,
    (r) => (r.input_tokens - r.cached_tokens - r.cache_write_tokens) * price.input + r.cached_tokens * price.read + r.cache_write_tokens * price.write,
  );
  return { read: sum(late, (r) => r.cached_tokens) / sum(late, (r) => r.input_tokens), cost, uncached: sum(log, (r) => r.input_tokens * price.input) };
}

/** The bound: a rolling breakpoint at the end of every request, so each reads all of the one before
 * and writes only what it added (the first writes all of its input). */
export function rollingBound(log) {
  return log.map((r, i) => {
    const before = i ? log[i - 1].input_tokens : 0;
    return { input_tokens: r.input_tokens, cached_tokens: before, cache_write_tokens: r.input_tokens - before };
  });
}

/** Per request after the first: is the raw body, outside its `input` array, byte-identical to the
 * one before, with the one before's input items, byte for byte, as its first items? */
export function extendsPrevious(log) {
  return log.slice(1).map((r, i) => {
    const prev = log[i];
    return r.outside_sha === prev.outside_sha && prev.item_shas.every((sha, k) => r.item_shas[k] === sha);
  });
}

const pct = (x) => `${(100 * x).toFixed(1)} %`;
const usd = (x) => `$${x.toFixed(3)}`;

export async function cacheRows(gateway) {
  const claude = await prices(gateway, CLAUDE);
  const run = (settings, id, name, requests = CACHE_REQUESTS) =>
    withSettings(gateway, settings, (provider) => runSession(gateway, provider, id, name, requests));
  const byDefault = await run({}, CLAUDE, 'cache-default');
  const off = await run({ 'vercelAiGateway.routing.caching': 'off' }, CLAUDE, 'cache-off');
  const auto = await run({ 'vercelAiGateway.routing.caching': 'auto' }, CLAUDE, 'cache-auto');
  const [a, b] = await withSettings(gateway, {}, async (provider) => [
    await runSession(gateway, provider, GPT, 'cache-gpt-a', CACHE_REQUESTS),
    await runSession(gateway, provider, GPT, 'cache-gpt-b', 10),
  ]);
  const baseline = summary(off, claude).cost;
  const mine = summary(byDefault, claude);
  const opted = summary(auto, claude);
  const bound = summary(rollingBound(byDefault), claude);
  const offRead = summary(off, claude).read;
  const keysA = new Set(a.map((r) => r.key));
  const keysB = new Set(b.map((r) => r.key));
  const keyA = [...keysA][0];
  const oneKey = keysA.size === 1 && keysB.size === 1 && typeof keyA === 'string' && keyA.length > 0 && keyA.length <= 64 && keyA !== [...keysB][0];
  const extended = extendsPrevious(a);
  const gpt = summary(a, await prices(gateway, GPT));
  const tokens = (log) => `${(log[0].input_tokens / 1000).toFixed(1)}K → ${(log.at(-1).input_tokens / 1000).toFixed(1)}K tokens`;
  return [
    {
      metric: `Claude agent session, ${CACHE_REQUESTS} requests (${tokens(byDefault)}), default settings: input read from the cache, requests ${FROM}–${CACHE_REQUESTS}`,
      value: pct(mine.read),
      target: `≥ ${100 * READ_TARGET} %`,
      ok: mine.read >= READ_TARGET,
    },
    {
      metric: '  its input cost ÷ the same session with caching off (catalogue prices: fresh, read, write)',
      value: `${(mine.cost / baseline).toFixed(2)}× (${usd(mine.cost)} vs ${usd(baseline)})`,
      target: `≤ ${COST_TARGET}×`,
      ok: mine.cost / baseline <= COST_TARGET,
    },
    { metric: '  routing.caching "off": input read from the cache', value: pct(offRead), target: '0 %', ok: offRead === 0 },
    {
      metric: '  routing.caching "auto": read, requests 11–30; cost ÷ caching off',
      value: `${pct(opted.read)}; ${(opted.cost / baseline).toFixed(2)}×`,
      target: '',
      ok: undefined,
    },
    {
      metric: '  bound, a rolling breakpoint (each request reads all of the one before): read; cost ÷ caching off',
      value: `${pct(bound.read)}; ${(bound.cost / baseline).toFixed(2)}×`,
      target: '',
      ok: undefined,
    },
    {
      metric: `OpenAI session (${CACHE_REQUESTS} requests; a second, 10): prompt_cache_key`,
      value:
        keyA === undefined
          ? 'none sent'
          : `${keysA.size} key(s) (${String(keyA).length} chars) / ${keysB.size}; ${keyA === [...keysB][0] ? 'the same' : 'different'} across sessions; x-session-affinity ${a.every((r) => r.affinity === r.key) ? 'the same' : 'not the same'}`,
      target: 'one per session, sessions apart',
      ok: oneKey,
    },
    {
      metric: '  each body, outside `input`, byte-identical to the one before, its items the one before’s + new',
      value: `${extended.filter(Boolean).length} of ${extended.length} (read from the cache, requests 11–30: ${pct(gpt.read)})`,
      target: 'all',
      ok: extended.every(Boolean),
    },
  ];
}
