package main

import (
	"fmt"
	"io"
	"strings"
)

// cmdCompletion prints a completion script for bash, zsh or fish: command names, and each
// command's flags (read from `latchkey <command> -h` when completing).
func cmdCompletion(args []string, stdout io.Writer) error {
	if len(args) != 1 {
		return usageError{"completion takes one shell: bash, zsh or fish (e.g. source <(latchkey completion bash))"}
	}
	cmds := strings.Join(commands, " ")
	switch args[0] {
	case "bash":
		fmt.Fprintf(stdout, `# latchkey completion for bash: source <(latchkey completion bash)
_latchkey() {
  local cur=${COMP_WORDS[COMP_CWORD]}
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W "%s" -- "$cur"))
  elif [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$(latchkey "${COMP_WORDS[1]}" -h 2>&1 | sed -n 's/^  \(-[a-z0-9-]*\).*/-\1/p')" -- "$cur"))
  else
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}
complete -F _latchkey latchkey
`, cmds)
	case "zsh":
		fmt.Fprintf(stdout, `#compdef latchkey
# latchkey completion for zsh: source <(latchkey completion zsh)
_latchkey() {
  if (( CURRENT == 2 )); then
    compadd -- %s
  elif [[ "$PREFIX" == -* ]]; then
    compadd -- $(latchkey "$words[2]" -h 2>&1 | sed -n 's/^  \(-[a-z0-9-]*\).*/-\1/p')
  else
    _files
  fi
}
compdef _latchkey latchkey
`, cmds)
	case "fish":
		fmt.Fprintf(stdout, "# latchkey completion for fish: latchkey completion fish | source\n")
		fmt.Fprintf(stdout, "complete -c latchkey -f -n __fish_use_subcommand -a '%s'\n", cmds)
		fmt.Fprintf(
			stdout,
			"complete -c latchkey -n 'not __fish_use_subcommand' -a '(latchkey (commandline -opc)[2] -h 2>&1 | sed -n \"s/^  -\\([a-z0-9-]*\\).*/--\\1/p\")'\n",
		)
	default:
		return usageError{fmt.Sprintf("completion: unknown shell %q (bash, zsh or fish)", args[0])}
	}
	return nil
}
