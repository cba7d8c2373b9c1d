/**
 * Preload of the panel window. Sandboxed: bundled into one CommonJS file (dist/preload/index.cjs)
 * because a sandboxed preload can only require 'electron'. Exposes exactly the typed bridge as
 * `window.backchannel` and nothing else (no ipcRenderer, no Node).
 */
import { contextBridge, ipcRenderer } from 'electron';
import { createIpcBridge } from '../bridge/ipc-client.js';

contextBridge.exposeInMainWorld('backchannel', createIpcBridge(ipcRenderer));
