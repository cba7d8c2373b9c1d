/**
 * The webhooks' entry of the config file's `notify:` section, declared once (zod):
 *
 *   notify:
 *     webhooks:
 *       - { url: https://…, events: [ended, needs_input, budget_exceeded], secret: whsec_… }
 *
 * A secret is the Standard Webhooks form (`whsec_` + base64); it lives only in the file (never in
 * argv, a log line or an event).
 */
import * as z from 'zod/mini';
import { must } from '../model/shapes.js';
import { NOTIFY_EVENTS, type NotifyEvent } from './events.js';

export interface WebhookTarget {
  url: string;
  events: NotifyEvent[];
  secret: string;
}

const WEBHOOK = z.strictObject({
  url: z.string({ error: must('must be an http(s) URL') }).check(
    z.refine((url: string) => /^https?:\/\//.test(url) && URL.canParse(url), { error: must('must be an http(s) URL') }),
    // A `user:pass@` URL can never be delivered (fetch refuses it) and puts a password in the file's
    // URL; the password is never quoted back. The signature is what authenticates the hub.
    z.refine((url: string) => !URL.canParse(url) || (new URL(url).username === '' && new URL(url).password === ''), {
      error: () => '{path} must not hold a user name or password (user:pass@); receivers check the signature made with `secret`',
    }),
  ),
  events: z.array(z.enum(NOTIFY_EVENTS, { error: must(`must be one of ${NOTIFY_EVENTS.join(', ')}`) }), {
    error: must('must be a list of events'),
  }),
  secret: z.string({ error: must('must be a secret whsec_<base64>') }).check(
    z.refine((secret: string) => /^whsec_[A-Za-z0-9+/]+={0,2}$/.test(secret), {
      // The value itself is never quoted back: it is a secret.
      error: () => '{path} must be a secret whsec_<base64>',
    }),
  ),
});

/** `notify.webhooks`: the URLs to post to, each with the events it asked for. */
export const WEBHOOKS = z.array(WEBHOOK, { error: must('must be a list of webhooks') });
