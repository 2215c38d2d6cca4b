-- The rock is "agent-sandbox" (the name "sandbox" is taken by a pure-Lua
-- code sandbox); the module stays `require "sandbox"`. It builds with the
-- project's Makefile, so the rock and `make` compile the same way (hidden
-- visibility: the module exports only luaopen_sandbox_core). On macOS and
-- the BSDs the Makefile leaves Linux's layers out by itself (`uname`) and
-- builds with the platform's compiler (README: Platforms).
rockspec_format = "3.0"
package = "agent-sandbox"
-- scm-1: the repository's head, the version plugin managers look for
-- (lazy.nvim and rocks.nvim read *-scm-1.rockspec from a plugin's root and
-- build it with luarocks for Neovim's Lua, 5.1, whose module LuaJIT loads).
version = "scm-1"
source = { url = "git+https://example.invalid/agent-sandbox.git" }
description = {
  summary = "Safe places for Lua agents to work: a virtual file tree and a rooted, confined container",
  detailed = [[
VirtualSandbox (in-memory tree) and ContainerSandbox (a real directory bound
to a root fd; commands confined on Linux, with timeouts and whole-tree kill),
both generating tool tables for OpenAI/Anthropic/MCP agent loops.]],
  license = "MIT",
  homepage = "https://example.invalid/agent-sandbox",
}
-- lua-cjson decodes tool-call JSON fast; without it the module's own codec
-- is used (sandbox.json), so a missing rock degrades speed, not function.
dependencies = { "lua >= 5.1, < 5.5", "lua-cjson >= 2.1" } -- 5.1 covers LuaJIT 2.1
external_dependencies = {
  LIBUV = { header = "uv.h", library = "uv" },
  UTHASH = { header = "uthash.h" },
  CURL = { library = "curl" }, -- curl.h is in the multiarch include dir the compiler searches
  PCRE2 = { header = "pcre2.h", library = "pcre2-8" },
  OPENSSL = { header = "openssl/ssl.h", library = "ssl" }, -- SHA-256 of the audit log, TLS of the secrets proxy
}
build = {
  type = "make",
  build_target = "module",
  build_variables = {
    CC = "$(CC)",
    LUA = "lua$(LUA_VERSION)",
    LUA_INC = "-I$(LUA_INCDIR) -I$(LIBUV_INCDIR) -I$(UTHASH_INCDIR) -I$(PCRE2_INCDIR) -I$(OPENSSL_INCDIR)",
    LDFLAGS = "-L$(LIBUV_LIBDIR) -L$(CURL_LIBDIR) -L$(PCRE2_LIBDIR) -L$(OPENSSL_LIBDIR)",
    BUILD = "build-rock",
  },
  install_target = "install",
  install_variables = {
    BUILD = "build-rock",
    LUA = "lua$(LUA_VERSION)",
    INST_LIBDIR = "$(LIBDIR)",
    INST_LUADIR = "$(LUADIR)",
    INST_BINDIR = "$(BINDIR)",
  },
}
test = {
  type = "command",
  command = "make test",
}
