/** The hub's calls on coding tasks' changes (docs/coding-agents.md): each one call of the coding kind, its errors translated. */
import type { BackchannelBridge } from '../../bridge/contract.js';
import { BridgeError } from '../../model/errors.js';
import type { BrokerLike, CodingLike } from '../broker-like.js';
import { translate } from './common.js';

type ChangeCall = 'taskChange' | 'applyChanges' | 'discardChange' | 'keepBranch' | 'listWorktrees';

/** The change calls over `broker.coding`; a broker without it keeps no worktrees: `not_found`, and an empty list. */
export function changeCalls(broker: BrokerLike): Pick<BackchannelBridge, ChangeCall> {
  const call = async <T>(run: (coding: CodingLike) => T | Promise<T>): Promise<T> => {
    const { coding } = broker;
    if (!coding) throw new BridgeError('not_found', 'This hub keeps no worktrees');
    try {
      return await run(coding);
    } catch (error) {
      return translate(error);
    }
  };
  return {
    taskChange: (id) => call((coding) => coding.change(id)),
    applyChanges: (ids) => call((coding) => coding.apply(ids)),
    discardChange: (id) => call((coding) => coding.discard(id)),
    keepBranch: (id) => call((coding) => coding.keepBranch(id)),
    listWorktrees: async () => (broker.coding ? call((coding) => coding.list()) : []),
  };
}
