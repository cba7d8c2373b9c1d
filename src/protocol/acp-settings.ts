/**
 * The contract between the broker's ACP task kind (src/broker/acp/) and the ACP adapter (src/acp/),
 * declared once where both may import it: the environment variable the adapter reads its settings
 * from, ACP's tool kinds, the decisions an approval policy gives them, and the defaults (docs/acp.md).
 */

/** The adapter's settings (JSON), written by the broker and deleted before the agent child starts. */
export const ENV_ACP_SETTINGS = 'BACKCHANNEL_ACP';

/** ACP's tool kinds (`ToolKind` in the ACP schema), each with its own approval policy. */
export const TOOL_KINDS = ['read', 'search', 'edit', 'delete', 'move', 'execute', 'fetch', 'think', 'other'] as const;
export type ToolKind = (typeof TOOL_KINDS)[number];

/** What an approval policy does with a permission request of a kind. */
export const APPROVAL_DECISIONS = ['allow', 'ask', 'reject'] as const;
export type ApprovalDecision = (typeof APPROVAL_DECISIONS)[number];
export type Approvals = Record<ToolKind, ApprovalDecision>;

/** Reads and searches change nothing: allowed; every other kind is asked (silence rejects it). */
export const DEFAULT_APPROVALS: Readonly<Approvals> = Object.freeze({
  read: 'allow',
  search: 'allow',
  edit: 'ask',
  delete: 'ask',
  move: 'ask',
  execute: 'ask',
  fetch: 'ask',
  think: 'ask',
  other: 'ask',
});
