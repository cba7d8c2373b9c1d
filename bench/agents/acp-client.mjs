// bench/acp.js's like-for-like baseline for `backchannel run --acp`: a whole program that runs one
// ACP prompt with the official SDK's client side and nothing else, as a script of one's own would —
// `node acp-client.mjs <agent.mjs> <prompt>`: loads the SDK, starts the agent (with this Node), sends
// initialize, session/new and the prompt, prints the agent's message once the turn ends `end_turn`,
// ends the agent and exits. Exit 1 with the reason on any other end.
import { spawn } from 'node:child_process';
import { Readable, Writable } from 'node:stream';
import { PROTOCOL_VERSION, client, methods, ndJsonStream } from '@agentclientprotocol/sdk';

const [agentScript, prompt] = process.argv.slice(2);
const child = spawn(process.execPath, [agentScript], { stdio: ['pipe', 'pipe', 'inherit'] });
const exited = new Promise((resolve) => child.once('exit', resolve));
let text = '';
const app = client({ name: 'acp-client' }).onNotification(methods.client.session.update, ({ params }) => {
  if (params.update.sessionUpdate === 'agent_message_chunk' && params.update.content.type === 'text') text += params.update.content.text;
});
const stream = ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
const response = await app.connectWith(stream, async (cx) => {
  await cx.request(methods.agent.initialize, { protocolVersion: PROTOCOL_VERSION, clientCapabilities: {} });
  const { sessionId } = await cx.request(methods.agent.session.new, { cwd: process.cwd(), mcpServers: [] });
  return cx.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: prompt }] });
});
child.kill();
await exited;
if (response.stopReason !== 'end_turn') {
  process.stderr.write(`stopped with ${response.stopReason}\n`);
  process.exit(1);
}
process.stdout.write(`${text}\n`);
