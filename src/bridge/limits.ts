/** The sizes every door accepts: declared in the model (src/model/limits.ts), below the task request's schema. */
export { checkInputSize, formatLimit, MAX_INPUT_BYTES, MAX_SUBMIT_BYTES } from '../model/limits.js';
