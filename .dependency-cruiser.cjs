/**
 * The layering of src/, enforced by `npm run lint` (`depcruise src --config .dependency-cruiser.cjs`).
 * Lower layers never import higher ones:
 *
 *   protocol  →  model  →  broker  →  bridge  →  templates  →  hub  →  client  →  main (Electron) · gateway · mcp · cli
 *   client    →  desktop (the app's Electron-free parts: its hub, IPC handlers, tray menu)  →  main
 *   broker    →  fleet (the BullMQ queue and worker: over the core, under the hub and the CLI)
 *   broker    →  paths (where the data directory and the control endpoint are: hub, client and commands)
 *   broker    →  schedules (the schedule store, fire times and policies: the hub fires them)
 *   config: the config file (a leaf over model: the hub, the gateway, the CLI and the app read it)
 *   model, config  →  notify (the one notification decision, fed by the hub assembly; webhooks and the app's and
 *                    the panel's notifications subscribe; its decision and words run in the browser too)
 *   loopback: the HTTP guards of a loopback server (Host/Origin, token, headers): the hub's servers, the gateway
 *   base: the leaf under every layer (the logger): it knows nothing of Backchannel
 *   hub: the process that owns the broker (serve, the desktop app, `mcp` when it must be the hub)
 *   client: the front-end side of the one task seam (discovery, the hub client, id resolution)
 *   protocol  →  agent-runtime (the SDK sub-agents import: protocol only)
 *   protocol  →  relay (the stdio MCP relay a template's CLI starts: protocol framing only)
 *   protocol, agent-runtime  →  acp (the ACP adapter: a sub-agent that runs an ACP agent through the ACP SDK)
 *   broker    →  conformance  →  cli (`backchannel check` runs agents under the core broker)
 *   bridge    →  renderer · preload (browser side: bridge and model types only)
 *
 * Inside broker/: errors, log → transport, process → guards → task → history → the top: broker.ts and the files
 * beside it (task-kinds, live-task, attempt-loop, admission, settings, types, index).
 * Beside them: worktree (git worktrees, knowing no task) → coding (the coding-task kind) → broker.ts, which
 * reaches coding only through its entry (coding/index.ts) and the task-kind seam (task-kinds.ts).
 * Inside hub/: http (shared by both servers) → control (the endpoint) → assemble.ts (the one hub: lock, broker, webhooks,
 * scheduler, bridge, control endpoint, mounts) → the shells that call it: headless (`serve`), desktop/app-hub.ts (the
 * app), client/open.ts.
 */
const layer = (name) => `^src/${name}/`;
/** broker.ts, settings.ts, types.ts, index.ts: the top of the core (errors.ts and log.ts are its foundations). */
const BROKER_TOP = '^src/broker/(?!(errors|log)\\.ts$)[^/]+$';
/** The CLI's front-end side: the task and change commands and what they share (not serve, worker, check, new). */
const CLI_FRONT_END =
  '^src/cli/(run/|broker-flags\\.ts|command\\.ts|terminal-text\\.ts|commands/(run|wait|logs|tasks|show|cancel|retry|answer|diff|apply|discard|worktrees|schedule|stats|gateway|mcp)\\.ts)';
/** The core's layers under the top, which know no kind of task. */
const BROKER_LOW = '^src/broker/(transport|process|guards|task|history|queue)/';
const forbid = (name, from, toPaths, comment) => ({
  name,
  comment,
  severity: 'error',
  from: { path: from },
  to: { path: toPaths },
});

module.exports = {
  forbidden: [
    { name: 'no-circular', severity: 'error', comment: 'Cycles make layers meaningless.', from: {}, to: { circular: true } },
    forbid(
      'protocol-is-the-bottom',
      layer('protocol'),
      '^src/(?!protocol/)',
      'The wire protocol is shared by both sides and imports nothing else.',
    ),
    forbid(
      'model-over-protocol-only',
      layer('model'),
      '^src/(?!(protocol|model)/)',
      'The task model is shared by the core and every front-end.',
    ),
    forbid(
      'sdk-over-protocol-only',
      layer('agent-runtime'),
      '^src/(?!(protocol|agent-runtime)/)',
      'Sub-agents load the SDK: it must stay small and Electron-free.',
    ),
    forbid(
      'relay-over-protocol-only',
      layer('relay'),
      '^src/(?!(protocol|relay)/)',
      'The stdio MCP relay runs beside a sub-agent and inside the CLI it starts: protocol framing only.',
    ),
    forbid(
      'acp-adapter-is-a-sub-agent',
      layer('acp'),
      '^src/(?!(protocol|agent-runtime|relay|acp)/)',
      'The ACP adapter is a sub-agent like any other: the wire protocol, the agent runtime and the ACP SDK, nothing of the broker or hub.',
    ),
    forbid(
      'base-is-a-leaf',
      layer('base'),
      '^src/(?!base/)',
      'The utilities under every layer (the logger, ending a process tree) know nothing of Backchannel.',
    ),
    forbid('broker-is-the-core', layer('broker'), '^src/(?!(protocol|model|base|broker)/)', 'The core knows no front-end.'),
    forbid(
      'bridge-is-a-contract',
      layer('bridge'),
      '^src/(?!(protocol|model|bridge)/|schedules/(schedule|views)\\.ts$)',
      "The bridge runs in browsers too: no broker internals (the schedules' shapes are plain zod declarations).",
    ),
    forbid('templates-under-the-hub', layer('templates'), '^src/(?!(protocol|model|bridge|templates)/)', ''),
    forbid(
      'fleet-over-the-core',
      layer('fleet'),
      '^src/(?!(protocol|model|broker|fleet)/)',
      'The fleet adapts the core to Redis: it knows no front-end; the hub and the CLI use it.',
    ),
    forbid(
      'paths-over-the-core',
      layer('paths'),
      '^src/(?!(protocol|model|broker|paths)/)',
      'Where Backchannel keeps its files, for the hub, the client and the commands alike: no side of the seam owns it.',
    ),
    forbid(
      'schedules-over-the-core',
      layer('schedules'),
      '^src/(?!(protocol|model|broker|schedules)/)',
      'Schedules (their store, times and policies) sit over the core; the hub fires them, every front-end reaches them through it.',
    ),
    forbid(
      'loopback-is-a-leaf',
      layer('loopback'),
      '^src/(?!loopback/)',
      "The HTTP guards of a loopback server know nothing of Backchannel: the hub's servers and the gateway use them.",
    ),
    forbid(
      'hub-http-is-shared',
      '^src/hub/http/',
      '^src/hub/(control|headless)/',
      "The hub's HTTP pieces serve both its servers, so they import neither.",
    ),
    forbid('control-under-headless', '^src/hub/control/', '^src/hub/headless/', '`serve` opens the control endpoint, not the other way.'),
    forbid(
      'hub-assembled-in-one-place',
      '^src/(?!(hub/headless/|desktop/app-hub\\.ts$|client/open\\.ts$))',
      '^src/hub/assemble\\.ts$',
      'The hub is assembled once (hub/assemble.ts); only the shells call it: serve (hub/headless), the app, become-hub.',
    ),
    {
      name: 'hub-pieces-through-the-assembly',
      comment: 'The control endpoint and the scheduler are started by the assembly alone, so every shell gets the same pieces.',
      severity: 'error',
      from: { path: '^src/(?!hub/assemble\\.ts$)' },
      to: { path: '^src/hub/(control/server|scheduler)\\.ts$', dependencyTypesNot: ['type-only'] },
    },
    forbid(
      'queue-seam-under-the-broker',
      '^src/broker/(transport|process|guards|task|history)/',
      '^src/broker/queue/',
      'Only the top of the core (broker.ts, its attempt loop, settings) chooses where attempts run.',
    ),
    forbid(
      'hub-owns-the-broker',
      layer('hub'),
      '^src/(main|gateway|cli|mcp|client|renderer|preload)/',
      'The hub serves the front-ends; it imports none of them, nor their side of the seam.',
    ),
    forbid(
      'client-is-the-seam',
      layer('client'),
      '^src/(main|gateway|cli|mcp|renderer|preload)/',
      'The seam every front-end uses knows none of them.',
    ),
    forbid(
      'gateway-is-a-front-end',
      layer('gateway'),
      '^src/(main|cli|mcp|renderer|preload|hub/headless)/',
      'Front-ends do not import each other.',
    ),
    forbid(
      'electron-main-is-a-front-end',
      layer('main'),
      '^src/(gateway|cli|mcp|renderer|hub/headless)/',
      'Front-ends do not import each other; the app reaches its hub and MCP over HTTP through src/desktop.',
    ),
    forbid(
      'desktop-under-the-shell',
      layer('desktop'),
      // One exception: the app mounts MCP over HTTP exactly as `serve` does, through the light mount entry.
      '^src/(main|gateway|cli|mcp/(?!http-(mount|endpoint)\\.ts$)|renderer|preload|hub/headless)/',
      "The desktop app's Electron-free parts (its hub, IPC handlers, tray menu, lifecycle): under the shell, no other front-end.",
    ),
    forbid('desktop-for-the-shell', '^src/(?!(main|desktop)/)', '^src/desktop/', 'Only the Electron shell uses the desktop parts.'),
    forbid(
      'conformance-over-the-core',
      layer('conformance'),
      '^src/(?!(protocol|model|broker|conformance)/)',
      '`backchannel check` runs agents under the core broker, nothing else.',
    ),
    forbid(
      'mcp-is-a-front-end',
      layer('mcp'),
      '^src/(main|gateway|cli|renderer|preload|broker)/',
      'The MCP server is a front-end over the bridge (the hub, or a headless host).',
    ),
    forbid(
      'front-ends-through-the-client',
      `^src/(mcp|gateway)/|${CLI_FRONT_END}`,
      '^src/(?!(client|model|base|config|protocol|paths|loopback|mcp|cli|gateway)/|version\\.ts$|schedules/schedule\\.ts$)',
      "Front-ends reach tasks only through the one client (src/client/index.ts), the task model, the config and its paths (and the schedule's shape: a plain declaration, checked before a hub is asked).",
    ),
    forbid(
      'front-ends-through-the-client-entry',
      `^src/(mcp|gateway)/|${CLI_FRONT_END}`,
      '^src/client/(?!index\\.ts$)',
      "Only the client's entry: what a front-end may use of it is what index.ts exports.",
    ),
    forbid(
      'client-entry-over-the-core-entry',
      '^src/client/index\\.ts$',
      '^src/broker/(?!index\\.ts$)',
      "What front-ends need of the core reaches the client's entry from the task model, the base leaf or the core's public entry (broker/index.ts), never from a file inside the core.",
    ),
    forbid('cli-is-a-front-end', layer('cli'), '^src/(main|renderer|preload)/', 'The CLI never loads the Electron shell or the panel.'),
    forbid(
      'cli-uses-the-sdk-entry',
      layer('cli'),
      '^src/agent-runtime/(?!index\\.ts$)',
      "Only the SDK's public entry, as a sub-agent would.",
    ),
    forbid(
      'browser-side',
      '^src/(renderer|preload)/',
      '^src/(?!(model|bridge|renderer|preload)/|notify/(events|notices)\\.ts$)',
      'Browser code sees only the bridge contract, the task model and the one notification decision.',
    ),
    forbid(
      'notify-over-the-core',
      layer('notify'),
      '^src/(?!(protocol|model|notify)/|broker/log\\.ts$|config/)',
      'Notifications know the task model, the logger and the config file; the hub feeds them, never the other way.',
    ),
    forbid(
      'notify-decision-runs-anywhere',
      '^src/notify/(events|notices)\\.ts$',
      '^src/(?!(model/|notify/(events|notices)\\.ts$))',
      'The one notification decision and its words run in the browser panel too: the task model only.',
    ),
    {
      name: 'notify-fed-by-the-assembly',
      comment:
        "The hub's notifications are fed once, by the hub assembly; shells subscribe through the hub, the browser runs the decision alone.",
      severity: 'error',
      from: { path: '^src/(?!(hub/assemble\\.ts$|notify/))' },
      to: { path: '^src/notify/(?!(events|notices)\\.ts$)', dependencyTypesNot: ['type-only'] },
    },
    forbid(
      'electron-only-in-the-shell',
      '^src/(?!(main|preload)/)',
      '^node_modules/electron/',
      'Only the Electron front-end imports electron.',
    ),
    forbid('broker-foundations', '^src/broker/(errors|log)\\.ts$', '^src/broker/(?!(errors|log)\\.ts$)', ''),
    forbid(
      'transport-process-low',
      '^src/broker/(transport|process)/',
      `^src/broker/(guards|task|history)/|${BROKER_TOP}`,
      'Transport and process know nothing of guards, tasks or history.',
    ),
    forbid('guards-under-task', '^src/broker/guards/', `^src/broker/(task|history)/|${BROKER_TOP}`, ''),
    forbid('task-under-history', '^src/broker/task/', `^src/broker/history/|${BROKER_TOP}`, 'A task and its attempts know no journal.'),
    forbid(
      'kinds-over-the-core',
      BROKER_LOW,
      '^src/broker/(coding|worktree|acp)/',
      'Tasks, their attempts and history know no kind of task: kinds hook in through task-kinds.ts.',
    ),
    forbid(
      'worktrees-know-no-task',
      '^src/broker/worktree/',
      `^src/broker/(transport|process|guards|task|queue|coding)/|^src/broker/history/(?!data-dir\\.ts$)|${BROKER_TOP}`,
      'Git worktrees, diffs and their registry (kept under the data directory rules): the coding kind drives them; they know no task.',
    ),
    forbid(
      'coding-is-a-kind',
      '^src/broker/coding/',
      `^src/broker/queue/|${BROKER_TOP.replace('(errors|log)', '(errors|log|task-kinds)')}`,
      'The coding kind knows the broker only through the seam (task-kinds.ts and its KindContext).',
    ),
    forbid(
      'acp-is-a-kind',
      '^src/broker/acp/',
      `^src/broker/(queue|coding|worktree)/|${BROKER_TOP.replace('(errors|log)', '(errors|log|task-kinds|run-policy)')}`,
      'The ACP kind knows the broker only through the seam (task-kinds.ts), and the run policy it judges by.',
    ),
    forbid(
      'broker-through-the-seam',
      BROKER_TOP,
      '^src/broker/(coding/(?!index\\.ts$)|acp/(?!index\\.ts$)|worktree/)',
      "The broker's top reaches coding tasks through their entry (coding/index.ts) and the seam, never their internals.",
    ),
    forbid(
      'history-under-the-broker',
      '^src/broker/history/',
      BROKER_TOP,
      'History and recovery use Task transitions; only broker.ts (the queue) sits above them.',
    ),
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    includeOnly: { path: ['^src/', '^node_modules/electron/'] },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.js'],
    },
  },
};
