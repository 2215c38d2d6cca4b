#include "lua/channel.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "plat/sigwatch.h"

#define CHANNEL_MT "sandbox.channel"
#define READ_CHUNK (64 * 1024)

typedef struct channel {
  int in, out; /* -1 when not taken */
  sb_sigwatch sig;
  bool closed, eof, skipping;
  sigset_t old; /* the caller's mask, restored by close */
  size_t max_line;
  char *buf; /* unconsumed input: [start, len) */
  size_t start, len, cap;
  lua_Alloc alloc;
  void *aud;
} channel;

static const struct {
  const char *name;
  int sig;
} SIGNALS[] = {{"TERM", SIGTERM}, {"INT", SIGINT}, {"HUP", SIGHUP}, {"QUIT", SIGQUIT}};
#define NSIGNALS (sizeof SIGNALS / sizeof *SIGNALS)

static const char *signal_name(int sig) {
  for (size_t i = 0; i < NSIGNALS; i++)
    if (SIGNALS[i].sig == sig) return SIGNALS[i].name;
  return "?";
}

static channel *check_ch(lua_State *L) {
  channel *ch = luaL_checkudata(L, 1, CHANNEL_MT);
  if (ch->closed) luaL_error(L, "the channel is closed");
  return ch;
}

static void ch_close(channel *ch) {
  if (ch->closed) return;
  ch->closed = true;
  if (ch->in >= 0) close(ch->in);
  if (ch->out >= 0) close(ch->out);
  if (ch->sig.on) {
    sb_sigwatch_close(&ch->sig);
    pthread_sigmask(SIG_SETMASK, &ch->old, NULL);
  }
  if (ch->buf) ch->alloc(ch->aud, ch->buf, ch->cap, 0);
  ch->buf = NULL;
}

static int l_close(lua_State *L) {
  ch_close(luaL_checkudata(L, 1, CHANNEL_MT));
  return 0;
}

/* A pending signal's name, without waiting; NULL when none. */
static const char *take_signal(channel *ch) {
  int sig = sb_sigwatch_take(&ch->sig);
  return sig ? signal_name(sig) : NULL;
}

/* The next complete line in the buffer (its length without "\n" or
 * "\r\n"), consumed; -1 when there is none. */
static long next_line(channel *ch, const char **line) {
  char *p = ch->buf + ch->start;
  char *nl = ch->len > ch->start ? memchr(p, '\n', ch->len - ch->start) : NULL;
  if (!nl) return -1;
  size_t n = (size_t)(nl - p);
  ch->start += n + 1;
  if (n > 0 && p[n - 1] == '\r') n--;
  *line = p;
  return (long)n;
}

/* Read what the input has (one read): 1 read, 0 end of input, -1 error. */
static int fill(channel *ch) {
  if (ch->start > 0) { /* keep the unconsumed part at the front */
    memmove(ch->buf, ch->buf + ch->start, ch->len - ch->start);
    ch->len -= ch->start;
    ch->start = 0;
  }
  if (ch->cap - ch->len < READ_CHUNK) {
    size_t ncap = ch->cap ? ch->cap * 2 : 2 * READ_CHUNK;
    while (ncap - ch->len < READ_CHUNK) ncap *= 2;
    char *nb = ch->alloc(ch->aud, ch->buf, ch->cap, ncap);
    if (!nb) {
      errno = ENOMEM;
      return -1;
    }
    ch->buf = nb;
    ch->cap = ncap;
  }
  ssize_t n;
  while ((n = read(ch->in, ch->buf + ch->len, ch->cap - ch->len)) < 0 && errno == EINTR) {}
  if (n < 0) return -1;
  ch->len += (size_t)n;
  return n > 0;
}

/* A line longer than max_line is dropped up to its end; the caller hears
 * of it once. Returns true when the buffer was cut. */
static bool overlong(channel *ch) {
  size_t pending = ch->len - ch->start;
  if (pending <= ch->max_line || memchr(ch->buf + ch->start, '\n', pending)) return false;
  ch->start = ch->len = 0;
  bool first = !ch->skipping;
  ch->skipping = true;
  return first;
}

/* ch:read([timeout]) -> line | nil, "timeout" | nil, "eof" |
 * nil, "signal", "TERM" | nil, "too_long" | nil, "error", msg.
 * timeout in seconds (default: wait forever; 0: do not wait). */
static int l_read(lua_State *L) {
  channel *ch = check_ch(L);
  double timeout = luaL_optnumber(L, 2, -1);
  double deadline = timeout < 0 ? -1 : sb_now() + timeout;
  if (ch->in < 0) luaL_error(L, "this channel has no input");
  for (;;) {
    const char *sig = take_signal(ch);
    if (sig) {
      lua_pushnil(L);
      lua_pushliteral(L, "signal");
      lua_pushstring(L, sig);
      return 3;
    }
    const char *line;
    long n;
    while ((n = next_line(ch, &line)) >= 0) {
      if (ch->skipping) { /* the rest of a line already reported too long */
        ch->skipping = false;
        continue;
      }
      if ((size_t)n > ch->max_line) {
        lua_pushnil(L);
        lua_pushliteral(L, "too_long");
        return 2;
      }
      lua_pushlstring(L, line, (size_t)n);
      return 1;
    }
    if (ch->eof) {
      if (ch->len > ch->start && !ch->skipping) { /* a last line without "\n" */
        lua_pushlstring(L, ch->buf + ch->start, ch->len - ch->start);
        ch->start = ch->len;
        return 1;
      }
      lua_pushnil(L);
      lua_pushliteral(L, "eof");
      return 2;
    }
    double left = deadline < 0 ? -1 : deadline - sb_now();
    if (deadline >= 0 && left < 0) left = 0;
    struct pollfd pf[2] = {{.fd = ch->in, .events = POLLIN}, {.fd = ch->sig.fd, .events = POLLIN}};
    double ms = left < 0 ? -1 : left * 1000 + (left > 0);
    if (ch->sig.on && ch->sig.fd < 0 && (ms < 0 || ms > SB_SIGWATCH_SLICE_MS)) ms = SB_SIGWATCH_SLICE_MS;
    int r = poll(pf, ch->sig.fd >= 0 ? 2 : 1, ms > 1e9 ? 1000000000 : (int)ms);
    if (r < 0 && errno != EINTR) {
      lua_pushnil(L);
      lua_pushliteral(L, "error");
      lua_pushstring(L, strerror(errno));
      return 3;
    }
    if (r > 0 && pf[0].revents) {
      int f = fill(ch);
      if (f < 0) {
        lua_pushnil(L);
        lua_pushliteral(L, "error");
        lua_pushstring(L, strerror(errno));
        return 3;
      }
      if (f == 0) ch->eof = true;
      if (overlong(ch)) {
        lua_pushnil(L);
        lua_pushliteral(L, "too_long");
        return 2;
      }
      continue;
    }
    if (r > 0) continue; /* a signal: taken at the top */
    if (deadline >= 0 && sb_now() >= deadline) {
      lua_pushnil(L);
      lua_pushliteral(L, "timeout");
      return 2;
    }
  }
}

/* ch:write(s) -> true | nil, msg. Writes all of s (blocking). */
static int l_write(lua_State *L) {
  channel *ch = check_ch(L);
  size_t len;
  const char *s = luaL_checklstring(L, 2, &len);
  if (ch->out < 0) luaL_error(L, "this channel has no output");
  while (len > 0) {
    ssize_t n = write(ch->out, s, len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      lua_pushnil(L);
      lua_pushstring(L, strerror(errno));
      return 2;
    }
    s += n;
    len -= (size_t)n;
  }
  lua_pushboolean(L, 1);
  return 1;
}

/* ch:signal() -> "TERM" | nil: a pending signal, without waiting. */
static int l_signal(lua_State *L) {
  const char *sig = take_signal(check_ch(L));
  if (!sig) return 0;
  lua_pushstring(L, sig);
  return 1;
}

/* Take fd `from` for the channel and put `with` in its place, so that
 * nothing else in the process reads or writes it. */
static int take_fd(int from, int with) {
  int fd = fcntl(from, F_DUPFD_CLOEXEC, 3);
  if (fd < 0) return -1;
  if (dup2(with, from) < 0) {
    close(fd);
    return -1;
  }
  return fd;
}

static bool block_signals(lua_State *L, channel *ch) {
  sigset_t set;
  sigemptyset(&set);
  lua_getfield(L, 1, "signals");
  int n = lua_istable(L, -1) ? (int)lua_rawlen(L, -1) : 0;
  for (int i = 1; i <= n; i++) {
    lua_rawgeti(L, -1, i);
    const char *name = lua_tostring(L, -1);
    size_t k = 0;
    while (k < NSIGNALS && (!name || strcmp(name, SIGNALS[k].name) != 0)) k++;
    if (k == NSIGNALS) luaL_error(L, "channel: unknown signal '%s' (TERM, INT, HUP, QUIT)", name ? name : "?");
    sigaddset(&set, SIGNALS[k].sig);
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  if (n == 0) return true;
  /* a write to a reader that went away must be an error, not the end */
  sigset_t block = set;
  sigaddset(&block, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &block, &ch->old);
  if (sb_sigwatch_open(&ch->sig, &set) != 0) {
    pthread_sigmask(SIG_SETMASK, &ch->old, NULL);
    return false;
  }
  return true;
}

/* core.channel{stdio = bool, signals = {"TERM", ...}, max_line = n}: the
 * process's stdio as a line channel for a server, and the signals that
 * should end it as events instead of deaths. With stdio, fds 0 and 1 are
 * taken: 0 becomes /dev/null and 1 becomes a copy of 2, so a stray print
 * can never corrupt the protocol. */
static int l_channel(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_getfield(L, 1, "max_line");
  lua_Integer max_line = lua_isnumber(L, -1) ? lua_tointeger(L, -1) : 64 * 1024 * 1024;
  lua_pop(L, 1);
  lua_getfield(L, 1, "stdio");
  bool stdio = lua_toboolean(L, -1);
  lua_pop(L, 1);
  channel *ch = lua_newuserdata(L, sizeof *ch);
  memset(ch, 0, sizeof *ch);
  ch->in = ch->out = ch->sig.fd = -1;
  ch->max_line = max_line > 0 ? (size_t)max_line : 1;
  ch->alloc = lua_getallocf(L, &ch->aud);
  luaL_getmetatable(L, CHANNEL_MT);
  lua_setmetatable(L, -2);
  if (!block_signals(L, ch)) {
    int err = errno;
    ch_close(ch);
    return luaL_error(L, "channel: cannot watch signals (%s)", strerror(err));
  }
  if (stdio) {
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    ch->in = devnull < 0 ? -1 : take_fd(0, devnull);
    ch->out = ch->in < 0 ? -1 : take_fd(1, 2);
    int err = errno;
    if (devnull >= 0) close(devnull);
    if (ch->in < 0 || ch->out < 0) {
      ch_close(ch);
      return luaL_error(L, "channel: cannot take standard input and output (%s)", strerror(err));
    }
  }
  return 1;
}

void sb_lua_channel_open(lua_State *L) {
  static const luaL_Reg methods[] = {
      {"read", l_read}, {"write", l_write}, {"signal", l_signal}, {"close", l_close}, {NULL, NULL}};
  if (luaL_newmetatable(L, CHANNEL_MT)) {
    lua_newtable(L);
    luaL_setfuncs(L, methods, 0);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, l_close);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, l_close);
    lua_setfield(L, -2, "__close");
  }
  lua_pop(L, 1);
  lua_pushcfunction(L, l_channel);
  lua_setfield(L, -2, "channel");
}
