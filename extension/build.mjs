// Bundles the extension into dist/extension.js (vscode stays external: the host provides it), and
// the usage webview's script (with chart.js) and stylesheet into dist/webview: the page loads them
// from the extension itself, so its CSP needs no remote source.
import { build } from 'esbuild';

await build({
  entryPoints: ['extension/extension.ts'],
  bundle: true,
  outfile: 'dist/extension.js',
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  external: ['vscode'],
  sourcemap: false,
  minify: true,
  logLevel: 'warning',
});

await build({
  entryPoints: ['extension/webview/page.ts', 'extension/webview/page.css'],
  bundle: true,
  outdir: 'dist/webview',
  platform: 'browser',
  format: 'iife',
  // VS Code 1.106's webviews run Chromium 138 or newer.
  target: 'chrome120',
  sourcemap: false,
  minify: true,
  logLevel: 'warning',
});
