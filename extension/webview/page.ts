// The usage page (runs in the webview, bundled with chart.js into dist/webview/page.js). It draws
// what the extension posts and asks for another range; every text from a record goes in through
// textContent, never as HTML. Colours are VS Code's theme variables, re-read when the theme changes.
import { ArcElement, BarController, BarElement, CategoryScale, Chart, DoughnutController, Legend, LinearScale, Tooltip } from 'chart.js';
import type { UsageRecord } from '../contract';
import {
  cacheShare,
  groupLabel,
  isoDay,
  latestRequests,
  mostExpensive,
  savedByDay,
  spendByDay,
  type FromWebview,
  type Range,
  type ToWebview,
} from '../shared/dashboardData';
import { dollars, savedDollars } from '../shared/money';

Chart.register(BarController, BarElement, CategoryScale, LinearScale, DoughnutController, ArcElement, Legend, Tooltip);

declare function acquireVsCodeApi(): { postMessage(message: FromWebview): void; getState(): unknown; setState(state: unknown): void };
const host = acquireVsCodeApi();

type Data = Extract<ToWebview, { type: 'data' }>;
interface State {
  preset: string;
  from: string;
  until: string;
}

const TOKEN_REQUESTS = 200;
const PALETTE = ['blue', 'orange', 'green', 'purple', 'red', 'yellow', 'foreground'];
const element = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const preset = element<HTMLSelectElement>('preset');
const from = element<HTMLInputElement>('from');
const until = element<HTMLInputElement>('until');
const custom = element<HTMLSpanElement>('custom');
const summary = element<HTMLParagraphElement>('summary');
const charts: Chart[] = [];
let shown: Data | undefined;

function css(name: string, fallback: string): string {
  return getComputedStyle(document.body).getPropertyValue(name).trim() || fallback;
}
const seriesColor = (i: number) => css(`--vscode-charts-${PALETTE[i % PALETTE.length]}`, '#888');
/** Four places below a dollar: most single requests cost a fraction of a cent. */
const money = (usd: number) => dollars(usd, 'bill');
/** A saving: negative where the cache's writes cost more than its reads saved. */
const saving = (usd: number) => savedDollars(usd, 'bill');

function ask(): void {
  const state: State = { preset: preset.value, from: from.value, until: until.value };
  host.setState(state);
  custom.hidden = preset.value !== 'custom';
  let range: Range;
  if (preset.value !== 'custom') range = { kind: 'last', days: Number(preset.value) };
  else if (from.value && until.value) range = { kind: 'custom', from: from.value, until: until.value };
  else return;
  summary.textContent = 'Loading…';
  host.postMessage({ type: 'range', range });
}

function draw(data: Data): void {
  shown = data;
  charts.splice(0).forEach((chart) => chart.destroy());
  const text = css('--vscode-foreground', '#888');
  const grid = css('--vscode-panel-border', 'rgba(128,128,128,0.3)');
  Chart.defaults.color = text;
  Chart.defaults.borderColor = grid;
  Chart.defaults.font.family = css('--vscode-font-family', 'sans-serif');
  charts.push(spendChart(data), tokensChart(data.records), cacheChart(data.records), savedChart(data));
  fillTable(data.records);
  summary.textContent = describe(data);
  summary.classList.toggle('error', data.problem !== null);
}

function spendChart(data: Data): Chart {
  const { days, series } = spendByDay(data.records, data.since, data.until);
  return new Chart(element<HTMLCanvasElement>('spend'), {
    type: 'bar',
    data: { labels: days, datasets: series.map((s, i) => ({ label: s.model, data: s.values, backgroundColor: seriesColor(i) })) },
    options: {
      animation: false,
      maintainAspectRatio: false,
      scales: { x: { stacked: true }, y: { stacked: true, ticks: { callback: (v) => `$${v}` } } },
      plugins: { tooltip: { callbacks: { label: (c) => `${c.dataset.label ?? ''}: ${money(c.parsed.y ?? 0)}` } } },
    },
  });
}

function tokensChart(records: readonly UsageRecord[]): Chart {
  const latest = latestRequests(records, TOKEN_REQUESTS);
  return new Chart(element<HTMLCanvasElement>('tokens'), {
    type: 'bar',
    data: {
      labels: latest.map((r) => r.time.slice(5, 16).replace('T', ' ')),
      // Each request's input stacked as the prompt cache saw it (read, written, neither), beside its output.
      datasets: [
        { label: 'Input read from cache', data: latest.map((r) => r.cachedTokens), backgroundColor: seriesColor(2), stack: 'input' },
        { label: 'Input written to cache', data: latest.map((r) => r.cacheWriteTokens), backgroundColor: seriesColor(5), stack: 'input' },
        {
          label: 'Input not cached',
          data: latest.map((r) => Math.max(0, r.inputTokens - r.cachedTokens - r.cacheWriteTokens)),
          backgroundColor: seriesColor(0),
          stack: 'input',
        },
        { label: 'Output tokens', data: latest.map((r) => r.outputTokens), backgroundColor: seriesColor(1), stack: 'output' },
      ],
    },
    options: {
      animation: false,
      maintainAspectRatio: false,
      scales: { x: { stacked: true }, y: { stacked: true } },
      plugins: {
        tooltip: {
          callbacks: {
            title: (items) => latest[items[0].dataIndex]?.model ?? '',
            footer: (items) => {
              const saved = latest[items[0].dataIndex]?.cacheSaved;
              return saved == null ? '' : `Saved by the cache: ${saving(saved)}`;
            },
          },
        },
      },
    },
  });
}

function cacheChart(records: readonly UsageRecord[]): Chart {
  const { cached, written, fresh } = cacheShare(records);
  const total = cached + written + fresh;
  const share = (n: number) => (total ? ` (${Math.round((n / total) * 100)}%)` : '');
  return new Chart(element<HTMLCanvasElement>('cache'), {
    type: 'doughnut',
    data: {
      labels: [`Read from cache${share(cached)}`, `Written to cache${share(written)}`, `Not cached${share(fresh)}`],
      datasets: [{ data: [cached, written, fresh], backgroundColor: [seriesColor(2), seriesColor(5), seriesColor(6)] }],
    },
    options: { animation: false, maintainAspectRatio: false },
  });
}

function savedChart(data: Data): Chart {
  const { days, values } = savedByDay(data.records, data.since, data.until);
  return new Chart(element<HTMLCanvasElement>('saved'), {
    type: 'bar',
    data: { labels: days, datasets: [{ label: 'Saved by the prompt cache', data: values, backgroundColor: seriesColor(2) }] },
    options: {
      animation: false,
      maintainAspectRatio: false,
      scales: { y: { ticks: { callback: (v) => `$${v}` } } },
      plugins: { tooltip: { callbacks: { label: (c) => `Saved: ${saving(c.parsed.y ?? 0)}` } } },
    },
  });
}

function fillTable(records: readonly UsageRecord[]): void {
  const body = document.querySelector<HTMLTableSectionElement>('#top tbody')!;
  body.replaceChildren(
    ...mostExpensive(records, 10).map((r) => {
      const row = document.createElement('tr');
      const cost = `${r.billed ? '' : '≈ '}${money(r.cost ?? 0)}`;
      for (const [value, numeric] of [
        [r.time.slice(0, 19).replace('T', ' '), false],
        // A team routing rule's rewrite: the model that answered (and was priced), then the one picked.
        [r.requestedModel ? `${r.model} (for ${r.requestedModel}, a team routing rule)` : r.model, false],
        [`${r.provider ?? '—'}${r.byok ? ' (BYOK)' : ''}`, false],
        [groupLabel(r.group), false],
        [String(r.inputTokens), true],
        [String(r.outputTokens), true],
        [String(r.cachedTokens), true],
        [String(r.cacheWriteTokens), true],
        [cost, true],
      ] as const) {
        const cell = row.insertCell();
        cell.textContent = value;
        if (numeric) cell.className = 'num';
      }
      return row;
    }),
  );
}

function describe(data: Data): string {
  const total = data.records.reduce((sum, r) => sum + (r.cost ?? 0), 0);
  const estimated = data.records.some((r) => r.cost !== null && !r.billed) ? ' (≈: some costs are estimates)' : '';
  const cut = data.truncated ? ` Only the first ${data.records.length} requests of the range are shown.` : '';
  const today = data.dayTotal === null ? 'unknown' : money(data.dayTotal);
  const problem = data.problem ? ` The usage history cannot be used now: ${data.problem}; requests since then are kept in memory and shown.` : '';
  const saved = ` The prompt cache saved ${saving(cacheShare(data.records).saved)} by list prices.`;
  return `${data.since} to ${data.until}: ${data.records.length} requests, ${money(total)}${estimated}.${saved} Today (UTC): ${today}.${cut}${problem}`;
}

window.addEventListener('message', (event: MessageEvent<ToWebview>) => {
  const message = event.data;
  if (message?.type === 'data') draw(message);
  else if (message?.type === 'error') {
    summary.textContent = message.message;
    summary.classList.add('error');
  }
});
preset.addEventListener('change', () => {
  if (preset.value === 'custom' && !from.value) [from.value, until.value] = [isoDay(new Date(Date.now() - 29 * 86_400_000)), isoDay(new Date())];
  ask();
});
element<HTMLFormElement>('range').addEventListener('submit', (event) => {
  event.preventDefault();
  ask();
});
element<HTMLButtonElement>('export').addEventListener('click', () => host.postMessage({ type: 'export' }));
// VS Code swaps the body's theme class: redraw in the new colours.
new MutationObserver(() => shown && draw(shown)).observe(document.body, { attributes: true, attributeFilter: ['class'] });

const saved = host.getState() as Partial<State> | undefined;
if (saved?.preset) [preset.value, from.value, until.value] = [saved.preset, saved.from ?? '', saved.until ?? ''];
until.max = from.max = isoDay(new Date());
ask();
