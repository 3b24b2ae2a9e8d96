// The usage webview's page. Everything it runs or styles comes from the extension's own dist/webview
// (webview.cspSource) and its one script carries a fresh nonce: no CDN, no inline script or style,
// no eval (chart.js draws without it). Data arrives later by postMessage, never in the HTML.
import { randomBytes } from 'node:crypto';

export interface PageSources {
  /** webview.cspSource: where the page's own files are served from. */
  cspSource: string;
  nonce: string;
  scriptUri: string;
  styleUri: string;
}

export function newNonce(): string {
  return randomBytes(18).toString('base64url');
}

export function contentSecurityPolicy({ cspSource, nonce }: Pick<PageSources, 'cspSource' | 'nonce'>): string {
  return [`default-src 'none'`, `img-src ${cspSource}`, `style-src ${cspSource}`, `font-src ${cspSource}`, `script-src 'nonce-${nonce}'`].join('; ');
}

const attr = (value: string) => value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

export function dashboardHtml(sources: PageSources): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${attr(contentSecurityPolicy(sources))}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${attr(sources.styleUri)}">
<title>AI Gateway Usage</title>
</head>
<body>
<header>
  <h1>AI Gateway Usage</h1>
  <form id="range" aria-label="Date range">
    <label>Range
      <select id="preset">
        <option value="7">Last 7 days</option>
        <option value="30" selected>Last 30 days</option>
        <option value="90">Last 90 days</option>
        <option value="custom">Custom…</option>
      </select>
    </label>
    <span id="custom" hidden>
      <label>From <input type="date" id="from" required></label>
      <label>To <input type="date" id="until" required></label>
      <button type="submit" id="apply">Apply</button>
    </span>
    <button type="button" id="export">Export CSV</button>
  </form>
</header>
<p id="summary" role="status">Loading…</p>
<main>
  <section><h2>Spend per day (USD, UTC days)</h2><div class="chart"><canvas id="spend" aria-label="Spend per day stacked by model"></canvas></div></section>
  <section><h2>Tokens per request</h2><div class="chart"><canvas id="tokens" aria-label="Input and output tokens per request"></canvas></div></section>
  <section class="narrow"><h2>Prompt cache</h2><div class="chart"><canvas id="cache" aria-label="Share of input tokens read from the prompt cache"></canvas></div></section>
  <section><h2>Saved by the prompt cache per day (USD, UTC days, by list prices)</h2><div class="chart"><canvas id="saved" aria-label="What the prompt cache saved per day"></canvas></div></section>
  <section class="wide"><h2>Most expensive requests</h2>
    <table id="top"><thead><tr><th>Time (UTC)</th><th>Model</th><th>Provider</th><th>Key</th><th class="num">In</th><th class="num">Out</th><th class="num">Cache read</th><th class="num">Cache written</th><th class="num">Cost</th></tr></thead><tbody></tbody></table>
  </section>
</main>
<script nonce="${attr(sources.nonce)}" src="${attr(sources.scriptUri)}"></script>
</body>
</html>
`;
}
