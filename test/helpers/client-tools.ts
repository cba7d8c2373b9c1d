/** A client's `Write` tool, as a coding client offers it: the tool the bridged-agent tests script a call to. */
import type { ToolDefinition } from '../../src/model/tools.js';

export const WRITE_TOOL: ToolDefinition = {
  name: 'Write',
  description: 'Writes a file to the local filesystem.',
  input_schema: {
    type: 'object',
    properties: { file_path: { type: 'string' }, content: { type: 'string' } },
    required: ['file_path', 'content'],
  },
};
