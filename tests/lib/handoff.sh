#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# handoff.sh HOW GDB ERR MEMTRACK-ARGS...: run memtrack as a person does and take the process it
# hands over with the gdb command it prints. HOW: "setsid" (its own session and process group) or
# "pty" (script(1): a terminal, memtrack in the foreground). GDB: "continue" (run it to its end)
# or "detach" (attach and detach at once: it must run on by itself). memtrack's stderr goes to
# ERR. Prints the process's state when handed over, gdb's last word, memtrack's exit status.
# GDB "quick": attach and detach as fast as gdb can (no shared library symbols, no handle
# commands); "blip:PATH": attach and detach with PATH (fixtures/ptrace_blip.c), in well under the
# 100 ms between two looks of memtrack at the process.
how=$1 what=$2 err=$3
shift 3
case $how in
setsid) setsid -w "$@" 2>"$err" </dev/null >/dev/null & ;;
pty)
	cmd=$(printf "'%s' " "$@")
	script -qec "$cmd 2>'$err'" /dev/null </dev/null >/dev/null &
	;;
*) echo "usage: handoff.sh setsid|pty continue|detach|quick|blip:PATH ERR MEMTRACK-ARGS..." >&2; exit 2 ;;
esac
mt=$!
i=0
until grep -q "Attach with: .*SIGCONT nostop noprint pass.$" "$err" 2>/dev/null; do
	i=$((i + 1))
	if [ $i -gt 600 ] || ! kill -0 $mt 2>/dev/null; then
		echo "no handoff"
		kill $mt 2>/dev/null
		exit 1
	fi
	sleep 0.1
done
gdb=$(sed -n 's/.*Attach with: //p' "$err")
pid=$(echo "$gdb" | sed -n 's/^gdb -p \([0-9]*\) .*/\1/p')
echo "state=$(sed -n 's/^State:[[:space:]]*\(.\).*/\1/p' "/proc/$pid/status")"
case $what in
continue) eval "$gdb -batch -nx -ex continue" >"$err.gdb" 2>&1 ;;
quick) gdb -batch -nx -iex 'set auto-solib-add off' -p "$pid" -ex detach >"$err.gdb" 2>&1 ;;
blip:*) "${what#blip:}" "$pid" >"$err.gdb" 2>&1 && echo "[Inferior 1 (process $pid) detached]" >>"$err.gdb" ;;
*) eval "$gdb -batch -nx" >"$err.gdb" 2>&1 ;;
esac
echo "gdb: $(grep '^\[Inferior 1' "$err.gdb")"
wait $mt
echo "rc=$?"
