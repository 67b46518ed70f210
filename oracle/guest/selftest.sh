#!/bin/sh
# Host-side checks of mcgh that need no cgroups: builds mcgh, runs each
# command against scratch files, prints PASS/FAIL per check and exits
# non-zero if any check failed.  Run as root (mlock, oom_score_adj) from any
# directory:  sh oracle/guest/selftest.sh   (CC=... to pick the compiler)
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
CC=${CC:-gcc}
T=$(mktemp -d "${TMPDIR:-/tmp}/mcghtest.XXXXXX") || exit 1
DATA=$T/data
RUN=$T/run/mcg
BIN=$T/mcgh
FAILS=0
CHECKS=0
BGPIDS=

cleanup() {
    for p in $BGPIDS; do kill -9 "$p" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

pass() { CHECKS=$((CHECKS + 1)); echo "PASS $1"; }
fail() { CHECKS=$((CHECKS + 1)); FAILS=$((FAILS + 1)); echo "FAIL $1${2:+ ($2)}"; }

# check NAME EXPECTED ACTUAL
check() {
    if [ "$2" = "$3" ]; then pass "$1"; else fail "$1" "expected '$2', got '$3'"; fi
}

# check_rc NAME EXPECTED_RC COMMAND...: run, compare the exit status
check_rc() {
    _n=$1; _e=$2; shift 2
    "$@" >"$T/out" 2>"$T/err"
    _rc=$?
    check "$_n" "$_e" "$_rc"
}

# Milliseconds of uptime, from /proc/uptime (10 ms resolution; works in any sh).
ms() {
    read _up _idle </proc/uptime
    _s=${_up%.*}; _c=${_up#*.}
    echo $(( _s * 1000 + ${_c#0} * 10 ))
}

# ---------------------------------------------------------------- build
if $CC -static -O2 -Wall -Wextra -Werror -o "$T/mcgh.default" "$HERE/mcgh.c" -lm 2>"$T/err"; then
    pass "build: gcc -static -O2 -Wall -Wextra -Werror -lm"
else
    fail "build: gcc -static -O2 -Wall -Wextra -Werror -lm" "$(head -5 "$T/err")"
fi
if $CC -std=c11 -static -O2 -Wall -Wextra -Werror \
        -DMCGH_DATA_DIR="\"$DATA\"" -DMCGH_RUN_DIR="\"$RUN\"" \
        -o "$BIN" "$HERE/mcgh.c" -lm 2>"$T/err"; then
    pass "build: -std=c11 test binary with scratch MCGH_DATA_DIR, MCGH_RUN_DIR"
else
    fail "build: test binary" "$(head -5 "$T/err")"
    echo "cannot continue without a binary"
    exit 1
fi
if [ -x "$T/mcgh.default" ] && command -v file >/dev/null 2>&1; then
    case $(file "$T/mcgh.default") in
        *static*) pass "build: binary is static" ;;
        *) fail "build: binary is static" "$(file "$T/mcgh.default")" ;;
    esac
fi
mkdir -p "$DATA"

# ---------------------------------------------------------------- usage
check_rc "usage: no arguments exits 2" 2 "$BIN"
check_rc "usage: unknown command exits 2" 2 "$BIN" frobnicate
check_rc "usage: write with missing VALUE exits 2" 2 "$BIN" write 1 "$T/x"
check_rc "usage: anon with unknown option exits 2" 2 "$BIN" anon 1M --bogus 1
check_rc "usage: --file is not an anon option" 2 "$BIN" anon 1M --file x
check_rc "usage: waitready with PID 0 exits 2" 2 "$BIN" waitready n 0 10

# ---------------------------------------------------------------- sizes
for pair in 1.5G:1610612736 1.5K:1536 0.1K:102 0.3M:314572 4096:4096 \
            1g:1073741824 50M:52428800 .5k:512 5.K:5120 2T:2199023255552 \
            0:0 1P:1125899906842624; do
    s=${pair%%:*}; want=${pair#*:}
    check "size: $s" "@@MCG SIZE $want" "$("$BIN" size "$s" 2>&1)"
done
for s in 1.5 x M 1Q -1M 1e3K 1.2.3K " 1M" 16384P ""; do
    check_rc "size: '$s' is rejected with exit 2" 2 "$BIN" size "$s"
done
check_rc "anon: bad size 1.5 exits 2" 2 "$BIN" anon 1.5
check_rc "anon: bad --passes exits 2" 2 "$BIN" anon 1M --passes x

# ---------------------------------------------------------------- workloads
check_rc "anon 64M --passes 2 exits 0" 0 "$BIN" anon 64M --passes 2
check "anon: prints nothing on stdout" "" "$(cat "$T/out")"
check_rc "anon 1.5M exits 0" 0 "$BIN" anon 1.5M
check_rc "anon 0 exits 0" 0 "$BIN" anon 0
check_rc "anon: mmap failure under ulimit -v exits 1" 1 \
    sh -c 'ulimit -v 65536 && exec "$0" anon 1G' "$BIN"
case $(cat "$T/err") in
    "mcgh: mmap: "*) pass "anon: mmap failure message" ;;
    *) fail "anon: mmap failure message" "$(cat "$T/err")" ;;
esac
check_rc "mlock 16M exits 0" 0 "$BIN" mlock 16M
check_rc "mlock: failure under ulimit -v exits 1" 1 \
    sh -c 'ulimit -v 65536 && exec "$0" mlock 1G' "$BIN"

check_rc "pagecache 8M --file x exits 0" 0 "$BIN" pagecache 8M --file x
check "pagecache: file x is 8M" 8388608 "$(wc -c <"$DATA/x" | tr -d ' ')"
if command -v fincore >/dev/null 2>&1; then
    # the pages read are in the page cache (fincore: RES PAGES SIZE FILE)
    pages=$(fincore --bytes --noheadings --output PAGES "$DATA/x" 2>/dev/null | tr -d ' ')
    if [ -n "$pages" ] && [ "$pages" -ge 2048 ]; then
        pass "pagecache: 8M of x is resident ($pages pages)"
    else
        fail "pagecache: 8M of x is resident" "fincore says '$pages' pages"
    fi
fi
check_rc "pagecache 4M --file x again exits 0" 0 "$BIN" pagecache 4M --file x
check "pagecache: file x grew to 12M" 12582912 "$(wc -c <"$DATA/x" | tr -d ' ')"
check_rc "pagecache 1000 --file odd exits 0" 0 "$BIN" pagecache 1000 --file odd
check_rc "pagecache 1000 --file odd (unaligned start) exits 0" 0 "$BIN" pagecache 1000 --file odd
check "pagecache: file odd is 2000 bytes" 2000 "$(wc -c <"$DATA/odd" | tr -d ' ')"
check_rc "pagecache 8M (O_TMPFILE) exits 0" 0 "$BIN" pagecache 8M
check "pagecache: O_TMPFILE leaves no file" "odd x" "$(cd "$DATA" && echo *)"
mv "$DATA" "$T/data.away"
check_rc "pagecache: missing data dir exits 1" 1 "$BIN" pagecache 1M
case $(cat "$T/err") in
    "mcgh: open "*) pass "pagecache: open failure message" ;;
    *) fail "pagecache: open failure message" "$(cat "$T/err")" ;;
esac
check_rc "pagecache --file: missing data dir exits 1" 1 "$BIN" pagecache 1M --file y
mv "$T/data.away" "$DATA"

# ---------------------------------------------------------------- dd / cat / tar
# size_of FILE: its size in bytes
size_of() { wc -c <"$1" | tr -d ' '; }

# Argument errors, checked as the simulator checks them: exit 2.
for a in "dd" "dd 0" "dd 2T" "dd 1.5" "dd 1M 2M" "dd 1M --bs 0" "dd 1M --bs 2G" \
         "dd 1M --bs" "dd 1M --bs --file nope" "dd 1M --bs=" "dd 1M --file nope --file=nope" \
         "dd 1M --file a/b" "dd 1M --file .." "dd 1M --hold h" "dd 1M --passes 2" \
         "cat" "cat 1M" "cat --file" "cat --file nope 0" "cat --file nope 1M 2M" \
         "cat --file ." "cat --file nope --bs 1" "readonce 1M" \
         "tar" "tar 0" "tar 1M --files 0" "tar 1M --files 1000001" "tar 1M --files x" \
         "tar 1M --files -1" "tar 1M --seed -1" "tar 1M --seed 18446744073709551616" \
         "tar 1M --seed x" "tar 1M --archive a/b" "tar 1M --dest d/e" \
         "tar 1M --dest=" "tar 1M --seed 1 --seed 2" "tar 1M --file nope"; do
    # shellcheck disable=SC2086
    check_rc "usage: '$a' exits 2" 2 "$BIN" $a
done
case $(cat "$T/err") in
    "mcgh: tar: unknown option '--file'"*) pass "usage: the message names the workload and the option" ;;
    *) fail "usage: the message names the workload and the option" "$(head -1 "$T/err")" ;;
esac
[ -e "$DATA/dd.out" ] || [ -e "$DATA/nope" ] || [ -e "$DATA/tar.archive" ] && fail "usage: bad arguments create no file" \
    || pass "usage: bad arguments create no file"
check_rc "tar: --files +5 and --seed +1 are accepted (as u64::from_str)" 0 \
    "$BIN" tar 8K --files +5 --seed +1 --archive plus --dest plus
check_rc "tar: --seed 18446744073709551615 is accepted" 0 \
    "$BIN" tar 4K --seed 18446744073709551615 --archive plus --dest plus

check_rc "dd 1000000 --bs=4096 exits 0" 0 "$BIN" dd 1000000 --bs=4096
check "dd: default file dd.out has SIZE bytes" 1000000 "$(size_of "$DATA/dd.out")"
check "dd: prints nothing on stdout" "" "$(cat "$T/out")"
check_rc "dd 3M --file w --bs 1M exits 0" 0 "$BIN" dd 3M --file w --bs 1M
head -c 3145728 /dev/zero >"$T/zeros"
cmp -s "$T/zeros" "$DATA/w" && pass "dd: writes SIZE zero bytes" || fail "dd: writes SIZE zero bytes"
check_rc "dd 5000 --file w --bs 3 (odd blocks) exits 0" 0 "$BIN" dd 5000 --file w --bs 3
check "dd: O_TRUNC: w is now 5000 bytes" 5000 "$(size_of "$DATA/w")"
check_rc "dd 3M --file w --bs 3M (blocks above the 1M buffer) exits 0" 0 "$BIN" dd 3M --file=w --bs=3M
cmp -s "$T/zeros" "$DATA/w" && pass "dd: large blocks write SIZE zero bytes" \
    || fail "dd: large blocks write SIZE zero bytes"

check_rc "cat --file w exits 0" 0 "$BIN" cat --file w
check "cat: leaves the file as it is" 3145728 "$(size_of "$DATA/w")"
check_rc "cat --file w 4K (file larger) exits 0" 0 "$BIN" cat --file w 4K
check "cat: does not shrink a larger file" 3145728 "$(size_of "$DATA/w")"
check_rc "cat --file new (missing) exits 0" 0 "$BIN" cat --file new
check "cat: a missing file is created empty" 0 "$(size_of "$DATA/new")"
check_rc "cat --file new 10000 exits 0" 0 "$BIN" cat 10000 --file new
check "cat: SIZE extends to whole pages" 12288 "$(size_of "$DATA/new")"
printf abc >"$DATA/short"
check_rc "cat --file short 4K (same page count) exits 0" 0 "$BIN" cat --file short 4K
check "cat: a file of as many pages is not extended" 3 "$(size_of "$DATA/short")"
check_rc "readonce --file=short exits 0" 0 "$BIN" readonce --file=short
if command -v fincore >/dev/null 2>&1; then
    "$BIN" cat --file sparse 8M
    pages=$(fincore --bytes --noheadings --output PAGES "$DATA/sparse" 2>/dev/null | tr -d ' ')
    if [ -n "$pages" ] && [ "$pages" -ge 2048 ]; then
        pass "cat: the 8M read are resident ($pages pages)"
    else
        fail "cat: the 8M read are resident" "fincore says '$pages' pages"
    fi
fi

# tar: the sizes are the simulator's for the same seed (split_sizes in
# crates/workloads/src/tar.rs, computed there for these arguments).
tar_sizes() { # PREFIX N: the sizes of PREFIX.0 .. PREFIX.{N-1}, blank-separated
    _i=0; _s=
    while [ $_i -lt "$2" ]; do _s="$_s $(size_of "$DATA/$1.$_i")"; _i=$((_i + 1)); done
    echo $_s
}
"$BIN" dd 1M --file tar.out.0
check_rc "tar 40K --files 4 --seed 7 exits 0" 0 "$BIN" tar 40K --files 4 --seed 7
check "tar: archive extended to SIZE" 40960 "$(size_of "$DATA/tar.archive")"
check "tar: file sizes of seed 7 (the model's)" "8192 4096 24576 4096" "$(tar_sizes tar.out 4)"
[ -e "$DATA/tar.out.4" ] && fail "tar: exactly N files" || pass "tar: exactly N files"
check_rc "tar 100K --files 5 --dest d (default seed) exits 0" 0 "$BIN" tar 100K --files 5 --dest d
check "tar: sizes of the default seed (the model's)" "8192 12288 4096 73728 4096" "$(tar_sizes d 5)"
check_rc "tar 5000 --files 3 --dest few exits 0" 0 "$BIN" tar 5000 --files 3 --dest few --archive few.tar
check "tar: one file per page when SIZE has fewer pages than N" "4096 4096" "$(tar_sizes few 2)"
[ -e "$DATA/few.2" ] && fail "tar: no file beyond the pages" || pass "tar: no file beyond the pages"
check "tar: a small archive is extended to whole pages" 8192 "$(size_of "$DATA/few.tar")"
check_rc "tar 16K --archive w (existing 3M archive) exits 0" 0 \
    "$BIN" tar 16K --archive w --files 2 --seed 1 --dest fromw
check "tar: a larger archive is kept" 3145728 "$(size_of "$DATA/w")"
check "tar: only SIZE of it is extracted" "8192 8192" "$(tar_sizes fromw 2)"
check_rc "tar 4M --files 1000 exits 0" 0 "$BIN" tar 4M --files 1000 --dest many --archive many.tar
sum=0; i=0
while [ $i -lt 1000 ]; do sum=$((sum + $(size_of "$DATA/many.$i"))); i=$((i + 1)); done
check "tar: 1000 files summing to SIZE" 4194304 "$sum"

# ---------------------------------------------------------------- access
# (its page sequence is compared with the model's by tests/oracle.rs)
for a in "access" "access 0" "access 2T" "access 1M --theta 1" "access 1M --pattern x" \
         "access 1M --count 0" "access 1M --read-only" "access 1M --mmap" \
         "access 1M --cold" "access 1M --file a/b" "access 1M --hold" "access 1M --hold=x" \
         "access 1M --file x --cold --cold" "access 1M --pattern zipf --theta 11"; do
    # shellcheck disable=SC2086
    check_rc "access: '$a' is refused with exit 2" 2 "$BIN" $a
done
check_rc "access 4M (anonymous) exits 0" 0 "$BIN" access 4M
check_rc "access 1M --pattern zipf --file az exits 0" 0 "$BIN" access 1M --pattern zipf --file az
check "access: --file is extended to SIZE" 1048576 "$(size_of "$DATA/az")"
check_rc "access 8K --file az --read-only keeps a larger file" 0 "$BIN" access 8K --file az --read-only
check "access: a larger file is kept" 1048576 "$(size_of "$DATA/az")"
check_rc "access 64M --file ac --cold --mmap --count 1 --pattern seq exits 0" 0 \
    "$BIN" access 64M --file ac --cold --mmap --count 1 --pattern seq
check "access: --cold writes SIZE" 67108864 "$(size_of "$DATA/ac")"
check "access: --cold leaves no complaint about cached pages" "" "$(cat "$T/err")"
if command -v fincore >/dev/null 2>&1; then
    # one access of page 0 reads around it (read_ahead_kb, 8M on some hosts), not all 64M
    pages=$(fincore --bytes --noheadings --output PAGES "$DATA/ac" 2>/dev/null | tr -d ' ')
    if [ -n "$pages" ] && [ "$pages" -lt 8192 ]; then
        pass "access: --cold data is not cached ($pages of 16384 pages after one access)"
    else
        fail "access: --cold data is not cached" "fincore says '$pages' pages"
    fi
fi
check_rc "access 64K --file ax --exec --cold exits 0" 0 "$BIN" access 64K --file ax --exec --cold
check_rc "access 64K --file ay --count 100 (pwrite) exits 0" 0 "$BIN" access 64K --file ay --count 100

# ---------------------------------------------------------------- hold + waitready
# hold_case NAME COMMAND...: start a held workload, wait for it, check, kill
hold_case() {
    _name=$1; shift
    "$BIN" "$@" --hold "$_name" &
    _pid=$!
    BGPIDS="$BGPIDS $_pid"
    check "hold: $* -> waitready READY" "@@MCG READY $_name" \
        "$("$BIN" waitready "$_name" "$_pid" 10000)"
    [ -f "$RUN/$_name.ready" ] && pass "hold: $_name.ready exists" || fail "hold: $_name.ready exists"
    if kill -0 "$_pid" 2>/dev/null; then pass "hold: $* still running"; else fail "hold: $* still running"; fi
    kill -9 "$_pid" 2>/dev/null
    wait "$_pid" 2>/dev/null
    check "hold: $* killed by SIGKILL" 137 "$?"
}
rm -rf "$T/run"
hold_case h_anon anon 16M --passes 2
hold_case h_pc pagecache 4M
hold_case h_pcf pagecache 4M --file held
hold_case h_mlock mlock 8M
hold_case h_acc access 4M --file held.acc --mmap --pattern zipf
check "hold: pagecache --file held is 4M" 4194304 "$(wc -c <"$DATA/held" | tr -d ' ')"

# A held workload removes a stale NAME.ready before it starts.
# (The script must not reuse a NAME before waiting on it: waitready could
# see the stale file before the new process removes it.)
"$BIN" anon 1M --hold h_stale & p=$!; BGPIDS="$BGPIDS $p"
"$BIN" waitready h_stale "$p" 5000 >/dev/null
kill -9 "$p"; wait "$p" 2>/dev/null
[ -f "$RUN/h_stale.ready" ] && pass "hold: ready file left after kill" || fail "hold: ready file left after kill"
sh -c 'ulimit -v 65536 && exec "$0" anon 1G --hold h_stale' "$BIN" 2>/dev/null & p=$!
wait "$p"
[ -f "$RUN/h_stale.ready" ] && fail "hold: failed workload removed the stale ready file" \
    || pass "hold: failed workload removed the stale ready file"

# GONE: a held workload that fails (exit 1) never becomes ready.  The
# background job may still be an unreaped zombie of this shell.
mv "$DATA" "$T/data.away"
"$BIN" pagecache 1M --hold g1 2>/dev/null & p=$!
check "waitready: failed hold -> GONE" "@@MCG GONE g1" "$("$BIN" waitready g1 "$p" 5000)"
wait "$p"; check "waitready: failed hold exited 1" 1 "$?"
mv "$T/data.away" "$DATA"

# GONE for a zombie: the child of a process that never reaps it.
rm -f "$T/zpid"
sh -c 'sleep 0.2 & echo $! >"$0"; exec sleep 5' "$T/zpid" & outer=$!
BGPIDS="$BGPIDS $outer"
i=0; while [ ! -s "$T/zpid" ] && [ $i -lt 200 ]; do sleep 0.01; i=$((i + 1)); done
zpid=$(cat "$T/zpid")
t0=$(ms)
out=$("$BIN" waitready z "$zpid" 4000)
t1=$(ms)
check "waitready: zombie -> GONE" "@@MCG GONE z" "$out"
state=$(sed 's/.*) //' "/proc/$zpid/stat" 2>/dev/null | cut -c1)
check "waitready: the process really is a zombie" Z "$state"
if [ $((t1 - t0)) -lt 3000 ]; then pass "waitready: GONE before the timeout ($((t1 - t0)) ms)"
else fail "waitready: GONE before the timeout" "$((t1 - t0)) ms"; fi
kill -9 "$outer" 2>/dev/null; wait "$outer" 2>/dev/null

# GONE for a reaped process.
true & p=$!; wait "$p"
check "waitready: reaped process -> GONE" "@@MCG GONE r" "$("$BIN" waitready r "$p" 2000)"

# TIMEOUT
sleep 5 & p=$!; BGPIDS="$BGPIDS $p"
t0=$(ms)
out=$("$BIN" waitready never "$p" 300)
t1=$(ms)
check "waitready: live process, no ready file -> TIMEOUT" "@@MCG TIMEOUT never" "$out"
if [ $((t1 - t0)) -ge 250 ] && [ $((t1 - t0)) -lt 2000 ]; then
    pass "waitready: TIMEOUT after about 300 ms ($((t1 - t0)) ms)"
else
    fail "waitready: TIMEOUT after about 300 ms" "$((t1 - t0)) ms"
fi
kill -9 "$p"; wait "$p" 2>/dev/null

# ---------------------------------------------------------------- write
printf xyz >"$T/f"
check "write: regular file -> 0" "@@MCG L3 ERRNO 0" "$("$BIN" write 3 "$T/f" ab)"
check "write: no newline, no truncation" abz "$(cat "$T/f")"
check "write: empty value -> 0" "@@MCG L3 ERRNO 0" "$("$BIN" write 3 "$T/f" "")"
check "write: missing file -> ENOENT, not created" "@@MCG L4 ERRNO ENOENT" "$("$BIN" write 4 "$T/nofile" 1)"
[ -e "$T/nofile" ] && fail "write: does not create" || pass "write: does not create"
check "write: directory -> EISDIR" "@@MCG L5 ERRNO EISDIR" "$("$BIN" write 5 "$T" 1)"
check "write: path below a file -> ENOTDIR" "@@MCG L6 ERRNO ENOTDIR" "$("$BIN" write 6 "$T/f/x" 1)"
check "write: /proc/version (no write op) -> EIO" "@@MCG L7 ERRNO EIO" "$("$BIN" write 7 /proc/version 1)"
check "write: /dev/full -> ENOSPC" "@@MCG L8 ERRNO ENOSPC" "$("$BIN" write 8 /dev/full 1)"
check "write: oom_score_adj abc -> EINVAL" "@@MCG L9 ERRNO EINVAL" "$("$BIN" write 9 /proc/self/oom_score_adj abc)"
check "write: oom_score_adj 5000 -> EINVAL" "@@MCG L9 ERRNO EINVAL" "$("$BIN" write 9 /proc/self/oom_score_adj 5000)"
check "write: oom_score_adj 100 -> 0" "@@MCG L9 ERRNO 0" "$("$BIN" write 9 /proc/self/oom_score_adj 100)"
check "write: a newline in VALUE is written as is" "@@MCG L9 ERRNO 0" "$("$BIN" write 9 "$T/f" "a
b")"
check "write: ... and lands in the file" "a
b" "$(cat "$T/f")"
check_rc "write: exit status is 0 on error" 0 "$BIN" write 1 "$T/nofile" 1
if command -v strace >/dev/null 2>&1; then
    n=$(strace -f -e trace=write -o "$T/strace" "$BIN" write 11 "$T/f" v >/dev/null 2>&1;
        grep -c '^[0-9 ]*write(1, "@@MCG L11 ERRNO 0\\n", 18) *= 18' "$T/strace")
    check "write: the @@MCG line is one write(2)" 1 "$n"
fi

# ---------------------------------------------------------------- mkdir / rmdir
check "mkdir: new -> 0" "@@MCG L20 ERRNO 0" "$("$BIN" mkdir 20 "$T/d")"
check "mkdir: again -> EEXIST" "@@MCG L21 ERRNO EEXIST" "$("$BIN" mkdir 21 "$T/d")"
check "mkdir: missing parent -> ENOENT" "@@MCG L22 ERRNO ENOENT" "$("$BIN" mkdir 22 "$T/none/d")"
mode=$(stat -c %a "$T/d" 2>/dev/null)
case $mode in 755|7[0-5][0-5]) pass "mkdir: mode 0755 (umask applied): $mode" ;;
    *) fail "mkdir: mode 0755" "$mode" ;; esac
mkdir "$T/d/sub"
check "rmdir: non-empty -> ENOTEMPTY" "@@MCG L23 ERRNO ENOTEMPTY" "$("$BIN" rmdir 23 "$T/d")"
check "rmdir: empty -> 0" "@@MCG L24 ERRNO 0" "$("$BIN" rmdir 24 "$T/d/sub")"
check "rmdir: again -> ENOENT" "@@MCG L25 ERRNO ENOENT" "$("$BIN" rmdir 25 "$T/d/sub")"
check "rmdir: a file -> ENOTDIR" "@@MCG L26 ERRNO ENOTDIR" "$("$BIN" rmdir 26 "$T/f")"

# ---------------------------------------------------------------- open
check "open: regular file -> 0" "@@MCG L30 ERRNO 0" "$("$BIN" open 30 "$T/f")"
check "open: missing -> ENOENT" "@@MCG L31 ERRNO ENOENT" "$("$BIN" open 31 "$T/nofile")"
check "open: directory -> EISDIR" "@@MCG L32 ERRNO EISDIR" "$("$BIN" open 32 "$T")"
[ -e "$T/nofile" ] && fail "open: does not create" || pass "open: does not create"

# ---------------------------------------------------------------- fdread / fdwrite
exec 5</proc/version
check "fdread: /proc/version on fd 5" "$(cat /proc/version)" "$("$BIN" fdread 5)"
check "fdread: again from offset 0" "$(cat /proc/version)" "$("$BIN" fdread 5)"
exec 5<&-
head -c 200000 /dev/urandom >"$T/big"
exec 5<"$T/big"
"$BIN" fdread 5 >"$T/big.out"
cmp -s "$T/big" "$T/big.out" && pass "fdread: 200000-byte file is copied exactly" \
    || fail "fdread: 200000-byte file is copied exactly"
exec 5<&-
check "fdread: closed fd -> READERR EBADF" "@@MCG READERR EBADF" "$("$BIN" fdread 5)"
check_rc "fdread: closed fd exits 1" 1 "$BIN" fdread 5
exec 5<"$T"
check "fdread: directory -> READERR EISDIR" "@@MCG READERR EISDIR" "$("$BIN" fdread 5)"
exec 5<&-

printf 0123456789 >"$T/w"
exec 6<>"$T/w"
check "fdwrite: fd 6 -> 0" "@@MCG L40 ERRNO 0" "$("$BIN" fdwrite 40 6 hello)"
check "fdwrite: bytes at the shared offset" hello56789 "$(cat "$T/w")"
check "fdwrite: again continues at the offset" "@@MCG L41 ERRNO 0" "$("$BIN" fdwrite 41 6 XY)"
check "fdwrite: ... content" helloXY789 "$(cat "$T/w")"
exec 6<&-
check "fdwrite: closed fd -> EBADF" "@@MCG L42 ERRNO EBADF" "$("$BIN" fdwrite 42 6 x)"
exec 6<"$T/w"
check "fdwrite: read-only fd -> EBADF" "@@MCG L43 ERRNO EBADF" "$("$BIN" fdwrite 43 6 x)"
exec 6<&-
exec 6>/dev/full
check "fdwrite: /dev/full -> ENOSPC" "@@MCG L44 ERRNO ENOSPC" "$("$BIN" fdwrite 44 6 x)"
exec 6>&-

# ---------------------------------------------------------------- enter
# A stand-in cgroup directory: cgroup.procs is a plain file here.
CG=$T/cg
mkdir -p "$CG"
: >"$CG/cgroup.procs"
check_rc "enter: - -> anon 8M exits 0" 0 "$BIN" enter "$CG" - -- anon 8M
case $(cat "$CG/cgroup.procs") in
    ""|*[!0-9]*) fail "enter: wrote a decimal pid without newline" "$(od -c "$CG/cgroup.procs" | head -2)" ;;
    *) pass "enter: wrote a decimal pid without newline" ;;
esac
: >"$CG/cgroup.procs"
"$BIN" enter "$CG" 500 -- anon 8M --hold e1 & p=$!; BGPIDS="$BGPIDS $p"
check "enter: held workload READY" "@@MCG READY e1" "$("$BIN" waitready e1 "$p" 5000)"
check "enter: the pid written is the allocating process" "$p" "$(cat "$CG/cgroup.procs")"
check "enter: oom_score_adj set" 500 "$(cat /proc/$p/oom_score_adj 2>/dev/null)"
kill -9 "$p"; wait "$p" 2>/dev/null
"$BIN" enter "$CG" - -- pagecache 1M --file viaenter --hold e2 & p=$!; BGPIDS="$BGPIDS $p"
check "enter: pagecache held READY" "@@MCG READY e2" "$("$BIN" waitready e2 "$p" 5000)"
kill -9 "$p"; wait "$p" 2>/dev/null
check_rc "enter: -- mlock 4M exits 0" 0 "$BIN" enter "$CG" 300 -- mlock 4M
: >"$CG/cgroup.procs"
check_rc "enter: -- dd 1M --file viaenter exits 0" 0 "$BIN" enter "$CG" - -- dd 1M --file viaenter
check "enter: dd wrote its file in the data directory" 1048576 "$(size_of "$DATA/viaenter")"
case $(cat "$CG/cgroup.procs") in
    ""|*[!0-9]*) fail "enter: dd wrote its pid to cgroup.procs" "$(cat "$CG/cgroup.procs")" ;;
    *) pass "enter: dd wrote its pid to cgroup.procs" ;;
esac
check_rc "enter: -- cat --file viaenter exits 0" 0 "$BIN" enter "$CG" - -- cat --file viaenter
check_rc "enter: -- tar 8K exits 0" 0 "$BIN" enter "$CG" - -- tar 8K --archive ea --dest eo
# Lowering oom_score_adj needs CAP_SYS_RESOURCE (the guest's root has it).
if [ "$("$BIN" write 0 /proc/self/oom_score_adj -1)" = "@@MCG L0 ERRNO 0" ]; then
    check_rc "enter: ADJ -1000 exits 0" 0 "$BIN" enter "$CG" -1000 -- anon 1M
else
    check "enter: ADJ -1000 without CAP_SYS_RESOURCE -> ENTERFAIL EACCES" \
        "@@MCG ENTERFAIL EACCES" "$("$BIN" enter "$CG" -1000 -- anon 1M 2>/dev/null)"
fi
check "enter: missing cgroup -> ENTERFAIL ENOENT" "@@MCG ENTERFAIL ENOENT" \
    "$("$BIN" enter "$T/nocg" - -- anon 1M 2>/dev/null)"
check_rc "enter: missing cgroup exits 126" 126 "$BIN" enter "$T/nocg" - -- anon 1M
check "enter: bad ADJ -> ENTERFAIL EINVAL" "@@MCG ENTERFAIL EINVAL" \
    "$("$BIN" enter "$CG" abc -- anon 1M 2>/dev/null)"
check_rc "enter: bad ADJ exits 126" 126 "$BIN" enter "$CG" abc -- anon 1M
check "enter: ADJ 1001 -> ENTERFAIL EINVAL" "@@MCG ENTERFAIL EINVAL" \
    "$("$BIN" enter "$CG" 1001 -- anon 1M 2>/dev/null)"
: >"$CG/cgroup.procs"
check_rc "enter: missing -- exits 2" 2 "$BIN" enter "$CG" - anon 1M
check_rc "enter: non-workload COMMAND exits 2" 2 "$BIN" enter "$CG" - -- write 1 "$T/f" x
check_rc "enter: a workload the guest does not run exits 2" 2 "$BIN" enter "$CG" - -- usemem 1M
check_rc "enter: bad dd arguments exit 2" 2 "$BIN" enter "$CG" - -- dd 1M --bs 0
check_rc "enter: bad workload size exits 2" 2 "$BIN" enter "$CG" - -- anon 1.5
check "enter: bad arguments join nothing" "" "$(cat "$CG/cgroup.procs")"
check_rc "enter: workload failure exits 1" 1 \
    sh -c 'ulimit -v 65536 && exec "$0" enter "$1" - -- anon 1G' "$BIN" "$CG"

# ---------------------------------------------------------------- session
# A script's background tasks and the orphans they leave are killed and reaped
# when its shell ends; the status is the shell's.
cat >"$T/sess.sh" <<EOS
sleep 300 & echo \$! >"$T/sess.bg"
sh -c 'sleep 300 & echo \$! >"$T/sess.orphan"'
exit 3
EOS
check_rc "session: exits with the script's status" 3 "$BIN" session "$T/sess.sh"
for f in sess.bg sess.orphan; do
    p=$(cat "$T/$f" 2>/dev/null)
    if [ -n "$p" ] && ! kill -0 "$p" 2>/dev/null; then
        pass "session: $f task gone when the session returns"
    else
        fail "session: $f task gone when the session returns" "pid '$p' still there"
    fi
done
check_rc "session: missing SCRIPT exits 2" 2 "$BIN" session

# ---------------------------------------------------------------- summary
echo "$((CHECKS - FAILS))/$CHECKS checks passed"
[ "$FAILS" -eq 0 ]
