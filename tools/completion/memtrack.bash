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

_memtrack_option_values()
{
	# The names an option takes, as the binary says when it refuses a value: "OPT takes A, B or
	# C, not '...'" (run, attach, report) or clap's "(possible values: A, B, C)" (exec-harness).
	# A refused value stops memtrack at its command line: nothing runs.
	"$@" 2>&1 >/dev/null | sed -n -e 's/.* takes \(.*\), not .*/\1/p' \
		-e 's/.*(possible values: \(.*\))/\1/p' | sed 's/, / /g; s/ or / /g'
}

_memtrack()
{
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]} prog=${COMP_WORDS[0]}
	local sub= i opt
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		--) break ;;
		-*) ;;
		*) [ -z "$sub" ] && sub=${COMP_WORDS[i]} ;;
		esac
	done
	# After `--`: the command, then its own arguments as bash completes them for it.
	if [ "$i" -lt "$COMP_CWORD" ]; then
		if [ $((i + 1)) -eq "$COMP_CWORD" ]; then
			COMPREPLY=($(compgen -c -- "$cur"))
		elif declare -F _command_offset >/dev/null; then
			_command_offset $((i + 1))
		else
			COMPREPLY=($(compgen -f -- "$cur"))
		fi
		return
	fi
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
	# An option's value: --opt=VALUE (bash splits the '=' into a word of its own, unless
	# COMP_WORDBREAKS lacks it), or the word after an option that takes one of a few names.
	# --stacks and --folded take theirs only after '='.
	opt=
	if [[ $cur == --*=* ]]; then
		opt=${cur%%=*}
		cur=${cur#*=}
	elif [ "$cur" = = ]; then
		opt=$prev
		cur=
	elif [ "$prev" = = ] && [ "$COMP_CWORD" -ge 3 ]; then
		opt=${COMP_WORDS[COMP_CWORD - 2]}
	elif [[ $prev == @(--watcher|--probe-placement|--probe-scope|--sites-by|-m|--mode) ]]; then
		opt=$prev
	fi
	case $opt in
	--watcher | --probe-placement | --probe-scope | --stacks | --sites-by | --folded | -m | --mode)
		local values
		if [ "${prog##*/}" = exec-harness ]; then
			values=$(_memtrack_option_values "$prog" "$opt" "\001" -- true)
		elif [ "$sub" = exec-harness ]; then
			values=$(_memtrack_option_values "$prog" exec-harness "$opt" "\001" -- true)
		else
			values=$(_memtrack_option_values "$prog" "$sub" "$opt=\001" -- true)
		fi
		if [ -n "$values" ]; then
			COMPREPLY=($(compgen -W "$values" -- "$cur"))
			return
		fi
		;;
	esac
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
