#include "remote/tree.h"
#include "plat/signame.h"
#include "plat/random.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

/* The wrapper (remote/tree.h), POSIX sh as dash, bash and busybox run it.
 * sweep SIG MARK SPARE [FROM]: signal every process whose environment has
 * the mark but SPARE; grep runs with the mark emptied, so the only listed
 * process that is gone by the kill is a subshell of this shell's. The tools
 * come from the default PATH (command -p), whatever PATH the command has.
 * FROM: the last pid before the command started (see quiet). */
#define NL "\n"
static const char script[] =
    "sweep() {" NL "  i=0 r=0" NL "  while [ $i -lt 50 ]; do" NL "    i=$((i + 1)) n=0" NL
    "    for f in $(" SB_RTREE_VAR "= command -p grep -lsxzF \"" SB_RTREE_VAR "=$2\" /proc/[0-9]*/environ); do" NL
    "      p=${f#/proc/} p=${p%/environ}" NL
    "      [ \"$p\" = \"$3\" ] || ! kill -s \"$1\" \"$p\" 2>/dev/null || n=1" NL "    done" NL
    "    [ \"$1\" = KILL ] || return 0" NL
    /* (its names are its own: the watchdog calls it, and a `z` reset
     * here once made the watchdog's `kill $z` a `kill 0`, the whole
     * process group) KILL: until two scans in a row find nothing to kill:
     * one scan missed a double-forked daemon under CI's load once (the glob
     * is taken before grep reads: the child of a parent that exits before
     * grep reaches it, made after the glob, is passed over); or one, when
     * nothing made since FROM is alive (quiet) */
    "    if [ $n = 1 ]; then r=0; else [ -z \"$4\" ] || ! quiet \"$4\" || return 0; r=$((r + 1)); [ $r -lt 2 ] || "
    "return 0; fi" NL "  done" NL "}" NL
    /* quiet FROM: no process made since pid FROM is alive, so nothing of
     * a command started after FROM is left (the wrapper and its watchdog,
     * made before, are the only older ones of the tree) and no sweep is
     * needed. The kernel's last pid (/proc/loadavg, of this pid namespace)
     * only grows but at a wrap, so whatever was made since FROM has a pid
     * in (FROM, last]: each is tested with builtins (no fork of ours moves
     * the last pid), zombies passed over; then again from there to the
     * new last pid, until it stands still. A wrap, more than 256 pids (a
     * busy system) or anything unreadable: false, the sweep decides. */
    "quiet() {" NL "  qc=$1 qf=$1" NL "  while :; do" NL "    ql=; read -r _ _ _ _ ql 2>/dev/null </proc/loadavg" NL
    "    case $qc:$ql in *[!0-9:]*|:*|*:) return 1 ;; esac" NL
    "    [ \"$ql\" -ge \"$qc\" ] && [ $((ql - qf)) -le 256 ] || return 1" NL "    [ \"$ql\" != \"$qc\" ] || return 0" NL
    "    while [ \"$qc\" -lt \"$ql\" ]; do" NL "      qc=$((qc + 1)) qx=" NL
    "      [ ! -e /proc/$qc ] || read -r qx 2>/dev/null </proc/$qc/stat" NL
    "      case ${qx##*\") \"} in Z*|X*|\"\") ;; *) return 1 ;; esac" NL "    done" NL "  done" NL "}" NL
    /* up: the uptime in hundredths of a second (builtins only; no leading
     * 0, which $((...)) would read as octal) */
    "upcs() { up=; read -r up _ </proc/uptime; up=${up%.*}${up#*.}; up=${up#\"${up%%[!0]*}\"}; up=${up:-0}; }" NL
    /* guard DIR IDLE: the runner's deadline keeper (remote/tree.h). A
     * command registers as DIR/MARK holding "DEADLINE GRACE" (deadline in
     * hundredths of the uptime), "done" at its end. DIR/next says when the
     * guard wakes: 0 (scanning or idle: wake me), -1 (closing: do not count
     * on me), or the deadline it sleeps until. Written 0 before each scan, so
     * a registration it missed either sees 0 and wakes it or sees a time no
     * later than its own deadline. A due one: TERM to its tree, its grace,
     * KILL (a subshell, so the others' deadlines wait for none). No
     * registration for IDLE hundredths: it removes DIR and ends. */
    "guard() {" NL "  G=$1 gi=$2 z=0 wk=0 il=" NL "  trap 'wk=1; [ \"$z\" = 0 ] || kill -s KILL $z 2>/dev/null' USR1" NL
    "  gn() { command -p sleep \"$1\" & z=$!; while kill -0 $z 2>/dev/null; do wait $z; done; z=0; }" NL
    "  while :; do" NL "    wk=0; echo 0 >\"$G/next\"; upcs; nx= dn= any=" NL "    for f in \"$G\"/[0-9a-f]*; do" NL
    "      [ -f \"$f\" ] || continue" NL "      any=1 dl= gr=; read -r dl gr <\"$f\"" NL "      case $dl in" NL
    "      done) dn=\"$dn $f\" ;;" NL "      ''|*[!0-9]*) ;;" NL
    "      *) if [ \"$dl\" -le \"$up\" ]; then echo ending >\"$f\"" NL
    "           (sweep TERM \"${f##*/}\" 0; gn \"$gr\"; sweep KILL \"${f##*/}\" 0; echo done >\"$f\") &" NL
    "         elif [ -z \"$nx\" ] || [ \"$dl\" -lt \"$nx\" ]; then nx=$dl; fi ;;" NL "      esac" NL "    done" NL
    "    [ -z \"$dn\" ] || command -p rm -f $dn" NL
    "    if [ -n \"$nx\" ]; then il=; echo \"$nx\" >\"$G/next\"; w=$((nx - up))" NL
    "    elif [ -n \"$any\" ]; then il=; w=100" NL "    else" NL "      il=${il:-$up}" NL
    "      if [ $((up - il)) -ge \"$gi\" ]; then" NL "        echo -1 >\"$G/next\"" NL
    /* a registration made before -1 was written is seen here */
    "        for f in \"$G\"/[0-9a-f]*; do [ ! -f \"$f\" ] || continue 2; done" NL
    "        command -p rm -rf \"$G\"; exit 0" NL "      fi" NL "      w=$((il + gi - up))" NL "    fi" NL
    "    [ \"$wk\" = 1 ] || gn \"$((w / 100)).$((w / 10 % 10))$((w % 10))\"" NL "  done" NL "}" NL "case $1 in" NL
    "kill) sweep \"$2\" \"$3\" $$; exit 0 ;;" NL
    /* guard MARK IDLE: the loop in the background (its own mark in its
     * environment, so unguard ends it and its sleeps), holding DIR/lock
     * open as fd 9 from its first instruction: a process with that pid
     * holding that file is the guard, as no reused pid can be (a test of
     * two stats, where dash reads /proc/PID/stat a byte a call); prints
     * "PID DIR" */
    "guard) G=${TMPDIR:-/tmp}/agent-sandbox-guard.$2" NL "  command -p mkdir -m 700 \"$G\" || exit 3" NL
    /* USR1 ignored until the loop traps it: a wake-up before is not
     * needed (its first scan is after the trap) and must not end it. The
     * braces: dash keeps a function's own redirections off a background
     * call, and the guard held the Start's stdout */
    "  trap '' USR1; exec 9>\"$G/lock\" || exit 3; { guard \"$G\" \"$3\"; } </dev/null >/dev/null 2>&1 &" NL
    "  printf '%s %s\\n' $! \"$G\"; exit 0 ;;" NL
    "unguard) sweep KILL \"$2\" $$; case $3 in */agent-sandbox-guard.\"$2\") command -p rm -rf \"$3\" ;; esac; exit 0 "
    ";;" NL "run) ;;" NL
    /* check: can the sweep work here at all? (the first command of a runner) */
    "check) [ -r /proc/self/environ ] && printf 'a\\000' | command -p grep -qzx a 2>/dev/null ||"
    " { printf '\\004'; exit 127; } ;;" NL "*) exit 2 ;;" NL "esac" NL
    /* the login profile (login = true), as bash -l reads it for E2B's SDK:
     * read in a subshell, quietly (its options, traps, functions or an
     * exit there never reach this shell), its exported variables taken
     * back (export -p), then what the sandbox set (the names in
     * SB_RTREE_LOGIN, the mark among them) set again */
    "[ -z \"${" SB_RTREE_LOGIN "+x}\" ] || {" NL "  k=$" SB_RTREE_LOGIN "; unset " SB_RTREE_LOGIN NL
    "  for n in $k; do eval \"_sb_$n=\\${$n}\"; done" NL
    "  x=$(exec 3>&1; { [ ! -r /etc/profile ] || . /etc/profile; [ ! -r \"$HOME/.profile\" ] ||"
    " . \"$HOME/.profile\"; } </dev/null >/dev/null 2>&1; export -p >&3)" NL
    "  eval \"$x\" 2>/dev/null; for n in $k; do eval \"export $n=\\\"\\${_sb_$n}\\\"; unset _sb_$n\"; done" NL "}" NL
    "d=$2 g=$3 k=$4 m=$" SB_RTREE_VAR NL
    /* what a signal to the tree must not end before the command (and USR1) */
    "t='HUP INT QUIT ABRT USR2 PIPE ALRM TERM TSTP TTIN TTOU URG XCPU XFSZ VTALRM PROF WINCH IO PWR SYS'" NL
    "shift 4" NL
    /* execvp's look-up: EACCES when only something not executable is found */
    "e=" NL "case $1 in" NL "*/*) [ -f \"$1\" ] && [ -x \"$1\" ] || { [ -e \"$1\" ] && e=EACCES || e=ENOENT; } ;;" NL
    "*) e=ENOENT; set -f; IFS=:" NL "  for x in $PATH; do" NL
    "    [ -f \"${x:-.}/$1\" ] && [ -x \"${x:-.}/$1\" ] && { e=; break; }" NL "    [ -e \"${x:-.}/$1\" ] && e=EACCES" NL
    "  done" NL "  unset IFS; set +f ;;" NL "esac" NL "if [ -n \"$e\" ]; then" NL
    "  [ $e = ENOENT ] && printf '\\002' || printf '\\003'" NL "  exit 127" NL "fi" NL
    /* the watchdog: in the tree, spared by its own sweeps, deaf to the
     * signals the tree may get; its sleeps carry no mark (a sweep of ours
     * must not end them early), and SIGUSR1 ends it with its sleep (killed
     * and reaped; z is 0 when no sleep runs, never a pid reused since).
     * Its USR1 trap comes first: a USR1 before it ends the watchdog by the
     * default action; one caught by `trap :` was lost, and the wrapper
     * waited for the watchdog until the command's timeout (CI, ~1 in 100
     * quick commands under load) */
    /* the runner's guard keeps the deadline when it is alive (its pid
     * holds its lock) and not closing; else a watchdog of our own */
    "gd=" NL "if [ \"$d\" != 0 ] && [ \"$k\" != - ]; then" NL "  gp=${k%% *} G=${k#* }" NL
    "  if [ \"$G/lock\" -ef \"/proc/$gp/fd/9\" ] 2>/dev/null; then" NL
    "    upcs; x=${d%.*}${d#*.}; x=${x#\"${x%%[!0]*}\"}; x=$((up + ${x:-0}))" NL
    /* v: where the shell itself would find the program, if not a builtin
     * or function of its own (its words, read back through the file the
     * registration then takes: no fork) */
    "    v=; case $1 in */*) v=/ ;; *) { command -v \"$1\" >\"$G/$m\"; } 2>/dev/null && read -r v <\"$G/$m\" ;; esac" NL
    "    if { echo \"$x $g\" >\"$G/$m\"; } 2>/dev/null; then" NL "      n=; read -r n 2>/dev/null <\"$G/next\"" NL
    "      case $n in -1|*[!0-9]*) ;; *) gd=1; [ \"${n:-0}\" != 0 ] && [ \"$n\" -le \"$x\" ] || kill -s USR1 \"$gp\" "
    "2>/dev/null ;; esac" NL "    fi" NL "  fi" NL "fi" NL "w=" NL "if [ \"$d\" != 0 ] && [ -z \"$gd\" ]; then" NL
    "  (trap '[ \"${z:-0}\" = 0 ] || { kill -s KILL $z 2>/dev/null; "
    "wait $z; }; exit 0' USR1; trap : $t; read -r me _ </proc/self/stat" NL "   nap() { " SB_RTREE_VAR
    "= command -p sleep \"$1\" & z=$!;"
    " while kill -0 $z 2>/dev/null; do wait $z; done; z=0; }" NL
    "   nap \"$d\"; sweep TERM \"$m\" \"$me\"; nap \"$g\"; sweep KILL \"$m\" \"$me\")"
    " </dev/null >/dev/null 2>&1 &" NL "  w=$!" NL "fi" NL
    /* a signal to the tree must not end the wrapper before the command */
    "trap : $t USR1" NL "[ \"$d\" = 0 ] || [ \"$k\" = - ] || [ -n \"$gd\" ] && printf '\\001' || printf '\\005'" NL
    "q=; read -r _ _ _ _ q 2>/dev/null </proc/loadavg" NL
    /* a program the shell runs as it is: a plain command (dash forks it
     * with vfork, ~1 ms less here than a subshell's fork); else exec in a
     * subshell, so a builtin or function of the shell's is never run */
    "case $gd$v in 1/*) \"$@\" ;; *) (exec \"$@\") ;; esac" NL "s=$?" NL
    /* the command's stream is done: a note of the shell's own (the watchdog
     * ended by USR1 before its trap was set: "User defined signal 1") must
     * not join its stderr */
    "exec 2>/dev/null" NL "[ -z \"$gd\" ] || echo done >\"$G/$m\"" NL
    "[ -z \"$w\" ] || { kill -USR1 $w 2>/dev/null; while kill -0 $w 2>/dev/null; do wait $w; done; }" NL
    "quiet \"$q\" || sweep KILL \"$m\" $$ \"$q\"" NL
    /* ended by a signal that ends a process: end the same way */
    "if [ $s -gt 128 ]; then" NL "  case $((s - 128)) in" NL
    "  1|2|3|4|5|6|7|8|9|10|11|12|13|14|15|24|25|26|27|29|30|31)"
    " ulimit -c 0 2>/dev/null; trap - $((s - 128)); kill -$((s - 128)) $$ ;;" NL "  esac" NL "fi" NL "exit $s" NL;
#undef NL

bool sb_rtree_init(sb_rtree *t) {
  unsigned char raw[16];
  if (!sb_random(raw, sizeof raw)) return false;
  for (size_t i = 0; i < sizeof raw; i++) snprintf(t->mark + 2 * i, 3, "%02x", raw[i]);
  return true;
}

/* The deadline and grace as both keepers read them: seconds, "0" for no deadline. */
static void fill_nums(sb_rtree_nums *nums, double deadline, double grace) {
  snprintf(nums->deadline, sizeof nums->deadline, "%.2f", deadline > 0 ? deadline : 0);
  snprintf(nums->grace, sizeof nums->grace, "%.2f", grace > 0 ? grace : 0);
  if (deadline <= 0) snprintf(nums->deadline, sizeof nums->deadline, "0");
}

void sb_rtree_prefix(const char *out[SB_RTREE_PREFIX], sb_rtree_nums *nums, double deadline, double grace,
                     const sb_rtree_guard *guard, bool check) {
  fill_nums(nums, deadline, grace);
  out[0] = "-c";
  out[1] = script;
  out[2] = "agent-sandbox";
  out[3] = check ? "check" : "run";
  out[4] = nums->deadline;
  out[5] = nums->grace;
  out[6] = guard && guard->live ? guard->spec : "-";
}

static sb_code ignore(void *ud, const sb_rproc_event *ev, sb_err *e) {
  (void)ud;
  (void)ev;
  (void)e;
  return SB_OK;
}

void sb_rtree_helper_prefix(const char *out[SB_RHELPER_PREFIX], sb_rtree_nums *nums, const char *helper,
                            double deadline, double grace) {
  fill_nums(nums, deadline, grace);
  out[0] = helper;
  out[1] = "run";
  out[2] = nums->deadline;
  out[3] = nums->grace;
}

/* The helper's end: did it exit 0? */
static sb_code ended_ok(void *ud, const sb_rproc_event *ev, sb_err *e) {
  (void)e;
  if (ev->kind == SB_REV_END) *(bool *)ud = ev->exited && ev->exit_code == 0;
  return SB_OK;
}

sb_code sb_rtree_signal(const sb_mem *m, const sb_envd *d, const sb_rtree *t, int sig, const char *helper, double limit,
                        sb_err *e) {
  const char *name = sb_signame(sig); /* by name: the engine's numbers need not be this host's */
  if (!name) return sb_failf(e, SB_EINVAL, "signal %d has no name to send it by", sig);
  if (helper) { /* the tree by the mark and by descent; the wrapper's sweep where the helper is gone */
    const char *hargs[] = {"kill", name, t->mark, NULL};
    sb_rproc_spec hs = {.cmd = helper, .args = hargs, .deadline = limit, .keepalive = 1};
    bool ok = false;
    if (sb_envd_start(m, d, &hs, ended_ok, &ok, e) == SB_OK && ok) return SB_OK;
    e->code = SB_OK;
  }
  const char *args[] = {"-c", script, "agent-sandbox", "kill", name, t->mark, NULL};
  sb_rproc_spec s = {.cmd = SB_RTREE_SHELL, .args = args, .deadline = limit, .keepalive = 1};
  return sb_envd_start(m, d, &s, ignore, NULL, e);
}

sb_code sb_rtree_collect(void *ud, const sb_rproc_event *ev, sb_err *e) {
  (void)e;
  sb_rtree_answer *o = ud;
  if (ev->kind == SB_REV_STDOUT) {
    size_t n = ev->len < sizeof o->text - 1 - o->len ? ev->len : sizeof o->text - 1 - o->len;
    memcpy(o->text + o->len, ev->data, n);
    o->len += n;
  } else if (ev->kind == SB_REV_END) {
    o->ended = true;
    o->exit_code = ev->exited ? ev->exit_code : -1;
    if (o->len && o->text[o->len - 1] == '\n') o->len--;
  }
  o->text[o->len] = '\0';
  return SB_OK;
}

sb_code sb_rtree_guard_start(const sb_mem *m, const sb_envd *d, sb_rtree_guard *g, double idle, double limit,
                             sb_err *e) {
  g->live = false;
  if (!sb_rtree_init(&g->mark)) return sb_fail(e, SB_EIO, "no random bytes from the kernel for the guard's mark");
  char cs[32];
  snprintf(cs, sizeof cs, "%.0f", idle > 0 ? idle * 100 : 1);
  const char *args[] = {"-c", script, "agent-sandbox", "guard", g->mark.mark, cs, NULL};
  const char *env[] = {SB_RTREE_VAR, g->mark.mark, NULL};
  sb_rproc_spec s = {.cmd = SB_RTREE_SHELL, .args = args, .env = env, .deadline = limit, .keepalive = 1};
  /* it prints "PID DIR" */
  sb_rtree_answer o = {.exit_code = -1};
  sb_code c = sb_envd_start(m, d, &s, sb_rtree_collect, &o, e);
  if (c != SB_OK) return c;
  /* a pid and an absolute directory, or the guard is not used */
  unsigned long pid;
  int at = 0;
  if (!o.ended || o.exit_code != 0 || sscanf(o.text, "%lu %n", &pid, &at) != 1 || !at || o.text[at] != '/' ||
      o.len >= sizeof g->spec)
    return sb_failf(e, SB_EIO, "remote: the deadline guard did not start (exit %d: %.80s)", o.exit_code, o.text);
  memcpy(g->spec, o.text, o.len + 1);
  g->live = true;
  return SB_OK;
}

sb_code sb_rtree_guard_stop(const sb_mem *m, const sb_envd *d, sb_rtree_guard *g, double limit, sb_err *e) {
  if (!g->live) return SB_OK;
  g->live = false;
  const char *args[] = {"-c", script, "agent-sandbox", "unguard", g->mark.mark, strchr(g->spec, ' ') + 1, NULL};
  sb_rproc_spec s = {.cmd = SB_RTREE_SHELL, .args = args, .deadline = limit, .keepalive = 1};
  return sb_envd_start(m, d, &s, ignore, NULL, e);
}
