/* The sandbox object of the Lua binding: its userdata, the parts it is made
 * of, and what every method shares (argument and path checks, the policy
 * check, results, errors, audit).
 *
 * A sandbox is a file-system part (sb_fs: the backend) plus optional parts
 * registered at construction — commands (lua/exec.c), their confinement
 * (lua/confine.c), network (lua/net.c) — each with its own state and close,
 * released in reverse order of registration. A part finds its state with
 * sb_part_get(sb, &its_class); nothing else reaches into it. */
#ifndef SB_LUA_OBJECT_H
#define SB_LUA_OBJECT_H

#include "lua/compat.h"

#include "fs/backend.h"

typedef struct sb_sandbox sb_sandbox;
typedef struct sb_audit sb_audit;

/* A file operation's audit event (kind "file"): what the object knows. */
typedef struct sb_audit_file {
  const char *op, *path, *code; /* path may be NULL; code NULL on success */
  size_t plen;
  bool ok;
  lua_Integer size; /* -1: none */
} sb_audit_file;

/* The audit stream's entry points, set by lua/audit.c when it begins: the
 * object reports through them without depending on the stream's file. */
typedef struct sb_audit_hooks {
  void (*file)(lua_State *L, sb_sandbox *sb, const sb_audit_file *f);
  void (*close)(lua_State *L, sb_sandbox *sb); /* "disposed", the last write */
} sb_audit_hooks;

/* A part of the sandbox object: its name and how it is released. */
typedef struct sb_part_class {
  const char *name;
  void (*close)(lua_State *L, sb_sandbox *sb, void *state);
} sb_part_class;

#define SB_MAX_PARTS 10

struct sb_sandbox {
  sb_fs fs; /* the backend and what it may use */
  sb_policy policy; /* rules, extensions, size limits (fs.policy points here) */
  bool closed; /* disposed: every method but close raises */
  char *cwd; /* what the agent sees as the root, absolute */
  size_t cwdlen;
  sb_audit *audit; /* the audit stream (lua/audit.c), or NULL */
  const sb_audit_hooks *audit_hooks; /* set with it */
  sb_dirlist dl; /* readdir's listing storage, reused */
  int nparts;
  struct {
    const sb_part_class *cls;
    void *state;
  } parts[SB_MAX_PARTS];
};

sb_sandbox *sb_lua_check(lua_State *L, int idx); /* raises if not a sandbox */
sb_sandbox *sb_lua_check_open(lua_State *L, int idx); /* ... or if disposed */

/* Create the userdata for backend `be` from the normalised options at
 * opts_idx (the shared options: policy, audit); pushes it. The backend
 * opens its state into sb->fs afterwards; __gc releases whatever exists. */
sb_sandbox *sb_lua_new(lua_State *L, const sb_backend *be, int opts_idx, const char *cwd, size_t cwdlen);
/* Release every part (newest first), then the backend; idempotent. */
void sb_lua_release(lua_State *L, sb_sandbox *sb);
/* Add a field visible as sb.<name> (value on top of the stack, popped). */
void sb_lua_setfield(lua_State *L, int ud_idx, const char *name);

/* Register a part: from now on the sandbox's release closes it. Raises
 * (after closing it) when the object holds too many parts. */
void sb_part_add(lua_State *L, sb_sandbox *sb, const sb_part_class *cls, void *state);
void *sb_part_get(const sb_sandbox *sb, const sb_part_class *cls);

/* Per-operation state on the C stack: path, error, audit data. */
typedef struct sb_op {
  const char *name;
  sb_err e;
  sb_path p;
  bool parsed;
  bool show_raw; /* report raw (a glob pattern) rather than p */
  bool no_path; /* the failure is not about a path: message without one */
  bool unaudited; /* the Lua layer audits it, with more than the C side knows (a command's argv) */
  const char *raw; /* the agent's string, for audit when parsing failed */
  size_t rawlen;
} sb_op;

#define SB_OP(var, nm) \
  sb_op var##_storage; \
  sb_op *var = &var##_storage; \
  var->name = nm; \
  var->parsed = var->show_raw = var->no_path = var->unaudited = false

/* Parse the path argument at idx into op->p through the front door. */
sb_code sb_lua_arg_path(lua_State *L, sb_sandbox *sb, int idx, sb_op *op);
/* Policy check of a parsed path (on its lexical form). */
sb_code sb_lua_guard(sb_sandbox *sb, sb_op *op, const sb_path *p, sb_access acc, int kind);

/* Push nil, "CODE: message[: path]", "CODE"; returns 3. */
int sb_push_err(lua_State *L, const sb_err *e, const char *path, size_t plen);
/* Push nil, msg, code for op and audit the failure; returns 3. */
int sb_lua_fail(lua_State *L, sb_sandbox *sb, sb_op *op);
/* Audit a success (results already pushed stay in place). */
void sb_lua_audit_ok(lua_State *L, sb_sandbox *sb, sb_op *op, lua_Integer size);

/* The methods every sandbox has (dispose, close) into the table on top. */
void sb_lua_object_methods(lua_State *L);
/* The method table of every sandbox (on top, popped): module.c assembles
 * it from the parts once per state; new sandboxes copy it. */
void sb_lua_set_methods(lua_State *L);
void sb_lua_push_methods(lua_State *L);

#endif
