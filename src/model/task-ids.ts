/**
 * The forms of a task id a person may type, and the one function that finds a task by them, so every
 * id the product prints names its task again: the whole id, any unique start of it (as `docker` takes
 * abbreviated ids), and its short id — the random tail of the UUID that names a coding task's branch
 * (`backchannel/<short id>`), its worktree directory and its line in the combined review — with or
 * without the `backchannel/` prefix and with or without the UUID's dashes.
 *
 * A UUIDv7 starts with its creation time in milliseconds, so the starts of tasks made within a minute
 * share their first 8 characters; the short id is random, so it is the form to print for people.
 */

/** The short id of a task: the last 12 hex digits of its UUID (random in a UUIDv7), lower case. */
export function shortTaskId(taskId: string): string {
  return taskId.replace(/-/g, '').slice(-12).toLowerCase();
}

/** The ids among `ids` that `given` names: those it starts, or whose short id it ends. */
export function taskIdsNamedBy(ids: Iterable<string>, given: string): string[] {
  const typed = given
    .trim()
    .toLowerCase()
    .replace(/^backchannel\//, '');
  if (typed === '') return [];
  const bare = typed.replace(/-/g, '');
  const found: string[] = [];
  for (const id of ids) {
    const lower = id.toLowerCase();
    const hex = lower.replace(/-/g, '');
    if (lower.startsWith(typed) || (bare !== '' && (hex.startsWith(bare) || shortTaskId(id).endsWith(bare)))) found.push(id);
  }
  return found;
}
