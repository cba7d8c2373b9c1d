/**
 * A part of the panel in a file of its own (uplot.js, views.js), fetched the first time it is
 * wanted, so it is not parsed and run before the first paint. The file sets one global, which
 * `loadScript` resolves with. The headless server wants its token on every file; the desktop app's
 * protocol serves the same file without one.
 */

const loading = new Map<string, Promise<unknown>>();

/** Loads `./<file>` once (again after a failure) and resolves with `window[global]`. */
export function loadScript<T>(file: string, global: string): Promise<T> {
  let promise = loading.get(file) as Promise<T> | undefined;
  if (promise) return promise;
  promise = new Promise<T>((resolve, reject) => {
    const token = new URLSearchParams(location.search).get('token');
    const script = document.createElement('script');
    script.src = token ? `./${file}?token=${encodeURIComponent(token)}` : `./${file}`;
    script.onload = () => {
      const value = (window as unknown as Record<string, T | undefined>)[global];
      if (value) resolve(value);
      else reject(new Error(`${file} did not load`));
    };
    script.onerror = () => reject(new Error(`${file} could not be loaded`));
    document.head.append(script);
  }).catch((error: unknown) => {
    loading.delete(file); // the next call tries again
    throw error;
  });
  loading.set(file, promise);
  return promise;
}
