// Figure 2 baselines, no broker. mode=json: the same payload as one JSON line (stringify, write).
// mode=wire (and text, whose receiver also makes the string): a header line with the start time,
// then 10 MB of pre-encoded bytes (the wire alone).
import { createConnection } from 'node:net';
import { bigString, wallNow } from './big-data.mjs';

const mode = process.argv[2];
const data = bigString();
const preEncoded = mode === 'wire' || mode === 'text';
const wire = preEncoded ? Buffer.from(data + '\n') : undefined;
const socket = createConnection(process.env.BENCH_SOCKET, () => {
  if (preEncoded) {
    socket.write(JSON.stringify({ sent_at: wallNow() }) + '\n');
    socket.end(wire);
  } else {
    const payload = { task_id: 'bench', status: 'success', data, meta: { sent_at: wallNow() } };
    socket.end(JSON.stringify(payload) + '\n');
  }
});
