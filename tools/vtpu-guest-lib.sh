# SPDX-License-Identifier: MIT
# shellcheck shell=bash disable=SC2034,SC2154 # sets and reads the runners' globals
# vtpu-guest-lib.sh: what tools/vtpu-vm (a QEMU guest) and tools/vtpu-uml
# (User-Mode Linux) share, sourced by both so that they cannot drift: the
# patterns that make a kernel log fail a run, the script the guest runs,
# the options both take, the run's temp dir, and how a run ends (the
# diagnosis of a guest that died, the dmesg check, the exit status).
#
# Not a program: a runner sources it from the directory it lives in (the
# build installs a copy beside build/bin/vtpu-vm, see tools/tools.mk),
# after setting prog (its name, which prefixes its messages) and here (its
# directory, where the checkout is looked for); it defines usage() (its
# --help text, on stdout). The functions below read and set the runner's
# globals, named where each is defined.
#
# Exit status of both runners: CMD's; 124 on timeout; 125 when the guest,
# the module or the runner itself fails (a usage error included, as with
# timeout(1) and env(1): a wrapper's own failures must not pass for CMD's
# exit status, and tools/run-checks counts 124 and 125 as failures).

# ---- kernel log checks ------------------------------------------------------

# Kernel log lines that fail a run: a WARN or BUG report (the lockdep and
# atomic-sleep ones are WARNINGs and BUGs too; "kernel BUG at" has no
# colon after BUG), an oops, a #GP, KASAN, UBSAN, kmemleak, a hung task,
# an RCU stall, any backtrace, a panic. Case matters: "Warning:" is not a
# WARN(). selftests/vtpu/test-guest-lib tries each on sample dmesg lines.
GUEST_SPLAT='BUG:|kernel BUG at|WARNING:|Oops|general protection|KASAN|UBSAN:|kmemleak|possible circular|possible recursive|sleeping function called|INFO: task .* blocked|INFO: rcu_.* stall|Call Trace|Kernel panic'

# guest_has_splat: succeeds when the kernel log on stdin has a splat.
guest_has_splat() {
	grep -Eq "$GUEST_SPLAT"
}

# guest_show_splats: the splats in the kernel log on stdin, with some
# context, at most 150 lines (a dump, never a failure of its own).
guest_show_splats() {
	grep -E -B 5 -A 30 "$GUEST_SPLAT" | head -n 150 || true
}

# check_dmesg FILE: the kernel log since this run's begin marker (written
# by the guest's run script, or by vtpu-vm --host); shows the module's
# lines with -v; a splat fails the run (exit 125) unless --no-splat-check.
# Reads prog, tag, verbose, module, modname, splat_check.
check_dmesg() {
	local log
	log=$(sed -n "/$prog: begin $tag\$/,\$p" "$1")
	if ((verbose)) && [ -n "$module" ]; then
		grep -F "$modname" <<<"$log" | grep -v "$prog: begin" >&2 || true
	fi
	if ((splat_check)) && guest_has_splat <<<"$log"; then
		guest_show_splats <<<"$log" >&2
		echo "$prog: a kernel splat in dmesg (above)" >&2
		exit 125
	fi
}

# ---- messages, usage, version -------------------------------------------------

die() {
	echo "$prog: $*" >&2
	exit 125
}

# usage_error [WHY]: WHY and the usage on stderr, exit 125 (see above).
usage_error() {
	[ -z "${1-}" ] || echo "$prog: $1" >&2
	usage >&2
	exit 125
}

# find_checkout DIR: the vtpu checkout DIR (a runner's directory) is in:
# DIR/.. for tools/, DIR/../.. for build/bin/. Prints nothing when there
# is none (a runner copied elsewhere).
find_checkout() {
	local d
	for d in "$1/.." "$1/../.."; do
		if [ -f "$d/kmod/Kbuild" ]; then
			(cd "$d" && pwd)
			return
		fi
	done
}

# print_version: "PROG X.Y.Z", from the checkout's VERSION file, the one
# place the release number is kept. Reads prog, here.
print_version() {
	local top
	top=$(find_checkout "$here")
	if [ -z "$top" ] || ! [ -f "$top/VERSION" ]; then
		die "no VERSION file in a checkout around $here"
	fi
	echo "$prog $(cat "$top/VERSION")"
}

# ---- options -----------------------------------------------------------------

# guest_defaults: the defaults of the options both runners take.
guest_defaults() {
	params='' module='' no_module=0 timeout=900 mem=2G verbose=0 preload=''
	append='' dmesg_out='' splat_check=1 smp=1
}

# need_arg OPTION [VALUE...]: OPTION must be followed by a value.
need_arg() {
	(($# >= 2)) || usage_error "$1 wants an argument"
}

# guest_option ARGS...: takes the option in $1 when it is one both
# runners know (setting its variable; --help and --version exit here),
# and sets opt_words to the number of words it took. Returns 1 for
# another option, which the runner's own parser saw first.
guest_option() {
	opt_words=1
	case $1 in
	--params | --module | --timeout | --mem | --smp | --append | --dmesg | \
		--preload)
		need_arg "$@"
		opt_words=2
		;;
	esac
	case $1 in
	--params) params=$2 ;;
	--module) module=$2 ;;
	--preload)
		[ -f "$2" ] || die "--preload: no such module: $2"
		preload="$preload $(readlink -f "$2")"
		;;
	--no-module) no_module=1 ;;
	--timeout) timeout=$2 ;;
	--mem) mem=$2 ;;
	--smp) smp=$2 ;;
	--append) append=$2 ;;
	--dmesg) dmesg_out=$2 ;;
	--no-splat-check) splat_check=0 ;;
	-v | --verbose) verbose=1 ;;
	-h | --help) usage; exit 0 ;;
	--version) print_version; exit 0 ;;
	*) return 1 ;;
	esac
}

# guest_check_options: what both runners refuse after parsing.
guest_check_options() {
	[[ $timeout =~ ^[0-9]+$ ]] || die "--timeout wants whole seconds"
}

# resolve_module: the module to load as an absolute path, and its name
# for rmmod (modname). Reads and sets module.
resolve_module() {
	[ -f "$module" ] || die "no such module: $module"
	module=$(readlink -f "$module")
	modname=$(basename "$module" .ko)
	modname=${modname//-/_}
}

# ---- the run -------------------------------------------------------------------

# make_run_dir: a temp dir for this run (tmp), removed on exit, with
# out/, the writable share the guest sees; tag (from tmp's name) marks
# this run's begin in the kernel log.
# The EXIT trap removes tmp only in this shell: a background child killed
# between bash's fork and its exec (vtpu-vm's boot watchdog can kill qemu's
# `timeout` within milliseconds) runs the inherited EXIT trap itself, and
# once removed tmp under the running script (test-vtpu-vm in CI,
# 2026-11-28). The test is an `if`, not `[ ] ||`: in a trap run for a
# signal, bash 5.2 can fail the trap's first command, and a failed test
# must keep the directory, not remove it.
make_run_dir() {
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/$prog.XXXXXX")
	run_dir_owner=$BASHPID
	trap 'if [ "$BASHPID" = "$run_dir_owner" ]; then rm -rf "$tmp"; fi' EXIT
	tag=${tmp##*.}
	out=$tmp/out
	mkdir "$out"
}

# The per-run script, run as root by the guest's bash in its overlay root,
# from the writable share (out/ on the host: /run/PROG in the guest). It
# reads ./conf (written by write_run_files) and ./env, and leaves
# ./booted once it starts, then ./result ("ok RC", "insmod RC", "cwd 0" or
# "rmmod RC") and ./dmesg. Its own output goes to the kernel console;
# CMD's to the guest's second serial port or console (ttydev).
# shellcheck disable=SC2016 # a script for the guest, expanded there
GUEST_RUN_SCRIPT='out=${0%/*}
. "$out/conf"
finish() {
	dmesg >"$out/dmesg"
	echo "$1 $2" >"$out/result"
	sync
	exit 0
}
# The boot watchdog of vtpu-vm waits for this file.
: >"$out/booted"
# From here on the console log shows kernel messages up to KERN_INFO.
echo 7 >/proc/sys/kernel/printk
echo "$prog: begin $tag" >/dev/kmsg
# The modules of the kernel the guest runs (vtpu-vm): the host /lib/modules
# is for the host kernel.
if [ -n "$kmods" ]; then
	mkdir -p /lib/modules
	mount --bind "$kmods" /lib/modules
fi
for m in $preload; do
	insmod "$m" || finish insmod $?
done
if [ -n "$module" ]; then
	deps=$(modinfo -F depends "$module")
	if [ -n "$deps" ]; then
		modprobe -a ${deps//,/ } || finish insmod $?
	fi
	insmod "$module" $params || finish insmod $?
fi
cd "$cwd" || finish cwd 0
exec 3<>"$ttydev"
stty raw -echo <&3
cmd() {
	export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
	export HOME="$home" TERM=dumb LANG=C.UTF-8
	. "$out/env"
	eval "$cmdline"
}
# Mirror the caller: a terminal if its stdout is one, else a pipe.
if [ "$tty" = 1 ]; then
	(cmd) </dev/null >&3 2>&1 3>&-
	rc=$?
else
	(cmd) </dev/null 2>&1 3>&- | cat >&3
	rc=${PIPESTATUS[0]}
fi
# Wait for all the output of CMD to leave the guest: tcsetattr(TCSADRAIN)
# does under UML, where closing tty1 does not; on a serial port the last
# close waits for the UART to drain too.
stty raw -echo <&3
exec 3>&-
if [ -n "$module" ]; then
	# A few tries: a module reference may be dropped just after exit.
	for try in 1 2 3 4 5; do
		rmmod "$modname" && break
		[ "$try" = 5 ] && finish rmmod "$rc"
		sleep 0.2
	done
fi
finish ok "$rc"'

# write_run_files TTYDEV CMD...: the run script, its conf and the env CMD
# sees, in out/. TTYDEV: the guest device that carries CMD's output to
# our stdout. Reads prog, tag, module, params, modname and kmods (vtpu-vm:
# the guest kernel's modules directory, or empty).
write_run_files() {
	local ttydev=$1 tty=0 name
	shift
	[ -t 1 ] && tty=1
	printf '%s\n' "$GUEST_RUN_SCRIPT" >"$out/run"
	{
		printf 'prog=%q tag=%q ttydev=%q\n' "$prog" "$tag" "$ttydev"
		printf 'module=%q params=%q modname=%q kmods=%q preload=%q\n' \
			"$module" "$params" "${modname-}" "${kmods-}" "$preload"
		printf 'cwd=%q home=%q tty=%q\n' "$PWD" "$HOME" "$tty"
		printf 'cmdline=%q\n' "$(printf '%q ' "$@")"
	} >"$out/conf"
	while read -r name; do
		if [[ $name =~ ^(VTPU_|OPENBLAS_) ]]; then
			printf 'export %s=%q\n' "$name" "${!name}"
		fi
	done < <(compgen -e) >"$out/env"
}

# ---- how a run ends ------------------------------------------------------------

# fail WHY [STATUS]: a guest-level failure, with the end of the console log
# (all of it was shown already with -v); exit STATUS, 125 by default.
fail() {
	if ! ((verbose)); then
		echo "$prog: last lines of the guest's console:" >&2
		tail -n 80 "$tmp/console.log" | tr -d '\r' >&2
	fi
	echo "$prog: $1" >&2
	exit "${2:-125}"
}

# finish_run WHAT RC: after the guest has stopped (WHAT, "qemu" or "UML",
# exited RC): show the console with -v, save the kernel log for --dmesg,
# diagnose a guest that left no exit status, check dmesg, and exit with
# CMD's status. Reads tmp/console.log and out/{result,dmesg}.
finish_run() {
	local what=$1 grc=$2 status rc
	if ((verbose)); then
		tr -d '\r' <"$tmp/console.log" >&2
	fi
	# --dmesg: the guest's log, or its console's when it left no log.
	if [ -n "$dmesg_out" ]; then
		if [ -s "$out/dmesg" ]; then
			cp "$out/dmesg" "$dmesg_out"
		else
			tr -d '\r' <"$tmp/console.log" >"$dmesg_out"
		fi
	fi
	((grc != 124)) || fail "timed out after $timeout s (a hang, or --timeout too short)" 124
	read -r status rc 2>/dev/null <"$out/result" || {
		grep -q 'Kernel panic' "$tmp/console.log" && fail "the guest kernel panicked"
		((grc == 0)) || fail "$what failed (exit $grc)"
		fail "the guest stopped without an exit status"
	}
	case $status in
	insmod) fail "insmod $module $params failed (exit $rc)" ;;
	cwd) fail "the guest cannot cd to $PWD" ;;
	rmmod) fail "rmmod $modname failed after the command (exit $rc): a leaked reference?" ;;
	esac
	check_dmesg "$out/dmesg"
	exit "$rc"
}
