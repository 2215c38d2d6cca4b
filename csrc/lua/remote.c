/* sandbox.remote (SPEC §15): a sandbox on an engine that speaks E2B's API.
 * The constructor makes the remote sandbox (or reattaches to one), opens
 * the remote backend over its envd, and registers the part that kills it
 * at dispose (unless keep). The engine's key and the sandbox's token live
 * only in this part and the backend: no field of the sandbox shows them. */
#include "lua/remote.h"

#include <stdlib.h>
#include <string.h>

#include "remote/runner.h"
#include "remote/fs.h"
#include "remote/helper.h"
#include "lua/options.h"
#include "lua/runner.h"
#include "remote/control.h"

typedef struct remote_part {
  sb_remote_engine g;
  char api_url[600], api_key[256], envd_url[600], domain[256], root[SB_PATH_MAX + 1];
  char id[128];
  bool keep;
} remote_part;

static void wipe(void *p, size_t n) {
  volatile char *v = p;
  while (n--) *v++ = 0;
}

static void remote_close(lua_State *L, sb_sandbox *sb, void *state) {
  (void)L;
  remote_part *rp = state;
  if (rp->id[0] && !rp->keep) {
    sb_err e;
    sb_remote_kill(&sb->fs.mem, &rp->g, rp->id, &e); /* best effort: nothing else can be done at dispose */
  }
  wipe(rp->api_key, sizeof rp->api_key);
  sb_free(&sb->fs.mem, rp, sizeof *rp);
}

static const sb_part_class remote_part_class = {"remote", remote_close};

static bool copy(char *dst, size_t cap, const char *s) {
  if (!s) {
    dst[0] = '\0';
    return true;
  }
  size_t n = strlen(s);
  if (n >= cap) return false;
  memcpy(dst, s, n + 1);
  return true;
}

/* {k = v} at field `key` of opts as a NULL-terminated k, v, ... array in a
 * userdata left on the stack (strings anchored by the table); NULL if absent. */
static const char *const *pairs_of(lua_State *L, int opts, const char *key) {
  if (lua_getfield(L, opts, key) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_pushnil(L);
    return NULL;
  }
  int t = lua_gettop(L);
  size_t n = 0;
  lua_pushnil(L);
  while (lua_next(L, t)) {
    n++;
    lua_pop(L, 1);
  }
  const char **v = lua_newuserdatauv(L, (2 * n + 1) * sizeof *v, 0);
  size_t i = 0;
  lua_pushnil(L);
  while (lua_next(L, t)) {
    v[i++] = lua_tostring(L, -2); /* checked strings: no conversion happens */
    v[i++] = lua_tostring(L, -1);
    lua_pop(L, 1);
  }
  v[i] = NULL;
  lua_remove(L, t); /* the userdata stays; the table is anchored by opts */
  return v;
}

static void set_str(lua_State *L, const char *k, const char *v) {
  lua_pushstring(L, v);
  lua_setfield(L, -2, k);
}

/* The policy the file tools obey binds commands too, or they are refused
 * (SPEC §6.1): on the engine nothing of this host binds them. */
static const char *const REFUSED =
    "commands are not run: they run on the engine, where read_only and the deny/allow rules do not bind them "
    "(here they bind the file tools); drop those options to run commands, or use a local sandbox";

static bool policy_binds_commands(const sb_policy *p) { return p->read_only || sb_policy_has_rules(p); }

static void set_policy_entry(lua_State *L, const char *name, bool set, const char *why_set) {
  lua_createtable(L, 0, 2);
  lua_pushboolean(L, 0);
  lua_setfield(L, -2, "enforced");
  set_str(L, "why", set ? why_set : "not set");
  lua_setfield(L, -2, name);
}

/* sb.confinement: what isolates the commands is the engine's, said as data. */
static void push_confinement(lua_State *L, const remote_part *rp, const sb_remote_box *b, const sb_policy *p,
                             bool opt_helper) {
  lua_createtable(L, 0, 6);
  lua_pushboolean(L, 1);
  lua_setfield(L, -2, "enabled");
  set_str(L, "engine", rp->api_url);
  set_str(L, "template", b->template_id);
  set_str(L, "sandbox_id", b->id);
  set_str(L, "envd_version", b->envd_version);
  lua_createtable(L, 0, 3);
  lua_pushboolean(L, 1);
  lua_setfield(L, -2, "enforced");
  set_str(L, "by", "the engine");
  set_str(L, "promise",
          "a sandbox of its own on the engine (a Firecracker microVM on E2B, a KVM microVM on CubeSandbox): "
          "nothing of this host is reachable from it; its network is the engine's (allow_internet_access)");
  lua_setfield(L, -2, "isolation");
  /* envd signals one process: the tree is the wrapper's (remote/tree.h) */
  lua_createtable(L, 0, 2);
  set_str(L, "via",
          opt_helper ? "the engine-side helper, uploaded after the first command: the command's descendants (it is "
                       "their subreaper) and what carries its environment mark; until then, and where it cannot run, "
                       "the sh wrapper: the mark, swept from /proc"
                     : "an environment mark every process of a command inherits, swept from /proc");
  set_str(L, "checked", "by the first command: ENOTSUP where the template has no /proc or no grep -z");
  lua_setfield(L, -2, "tree_kill");
  /* one entry per policy item: none binds commands on the engine */
  if (policy_binds_commands(p)) set_str(L, "refused", REFUSED);
  set_policy_entry(L, "read_only", p->read_only, REFUSED);
  set_policy_entry(L, "rules", sb_policy_has_rules(p), REFUSED);
  set_policy_entry(L, "extensions", p->has_ext_read || p->has_ext_write,
                   "a file-tool policy: commands read and write files of any extension");
}

/* sb:keep_alive(seconds): the engine keeps the sandbox that long from now
 * (POST /sandboxes/{id}/timeout); true, or nil, msg, code. */
static int l_keep_alive(lua_State *L) {
  sb_sandbox *sb = sb_lua_check_open(L, 1);
  lua_Number secs = luaL_checknumber(L, 2);
  luaL_argcheck(L, secs >= 1 && secs <= 86400 * 30, 2, "seconds must be from 1 to 30 days");
  remote_part *rp = sb_part_get(sb, &remote_part_class);
  sb_err e;
  if (sb_remote_set_timeout(&sb->fs.mem, &rp->g, rp->id, (int)secs, &e) != SB_OK) return sb_push_err(L, &e, NULL, 0);
  lua_pushboolean(L, 1);
  return 1;
}

static sb_code list_one(void *ud, const sb_remote_box *b, sb_err *e) {
  (void)e;
  lua_State *L = ud;
  lua_createtable(L, 0, 3);
  set_str(L, "sandbox_id", b->id);
  set_str(L, "template", b->template_id);
  set_str(L, "state", b->state);
  lua_rawseti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1);
  return SB_OK;
}

int sb_lua_remote_list(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  sb_mem m;
  sb_mem_init(&m, L);
  sb_remote_engine g = {.api_url = sb_opt_str(L, 1, "api_url"),
                        .api_key = sb_opt_str(L, 1, "api_key"),
                        .t = {.connect = sb_opt_num(L, 1, "connect_timeout"),
                              .call = sb_opt_num(L, 1, "request_timeout"),
                              .idle = sb_opt_num(L, 1, "idle_timeout")}};
  lua_newtable(L);
  sb_err e;
  if (sb_remote_list(&m, &g, list_one, L, &e) != SB_OK) return sb_push_err(L, &e, NULL, 0);
  return 1;
}

int sb_lua_remote(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  const char *root = sb_opt_str(L, 1, "root");
  sb_sandbox *sb = sb_lua_new(L, &sb_remote_backend, 1, root, strlen(root));
  int ud = lua_gettop(L);
  remote_part *rp = sb_malloc(&sb->fs.mem, sizeof *rp);
  if (!rp) luaL_error(L, "not enough memory");
  memset(rp, 0, sizeof *rp);
  sb_part_add(L, sb, &remote_part_class, rp); /* from here the sandbox's release kills and frees it */
  sb_err e;
  if (!copy(rp->api_url, sizeof rp->api_url, sb_opt_str(L, 1, "api_url")) ||
      !copy(rp->api_key, sizeof rp->api_key, sb_opt_str(L, 1, "api_key")) ||
      !copy(rp->envd_url, sizeof rp->envd_url, sb_opt_str_or(L, 1, "envd_url", NULL)) ||
      !copy(rp->domain, sizeof rp->domain, sb_opt_str_or(L, 1, "domain", NULL))) {
    sb_fail(&e, SB_EINVAL, "sandbox.remote: api_url, api_key, envd_url or domain is too long");
    sb_lua_release(L, sb);
    return sb_push_err(L, &e, NULL, 0);
  }
  rp->keep = sb_opt_bool(L, 1, "keep");
  rp->g = (sb_remote_engine){.api_url = rp->api_url,
                             .api_key = rp->api_key,
                             .envd_url = rp->envd_url[0] ? rp->envd_url : NULL,
                             .domain = rp->domain[0] ? rp->domain : NULL,
                             .t = {.connect = sb_opt_num(L, 1, "connect_timeout"),
                                   .call = sb_opt_num(L, 1, "request_timeout"),
                                   .idle = sb_opt_num(L, 1, "idle_timeout")}};
  int ttl = (int)sb_opt_num(L, 1, "timeout");
  sb_remote_box *box = lua_newuserdatauv(L, sizeof *box, 0); /* holds the token: wiped below */
  const char *id = sb_opt_str_or(L, 1, "sandbox_id", NULL);
  sb_code c;
  if (id) {
    c = sb_remote_connect(&sb->fs.mem, &rp->g, id, ttl, box, &e);
  } else {
    const char *const *meta = pairs_of(L, 1, "metadata");
    const char *const *env = pairs_of(L, 1, "env"); /* the commands' base, the sandbox's too */
    sb_remote_spec s = {.template_id = sb_opt_str(L, 1, "template"),
                        .timeout = ttl,
                        .metadata = meta,
                        .env = env,
                        .internet =
                            lua_getfield(L, 1, "allow_internet_access") == LUA_TBOOLEAN ? lua_toboolean(L, -1) : -1};
    lua_pop(L, 1);
    c = sb_remote_create(&sb->fs.mem, &rp->g, &s, box, &e);
  }
  if (c == SB_OK) {
    memcpy(rp->id, box->id, sizeof rp->id);
    sb_envd d = {.url = box->envd_url,
                 .token = box->token,
                 .sandbox_id = box->id,
                 .user = sb_opt_str(L, 1, "user"),
                 .version = sb_envd_version(box->envd_version),
                 .t = rp->g.t};
    c = sb_remote_fs_open(&sb->fs, &d, root, &e);
  }
  wipe(box->token, sizeof box->token); /* the backend keeps its copy */
  if (c == SB_OK && sb_opt_bool(L, 1, "exec")) {
    memcpy(rp->root, root, strlen(root) + 1);
    sb_remote_runner_config rc = {
        .grace = sb_opt_num(L, 1, "kill_grace"),
        .max_output = (size_t)sb_opt_u64(L, 1, "max_output_bytes"),
        .fs = &sb->fs,
        .envd = sb_remote_fs_envd(&sb->fs),
        .root = rp->root,
        .login = sb_opt_bool(L, 1, "login"),
        /* test switch: seconds an idle guard lives (remote/tree.h) */
        .guard_idle = getenv("SANDBOX_REMOTE_GUARD_IDLE") ? atof(getenv("SANDBOX_REMOTE_GUARD_IDLE")) : 0,
        .helper = sb_opt_bool(L, 1, "tree_helper")};
    sb_runner *r = sb_remote_runner(&sb->fs.mem, &rc, &e);
    if (!r) c = e.code;
    else {
      sb_lua_runner *lr = sb_lua_runner_attach(L, sb, r, 1); /* released before the remote part: commands end first */
      if (policy_binds_commands(&sb->policy)) lr->refused = REFUSED;
      lua_pushboolean(L, 1);
      sb_lua_setfield(L, ud, "has_exec");
    }
  }
  if (c == SB_OK) {
    lua_pushstring(L, box->id);
    sb_lua_setfield(L, ud, "sandbox_id");
    const unsigned char *hb;
    push_confinement(L, rp, box, &sb->policy, sb_opt_bool(L, 1, "tree_helper") && sb_rhelper_program(&hb) > 0);
    sb_lua_setfield(L, ud, "confinement");
    lua_pushcfunction(L, l_keep_alive);
    sb_lua_setfield(L, ud, "keep_alive");
  }
  if (c != SB_OK) {
    sb_lua_release(L, sb);
    return sb_push_err(L, &e, NULL, 0);
  }
  lua_settop(L, ud);
  return 1;
}
