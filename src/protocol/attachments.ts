/**
 * Attachments (docs/protocol.md §4.1): big values of a final payload sent beside its JSON line, so
 * a 10 MB result costs a copy instead of an encode + decode + parse. One home for what both sides
 * do with them: build the announcement, read inline base64, turn received bytes into `content`, and
 * strip the bytes from what is kept (snapshots, history).
 */
import { decodeText } from './framing.js';
import type { Attachment, AttachmentEncoding, Payload } from './messages.js';

/** All attachments of one attempt together, unless the broker is configured otherwise. */
export const DEFAULT_MAX_ATTACHMENT_BYTES = 256 * 1024 * 1024;

/** A value an agent attaches: text is sent as UTF-8 and comes back as a string; bytes come back as a Buffer. */
export type AttachmentValue = string | Uint8Array;

/** What an agent sends: the header plus the bytes it stands for. */
export interface OutgoingAttachment {
  header: Attachment;
  bytes: Buffer;
}

export function outgoingAttachment(name: string, value: AttachmentValue): OutgoingAttachment {
  const text = typeof value === 'string';
  const bytes = text ? Buffer.from(value, 'utf8') : Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  const encoding: AttachmentEncoding = text ? 'utf8' : 'binary';
  return { header: { name, bytes: bytes.length, encoding }, bytes };
}

/** The header with the bytes inline (stdout and spool, where raw bytes cannot follow). */
export function inlined(attachment: OutgoingAttachment): Attachment {
  return { ...attachment.header, base64: attachment.bytes.toString('base64') };
}

/** An attachment as the receiver delivers it: header plus `content`, no `base64`. */
export function received(header: Attachment, bytes: Buffer): Attachment {
  const encoding = header.encoding ?? 'binary';
  return { name: header.name, bytes: bytes.length, encoding, content: encoding === 'utf8' ? decodeText(bytes, 0, bytes.length) : bytes };
}

/** The attachments whose bytes follow the line raw (in this order), i.e. those without `base64`. */
export function rawAttachments(payload: Payload): Attachment[] {
  return payload.attachments?.filter((a) => a.base64 === undefined) ?? [];
}

export type Resolved = { ok: true; payload: Payload } | { ok: false; reason: string };

/**
 * Fills every attachment's `content`: inline ones from `base64`, the others from `raw` (the bytes
 * read after the line, in order). Checks each length against its announcement.
 */
export function resolveAttachments(payload: Payload, raw: readonly Buffer[] = []): Resolved {
  if (!payload.attachments) return { ok: true, payload };
  const list: Attachment[] = [];
  let next = 0;
  for (const header of payload.attachments) {
    let bytes: Buffer | undefined;
    if (header.base64 !== undefined) bytes = Buffer.from(header.base64, 'base64');
    else bytes = raw[next++];
    if (!bytes) return { ok: false, reason: `attachment "${header.name}": its bytes are missing` };
    if (bytes.length !== header.bytes) {
      return { ok: false, reason: `attachment "${header.name}" announced ${header.bytes} bytes but has ${bytes.length}` };
    }
    list.push(received(header, bytes));
  }
  return { ok: true, payload: { ...payload, attachments: list } };
}

/** Headers only (name, bytes, encoding): what snapshots, updates and history keep of a payload's attachments. */
export function withoutContent<P extends Payload>(payload: P): P {
  if (!payload.attachments) return payload;
  return {
    ...payload,
    attachments: payload.attachments.map(({ name, bytes, encoding }) => ({ name, bytes, encoding: encoding ?? 'binary' })),
  };
}
