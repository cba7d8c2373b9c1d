/**
 * The panel's first script: a few hundred bytes, asked for after panel.js (index.html) and run before
 * it, while panel.js is still on its way or being parsed. It sends the first paint's requests
 * (./first-calls.ts) so the hub answers while panel.js loads. Only for the HTTP bridge: in the desktop
 * app the preload's bridge is already there, and this does nothing.
 */
import { sendFirstRequests } from './first-calls.js';

if (!(window as Partial<Window>).backchannel) {
  window.backchannelEarly = sendFirstRequests(new URLSearchParams(location.search).get('token') ?? '');
}
