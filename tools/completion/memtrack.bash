# bash completion for memtrack(1), installed by `make install` as
# $(PREFIX)/share/bash-completion/completions/memtrack (and for its exec-harness link).
# The subcommands and their options are read from `memtrack SUBCOMMAND --help`, so that the
# completion cannot fall behind the binary; tests/it_manpage.c drives it as bash does.

_memtrack_help_options()
{
	# The options a --help text defines: the lines that start with a dash, up to the
	# description (two spaces), every -x and --name in them.
	"$@" --help 2>/dev/null | sed -n 's/^ \{1,\}\(-.*\)/\1/p' | sed 's/  .*//' |
		grep -oE '(^|[ ,[])--?[A-Za-z][A-Za-z0-9-]*' | sed 's/^[ ,[]//' | sort -u
}

_memtrack()
{
	local cur=${COMP_WORDS[COMP_CWORD]} prog=${COMP_WORDS[0]} sub= i
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		--) COMPREPLY=($(compgen -c -- "$cur")); return ;;
		-*) ;;
		*) sub=${COMP_WORDS[i]}; break ;;
		esac
	done
	if [ "${prog##*/}" = exec-harness ]; then
		sub=exec-harness
	fi
	if [ -z "$sub" ]; then
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "--help --version" -- "$cur"))
		else
			COMPREPLY=($(compgen -W "$("$prog" --help 2>/dev/null |
				sed -n 's/^  \([a-z][a-z-]*\)  .*/\1/p') help" -- "$cur"))
		fi
		return
	fi
	if [ "$sub" = help ]; then
		COMPREPLY=($(compgen -W "$("$prog" --help 2>/dev/null |
			sed -n 's/^  \([a-z][a-z-]*\)  .*/\1/p')" -- "$cur"))
		return
	fi
	if [[ $cur == -* ]]; then
		if [ "${prog##*/}" = exec-harness ]; then
			COMPREPLY=($(compgen -W "$(_memtrack_help_options "$prog")" -- "$cur"))
		else
			COMPREPLY=($(compgen -W "$(_memtrack_help_options "$prog" "$sub")" -- "$cur"))
		fi
		return
	fi
	# attach's PID: the processes running (after -o, its file).
	if [ "$sub" = attach ] && [[ ${COMP_WORDS[COMP_CWORD - 1]} != @(-o|--output) ]]; then
		COMPREPLY=($(compgen -W "$(cd /proc && printf '%s\n' [0-9]*)" -- "$cur"))
		return
	fi
	# After an option that takes a file, and for report's FILE and run's CMD: files.
	COMPREPLY=($(compgen -f -- "$cur"))
}
complete -o filenames -o bashdefault -F _memtrack memtrack exec-harness
