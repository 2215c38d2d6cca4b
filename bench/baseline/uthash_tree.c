/* Baseline for the VirtualSandbox workload (SPEC §10): a bare in-memory tree
 * (a uthash table of children per directory, as the VirtualSandbox) exposed
 * to Lua with the same calls and result shapes — stat gives a 4-field table,
 * readdir a sorted array of 4-field entries — and nothing else: no policy,
 * quota, audit, cwd or error vocabulary. The ceiling a Lua-facing C tree can
 * reach on this machine.   local t = require("benchtree").new() */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lauxlib.h>
#include <lua.h>
#include <uthash.h>

typedef struct node {
  char *name;
  int is_dir;
  char *data;
  size_t size;
  double mtime;
  struct node *children;
  UT_hash_handle hh;
} node;

typedef struct { node root; } tree;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Walks to the parent of the last component, which last and lastlen name. */
static node *parent_of(tree *t, const char *p, size_t n, const char **last, size_t *lastlen) {
  node *cur = &t->root;
  size_t i = 0;
  for (;;) {
    while (i < n && p[i] == '/') i++;
    size_t b = i;
    while (i < n && p[i] != '/') i++;
    size_t j = i;
    while (j < n && p[j] == '/') j++;
    if (j >= n) {
      *last = p + b;
      *lastlen = i - b;
      return (i - b == 0 || (i - b == 2 && p[b] == '.' && p[b + 1] == '.')) ? NULL : cur;
    }
    node *c;
    HASH_FIND(hh, cur->children, p + b, i - b, c);
    if (!c || !c->is_dir) return NULL;
    cur = c;
  }
}

static node *lookup(tree *t, const char *p, size_t n) {
  const char *last;
  size_t ll;
  node *par = parent_of(t, p, n, &last, &ll), *c = NULL;
  if (par) HASH_FIND(hh, par->children, last, ll, c);
  return c;
}

static node *add(node *par, const char *name, size_t len, int is_dir) {
  node *c = calloc(1, sizeof *c);
  c->name = malloc(len + 1);
  memcpy(c->name, name, len);
  c->name[len] = '\0';
  c->is_dir = is_dir;
  c->mtime = now();
  HASH_ADD_KEYPTR(hh, par->children, c->name, len, c);
  return c;
}

static void free_node(node *c) {
  node *k, *tmp;
  HASH_ITER(hh, c->children, k, tmp) {
    HASH_DEL(c->children, k);
    free_node(k);
  }
  free(c->name);
  free(c->data);
  free(c);
}

static tree *check(lua_State *L) { return luaL_checkudata(L, 1, "benchtree"); }

static int t_mkdir(lua_State *L) {
  tree *t = check(L);
  size_t n;
  const char *p = luaL_checklstring(L, 2, &n);
  node *cur = &t->root;
  for (size_t i = 0; i < n;) { /* with parents */
    while (i < n && p[i] == '/') i++;
    size_t b = i;
    while (i < n && p[i] != '/') i++;
    if (i == b) break;
    node *c;
    HASH_FIND(hh, cur->children, p + b, i - b, c);
    if (!c) c = add(cur, p + b, i - b, 1);
    else if (!c->is_dir) return luaL_error(L, "not a directory");
    cur = c;
  }
  lua_pushboolean(L, 1);
  return 1;
}

static int t_write(lua_State *L) {
  tree *t = check(L);
  size_t n, len;
  const char *p = luaL_checklstring(L, 2, &n), *last;
  const char *s = luaL_checklstring(L, 3, &len);
  size_t ll;
  node *par = parent_of(t, p, n, &last, &ll), *c;
  if (!par) return luaL_error(L, "no such directory");
  HASH_FIND(hh, par->children, last, ll, c);
  if (!c) c = add(par, last, ll, 0);
  else if (c->is_dir) return luaL_error(L, "is a directory");
  char *d = malloc(len ? len : 1);
  memcpy(d, s, len);
  free(c->data);
  c->data = d;
  c->size = len;
  c->mtime = now();
  lua_pushboolean(L, 1);
  return 1;
}

static int t_read(lua_State *L) {
  tree *t = check(L);
  size_t n;
  const char *p = luaL_checklstring(L, 2, &n);
  node *c = lookup(t, p, n);
  if (!c || c->is_dir) return luaL_error(L, "no such file");
  lua_pushlstring(L, c->data, c->size);
  return 1;
}

static void push_info(lua_State *L, const node *c, int with_name) {
  lua_createtable(L, 0, 4);
  if (with_name) {
    lua_pushstring(L, c->name);
    lua_setfield(L, -2, "name");
    lua_pushboolean(L, c->is_dir);
    lua_setfield(L, -2, "is_directory");
  } else {
    lua_pushnumber(L, c->mtime);
    lua_setfield(L, -2, "mtime");
    lua_pushinteger(L, c->is_dir ? 0755 : 0644);
    lua_setfield(L, -2, "mode");
  }
  lua_pushstring(L, c->is_dir ? "directory" : "file");
  lua_setfield(L, -2, "type");
  lua_pushinteger(L, (lua_Integer)c->size);
  lua_setfield(L, -2, "size");
}

static int t_stat(lua_State *L) {
  tree *t = check(L);
  size_t n;
  const char *p = luaL_checklstring(L, 2, &n);
  node *c = lookup(t, p, n);
  if (!c) return luaL_error(L, "no such file");
  push_info(L, c, 0);
  return 1;
}

static int by_name(const void *a, const void *b) {
  return strcmp((*(node *const *)a)->name, (*(node *const *)b)->name);
}

static int t_readdir(lua_State *L) {
  tree *t = check(L);
  size_t n;
  const char *p = luaL_checklstring(L, 2, &n);
  node *d = (n == 1 && p[0] == '.') ? &t->root : lookup(t, p, n);
  if (!d || !d->is_dir) return luaL_error(L, "not a directory");
  unsigned cnt = HASH_COUNT(d->children), i = 0;
  node **v = malloc((cnt ? cnt : 1) * sizeof *v), *c, *tmp;
  HASH_ITER(hh, d->children, c, tmp) v[i++] = c;
  qsort(v, cnt, sizeof *v, by_name);
  lua_createtable(L, (int)cnt, 0);
  for (i = 0; i < cnt; i++) {
    push_info(L, v[i], 1);
    lua_rawseti(L, -2, i + 1);
  }
  free(v);
  return 1;
}

static int t_remove(lua_State *L) {
  tree *t = check(L);
  size_t n, ll;
  const char *p = luaL_checklstring(L, 2, &n), *last;
  node *par = parent_of(t, p, n, &last, &ll), *c = NULL;
  if (par) HASH_FIND(hh, par->children, last, ll, c);
  if (!c) return luaL_error(L, "no such file");
  if (c->children) return luaL_error(L, "directory not empty");
  HASH_DEL(par->children, c);
  free_node(c);
  lua_pushboolean(L, 1);
  return 1;
}

static int t_gc(lua_State *L) {
  tree *t = check(L);
  node *k, *tmp;
  HASH_ITER(hh, t->root.children, k, tmp) {
    HASH_DEL(t->root.children, k);
    free_node(k);
  }
  return 0;
}

static int t_new(lua_State *L) {
  tree *t = lua_newuserdatauv(L, sizeof *t, 0);
  memset(t, 0, sizeof *t);
  t->root.is_dir = 1;
  luaL_setmetatable(L, "benchtree");
  return 1;
}

int luaopen_benchtree(lua_State *L) {
  static const luaL_Reg methods[] = {{"mkdir", t_mkdir},   {"write_file", t_write},
                                     {"read_file", t_read}, {"stat", t_stat},
                                     {"readdir", t_readdir}, {"remove", t_remove},
                                     {"dispose", t_gc},     {NULL, NULL}};
  luaL_newmetatable(L, "benchtree");
  luaL_newlib(L, methods);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, t_gc);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
  lua_createtable(L, 0, 1);
  lua_pushcfunction(L, t_new);
  lua_setfield(L, -2, "new");
  return 1;
}
