/**
 * What every long-lived HTTP stream of Backchannel shares: the panel's and the control endpoint's
 * event streams, the gateway's server-sent answers, and MCP's task listens.
 */

/**
 * A stream quiet this long gets a comment line. An agent can work silently for minutes (builds, test
 * runs), and proxies, browsers and HTTP clients drop a stream that looks dead (nginx's proxies time a
 * read out after 60 s by default). 15 s is also the MCP TypeScript SDK's own period for its streams
 * (`DEFAULT_SSE_KEEP_ALIVE_MS`).
 */
export const STREAM_KEEP_ALIVE_MS = 15_000;
