/**
 * The one sanitiser for text the CLI shows on a terminal. Agent text (partial messages, questions,
 * error messages, stderr tails) could otherwise carry escape sequences: retitle the window (OSC),
 * clear the screen, move the cursor to overwrite lines, or print fake coloured "OK" lines.
 *
 * Every C0 and C1 control character except newline and tab, DEL, and the bidirectional overrides
 * become U+FFFD. Only text bound for a TTY is changed: piped output (a payload read by a program)
 * stays byte for byte.
 */

const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/** `text` with every control character that could steer a terminal replaced by U+FFFD. */
export function neutralise(text: string): string {
  return text.replace(CONTROL, '\uFFFD');
}

/** Writes `text` to `stream`, neutralised when the stream is a terminal. */
export function writeText(stream: NodeJS.WriteStream, text: string): void {
  stream.write(stream.isTTY ? neutralise(text) : text);
}
