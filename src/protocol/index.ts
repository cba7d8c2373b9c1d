export * from './messages.js';
export * from './framing.js';
export * from './env.js';
export * from './attachments.js';
