/// <reference types="vite/client" />
/**
 * Registers the service worker (`/sw.js`, scope `/`) in a built client. Not in `npm run dev`: the page
 * there comes from Vite's dev server through the gateway, and a worker would cache it.
 */
export function registerServiceWorker(): void {
  if (!import.meta.env.PROD || !('serviceWorker' in navigator)) return;
  window.addEventListener('load', () => {
    navigator.serviceWorker.register('/sw.js', { scope: '/' }).catch((e: unknown) => {
      console.warn('the service worker did not register', e);
    });
  });
}
