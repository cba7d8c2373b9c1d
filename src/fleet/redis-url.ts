/**
 * Where a Redis URL's password comes from, and how a URL is shown. A password on the command line
 * (`--redis redis://:secret@host`) is readable by every local user in `ps` and /proc/<pid>/cmdline,
 * so it is refused there: the whole URL may come from BACKCHANNEL_REDIS_URL, the password alone from
 * REDIS_PASSWORD (or `serve.redis` in the config file, for `serve`). A URL is printed, logged and put
 * in error messages only with its password replaced. Both variables are removed from the
 * environment once read, so no sub-agent inherits them.
 */

export const REDIS_URL_ENV = 'BACKCHANNEL_REDIS_URL';
export const REDIS_PASSWORD_ENV = 'REDIS_PASSWORD';

export type RedisUrlChoice = { url: string | undefined } | { problem: string };

/**
 * The Redis URL a command uses: `fromArgv` (its `--redis`, which must not carry a password), else
 * `fromFile` (a config file of the owner's), else BACKCHANNEL_REDIS_URL; REDIS_PASSWORD fills in a
 * password the URL lacks. Takes both variables out of `env`.
 */
export function takeRedisUrl(fromArgv: string | undefined, fromFile: string | undefined, env = process.env): RedisUrlChoice {
  const fromEnv = env[REDIS_URL_ENV] || undefined;
  const password = env[REDIS_PASSWORD_ENV];
  delete env[REDIS_URL_ENV];
  delete env[REDIS_PASSWORD_ENV];
  if (fromArgv !== undefined && passwordOf(fromArgv)) {
    return {
      problem:
        `the Redis password in --redis ${redactedUrl(fromArgv)} is visible to every user of this machine (ps); ` +
        `give it in ${REDIS_PASSWORD_ENV}, or the whole URL in ${REDIS_URL_ENV}`,
    };
  }
  const url = fromArgv ?? fromFile ?? fromEnv;
  if (url === undefined || !password || passwordOf(url)) return { url };
  try {
    const parsed = new URL(url);
    parsed.password = password;
    return { url: parsed.toString() };
  } catch {
    return { url };
  }
}

function passwordOf(url: string): string {
  try {
    return new URL(url).password;
  } catch {
    // Not a URL: the part between ':' and '@' after the scheme could still be a password.
    return /^[a-z]+:\/\/[^/@]*:([^/@]+)@/i.exec(url)?.[1] ?? '';
  }
}

/** `url` with its password (if any) replaced by `***`, for printing, logs and error messages. */
export function redactedUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return url.replace(/^([a-z]+:\/\/[^/@]*:)[^/@]+@/i, '$1***@');
  }
}
