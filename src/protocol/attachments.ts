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

/** An attachment as the receiver delivers it: header plus `content`, no `base64`. */
export function received(header: Attachment, bytes: Buffer): Attachment {
  const encoding = header.encoding ?? 'binary';
  return { name: header.name, bytes: bytes.length, encoding, content: encoding === 'utf8' ? decodeText(bytes, 0, bytes.length) : bytes };
}

/** A `utf8` attachment received as text (see TextWhileReceiving): its size in bytes and its text. */
export interface ReceivedText {
  bytes: number;
  text: string;
}

/**
 * Decodes a `utf8` attachment while its bytes arrive, without first copying them into one Buffer:
 * the text is ready with the last byte, and the receiver touches one fresh copy of the data (the
 * string) instead of two (10 MB: a Buffer and a string cost ≈ 6 ms each on docs/performance.md's machine, which
 * made the receiver, not the wire, set the pace). ASCII stretches (JSON, base64, most logs) are
 * decoded as Latin-1 (the same text) a mebibyte at a time through one reused scratch Buffer and
 * joined without copying; from the first stretch that is not ASCII on, the whole is decoded as UTF-8
 * at the end, from the parts it keeps.
 */
export class TextWhileReceiving {
  /** Every part, as views of the chunks they came in (kept for the UTF-8 fallback). */
  private readonly parts: Buffer[] = [];
  private received = 0;
  private text: string | undefined = '';
  /** Parts not decoded yet, and their size. */
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private scratch: Buffer | undefined;

  push(piece: Buffer): void {
    this.parts.push(piece);
    this.received += piece.length;
    if (this.text === undefined) return;
    this.pending.push(piece);
    this.pendingBytes += piece.length;
    if (this.pendingBytes >= DECODE_STEP_BYTES) this.decodePending();
  }

  /** All parts are in: the text. */
  finish(): ReceivedText {
    if (this.text !== undefined && this.pendingBytes > 0) this.decodePending();
    const text = this.text ?? decodeText(Buffer.concat(this.parts, this.received), 0, this.received);
    return { bytes: this.received, text };
  }

  private decodePending(): void {
    let stretch: Buffer;
    if (this.pending.length === 1) stretch = this.pending[0]!;
    else {
      this.scratch ??= Buffer.allocUnsafe(DECODE_STEP_BYTES * 2);
      if (this.scratch.length < this.pendingBytes) this.scratch = Buffer.allocUnsafe(this.pendingBytes);
      let at = 0;
      for (const piece of this.pending) at += piece.copy(this.scratch, at);
      stretch = this.scratch.subarray(0, at);
    }
    this.text = isAscii(stretch) ? this.text + stretch.toString('latin1') : undefined;
    this.pending = [];
    this.pendingBytes = 0;
  }
}

/** Decoded in steps of this much: strings this big are never moved by the garbage collector. */
const DECODE_STEP_BYTES = 1024 * 1024;

/** The attachments whose bytes follow the line raw (in this order), i.e. those without `base64`. */
export function rawAttachments(payload: Payload): Attachment[] {
  return payload.attachments?.filter((a) => a.base64 === undefined) ?? [];
}

export type Resolved = { ok: true; payload: Payload } | { ok: false; reason: string };

/**
 * Fills every attachment's `content`: inline ones from `base64`, the others from `raw` (what was read
 * after the line, in order: bytes, or the text of a `utf8` one). Checks each length against its announcement.
 */
export function resolveAttachments(payload: Payload, raw: readonly (Buffer | ReceivedText)[] = []): Resolved {
  if (!payload.attachments) return { ok: true, payload };
  const list: Attachment[] = [];
  let next = 0;
  for (const header of payload.attachments) {
    const item = header.base64 !== undefined ? Buffer.from(header.base64, 'base64') : raw[next++];
    if (!item) return { ok: false, reason: `attachment "${header.name}": its bytes are missing` };
    const size = Buffer.isBuffer(item) ? item.length : item.bytes;
    if (size !== header.bytes) return { ok: false, reason: `attachment "${header.name}" announced ${header.bytes} bytes but has ${size}` };
    list.push(Buffer.isBuffer(item) ? received(header, item) : { name: header.name, bytes: size, encoding: 'utf8', content: item.text });
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
