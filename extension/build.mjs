// Bundles the extension into dist/extension.js (vscode stays external: the host provides it).
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
