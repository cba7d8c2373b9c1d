/** The protocol's line limit, alone so that browser code (the panel's checks) can import it. */

/** Large enough for a 10 MB result after JSON escaping, small enough to bound a hostile sender. */
export const DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024;
