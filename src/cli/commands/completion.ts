/**
 * `backchannel completion bash|zsh|fish`: a completion script for the shell. Command names are written
 * in; each command's options are read from its own `--help` when completing, so they never go stale.
 */
import { EXIT, parseCommandLine, usageError, type CliCommand } from '../command.js';

const HELP = `Usage: backchannel completion <bash|zsh|fish>

Prints a shell completion script for backchannel. Install it with:
  bash:  backchannel completion bash > ~/.local/share/bash-completion/completions/backchannel
  zsh:   backchannel completion zsh > "\${fpath[1]}/_backchannel"   (or: source <(backchannel completion zsh))
  fish:  backchannel completion fish > ~/.config/fish/completions/backchannel.fish

Options:
  -h, --help   show this help`;

/** Long options in a command's help text (`backchannel <command> --help`). */
const OPTIONS_OF = `backchannel "$cmd" --help 2>/dev/null | grep -oE -- '--[a-z][a-z-]*' | sort -u`;

function bash(commands: string[]): string {
  return `# bash completion for backchannel (backchannel completion bash)
_backchannel() {
  local cur=\${COMP_WORDS[COMP_CWORD]} cmd=\${COMP_WORDS[1]}
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W "${commands.join(' ')} help" -- "$cur"))
  elif [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$(${OPTIONS_OF})" -- "$cur"))
  else
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}
complete -o filenames -F _backchannel backchannel
`;
}

function zsh(commands: string[]): string {
  return `#compdef backchannel
# zsh completion for backchannel (backchannel completion zsh)
_backchannel() {
  local cmd=\${words[2]}
  if (( CURRENT == 2 )); then
    compadd -- ${commands.join(' ')} help
  elif [[ \${words[CURRENT]} == -* ]]; then
    compadd -- \${(f)"$(${OPTIONS_OF})"}
  else
    _files
  fi
}
compdef _backchannel backchannel
`;
}

function fish(commands: string[]): string {
  return `# fish completion for backchannel (backchannel completion fish)
complete -c backchannel -f -n __fish_use_subcommand -a '${commands.join(' ')} help'
complete -c backchannel -n 'not __fish_use_subcommand' -a '(set -l cmd (commandline -opc)[2]; backchannel $cmd --help 2>/dev/null | string match -ar -- "--[a-z][a-z-]*" | sort -u)'
`;
}

const SHELLS = { bash, zsh, fish } as const;

export const command: CliCommand = {
  async run(argv) {
    const parsed = parseCommandLine('completion', argv, {}, HELP, true);
    if (typeof parsed === 'number') return parsed;
    const [shell, extra] = parsed.positionals;
    if (!shell || !Object.hasOwn(SHELLS, shell) || extra !== undefined) {
      return usageError(`backchannel completion: expected one shell, bash, zsh or fish${shell ? `, got "${shell}"` : ''}`, HELP);
    }
    const { commandNames } = await import('../main.js');
    process.stdout.write(SHELLS[shell as keyof typeof SHELLS](commandNames()));
    return EXIT.ok;
  },
};
