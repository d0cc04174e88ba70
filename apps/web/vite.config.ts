import { defineConfig } from 'vite';
import { VitePWA } from 'vite-plugin-pwa';
import { resolve } from 'node:path';

/** `npm run dev` runs the dev server on this loopback port; the gateway forwards the page's requests to it. */
const devPort = Number(process.env.SKALD_WEB_DEV_PORT) || 5173;

/**
 * The web client is a static bundle the gateway serves at `/` under a strict Content-Security-Policy:
 * no inline scripts or styles, so everything is emitted as files.
 */
export default defineConfig({
  root: __dirname,
  base: '/',
  esbuild: { jsx: 'automatic' },
  plugins: [
    // The service worker (src/sw/sw.ts) built as /sw.js with the list of the build's files to keep for
    // offline use. The page registers it itself (src/sw/register.ts); the manifest is public/assets' own.
    VitePWA({
      strategies: 'injectManifest',
      srcDir: 'src/sw',
      filename: 'sw.ts',
      injectRegister: false,
      manifest: false,
      injectManifest: {
        globPatterns: ['index.html', 'assets/*.{js,css,png,woff2,webmanifest}'],
        // The gateway serves the page at `/` (not `/index.html`): the shell is cached under that address.
        manifestTransforms: [
          (entries) => ({ manifest: entries.map((e) => (e.url === 'index.html' ? { ...e, url: '/' } : e)) }),
        ],
        // Vite's names carry a content hash; the manifest and the icons keep theirs and are revisioned by content.
        dontCacheBustURLsMatching: /-[\w-]{8}\.\w+$/,
        rollupFormat: 'es',
        buildPlugins: { vite: [] },
      },
      devOptions: { enabled: false },
    }),
  ],
  // The contracts' zod-free entries and the client SDK, from their source: the bundle reads server frames with them
  // and takes no zod.
  resolve: {
    alias: {
      '@skald/contracts/server-frame': resolve(__dirname, '../../libs/contracts/src/server-frame.ts'),
      '@skald/contracts/route-table': resolve(__dirname, '../../libs/contracts/src/route-table.ts'),
      '@skald/contracts/push-message': resolve(__dirname, '../../libs/contracts/src/push-message.ts'),
      '@skald/contracts/notify-kinds': resolve(__dirname, '../../libs/contracts/src/notify-kinds.ts'),
      '@skald/contracts/web-sources': resolve(__dirname, '../../libs/contracts/src/web-sources.ts'),
      '@skald/client': resolve(__dirname, '../../libs/client/src/index.ts'),
    },
  },
  server: {
    host: '127.0.0.1',
    port: devPort,
    strictPort: true,
    // The HMR socket connects straight to this port (the gateway's dev CSP allows exactly it).
    hmr: { host: '127.0.0.1', port: devPort, clientPort: devPort },
    // Only the client's own files, the packages, the contracts' zod-free entry and the SDK's source; never the rest of
    // the repository (`.skald/` holds secrets).
    fs: {
      strict: true,
      allow: [
        __dirname,
        resolve(__dirname, '../../node_modules'),
        resolve(__dirname, '../../libs/contracts/src/server-frame.ts'),
        resolve(__dirname, '../../libs/contracts/src/route-table.ts'),
        resolve(__dirname, '../../libs/contracts/src/push-message.ts'),
        resolve(__dirname, '../../libs/contracts/src/notify-kinds.ts'),
        resolve(__dirname, '../../libs/contracts/src/web-sources.ts'),
        resolve(__dirname, '../../libs/client/src'),
      ],
      deny: ['.env', '.env.*', '*.{crt,pem,key}', '**/.skald/**'],
    },
  },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    sourcemap: true,
    // One bundle (about 600 kB, 170 kB gzipped) the gateway serves with the page: Vite's 500 kB hint, printed on
    // every build, read as a failure on a newcomer's first `npm start`. Past this bound the hint comes back.
    chunkSizeWarningLimit: 1000,
  },
});
