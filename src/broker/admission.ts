/**
 * Admission at submit: a spec runs only when the run policy admits its origin, and it is named after
 * the template or preset the policy's rule says it is (a claimed `preset` the rule does not give is
 * dropped). From an untrusted door, a program allowed by name is run by the absolute path the policy
 * found it at when it was made. A refusal is a `refused` BrokerError, logged once: nothing is registered, nothing run.
 */
import path from 'node:path';
import type { TaskSpec } from '../model/task.js';
import { BrokerError } from './errors.js';
import type { Logger } from './log.js';
import { isTrustedOrigin, RunPolicy } from './run-policy.js';

/** The policy of a broker given none: only trusted origins run. */
const NO_RULES = new RunPolicy([]);

/** The spec as `policy` admits it; throws BrokerError('refused') when its origin may not run it. */
export function admitted(spec: TaskSpec, policy: RunPolicy | undefined, logger: Logger): TaskSpec {
  const verdict = (policy ?? NO_RULES).judge({
    command: spec.command,
    args: spec.args ?? [],
    cwd: path.resolve(spec.cwd ?? process.cwd()),
    origin: spec.origin,
    setsEnv: spec.baseEnv !== undefined || Object.keys(spec.env ?? {}).length > 0,
  });
  if (!verdict.allowed) {
    logger.warn(verdict.message);
    throw new BrokerError('refused', verdict.message);
  }
  const preset = verdict.rule?.preset;
  const named = preset === spec.preset ? spec : withPreset(spec, preset);
  // From an untrusted door, a program allowed by name runs from where the policy found it: a PATH
  // entry relative to the caller's working directory cannot swap it for the caller's own.
  const resolved = verdict.rule?.resolved;
  if (!isTrustedOrigin(spec.origin) && resolved !== undefined && spec.command === verdict.rule!.command)
    return { ...named, command: resolved };
  return named;
}

function withPreset(spec: TaskSpec, preset: string | undefined): TaskSpec {
  const { preset: _claimed, ...rest } = spec;
  return preset === undefined ? rest : { ...rest, preset };
}
