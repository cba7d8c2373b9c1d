/**
 * Attachments (docs/protocol.md §4.1): big values of a final payload sent beside its JSON line, so
 * a 10 MB result costs a copy instead of an encode + decode + parse. One home for what both sides
 * do with them: build the announcement, read inline base64, turn received bytes into `content`, and
 * strip the bytes from what is kept (snapshots, history).
 */
import { isAscii } from 'node:buffer';
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

/**
 * An attachment as the receiver delivers it: header plus `content`, no `base64`. `text`: the bytes
 * already decoded while they arrived (see TextWhileReceiving), for a `utf8` attachment.
 */
export function received(header: Attachment, bytes: Buffer, text?: string): Attachment {
  const encoding = header.encoding ?? 'binary';
  const content = encoding === 'utf8' ? (text ?? decodeText(bytes, 0, bytes.length)) : bytes;
  return { name: header.name, bytes: bytes.length, encoding, content };
}

/**
 * Decodes a `utf8` attachment while its bytes arrive, so that its text is ready with the last byte
 * instead of costing a decode of the whole (10 MB: ≈ 5 ms) after it. ASCII stretches (JSON, base64,
 * most logs) are decoded as Latin-1 each time a mebibyte is in, which is the same text, and joined
 * without copying (strings that big are never moved by the garbage collector). At the first stretch
 * that is not ASCII it stops, and the whole is decoded as UTF-8 at the end as before.
 */
export class TextWhileReceiving {
  private text: string | undefined = '';
  private decoded = 0;

  /** For LineDecoder.readRaw's `progress`: `target` holds the bytes so far up to `filled`. */
  progress(target: Buffer, filled: number): void {
    if (this.text === undefined || (filled - this.decoded < DECODE_STEP_BYTES && filled < target.length)) return;
    const stretch = target.subarray(this.decoded, filled);
    this.text = isAscii(stretch) ? this.text + stretch.toString('latin1') : undefined;
    this.decoded = filled;
  }

  /** The text of all the bytes, when they were all ASCII (and all in). */
  get result(): string | undefined {
    return this.text;
  }
}

/** Decoded in steps of this much: above V8's large-object size, and a small wait after the last byte. */
const DECODE_STEP_BYTES = 1024 * 1024;

/** The attachments whose bytes follow the line raw (in this order), i.e. those without `base64`. */
export function rawAttachments(payload: Payload): Attachment[] {
  return payload.attachments?.filter((a) => a.base64 === undefined) ?? [];
}

export type Resolved = { ok: true; payload: Payload } | { ok: false; reason: string };

/**
 * Fills every attachment's `content`: inline ones from `base64`, the others from `raw` (the bytes
 * read after the line, in order). Checks each length against its announcement.
 */
export function resolveAttachments(payload: Payload, raw: readonly Buffer[] = [], texts: readonly (string | undefined)[] = []): Resolved {
  if (!payload.attachments) return { ok: true, payload };
  const list: Attachment[] = [];
  let next = 0;
  for (const header of payload.attachments) {
    let bytes: Buffer | undefined;
    let text: string | undefined;
    if (header.base64 !== undefined) bytes = Buffer.from(header.base64, 'base64');
    else {
      text = texts[next];
      bytes = raw[next++];
    }
    if (!bytes) return { ok: false, reason: `attachment "${header.name}": its bytes are missing` };
    if (bytes.length !== header.bytes) {
      return { ok: false, reason: `attachment "${header.name}" announced ${header.bytes} bytes but has ${bytes.length}` };
    }
    list.push(received(header, bytes, text));
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
