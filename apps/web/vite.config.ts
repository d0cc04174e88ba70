import { defineConfig } from 'vite';

/**
 * The web client is a static bundle the gateway serves at `/` under a strict Content-Security-Policy:
 * no inline scripts or styles, so everything is emitted as files.
 */
export default defineConfig({
  root: __dirname,
  base: '/',
  esbuild: { jsx: 'automatic' },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    sourcemap: true,
  },
});
