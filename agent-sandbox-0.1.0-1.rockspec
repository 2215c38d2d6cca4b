-- The rock is "agent-sandbox" (the name "sandbox" is taken by a pure-Lua
-- code sandbox); the module stays `require "sandbox"`.
rockspec_format = "3.0"
package = "agent-sandbox"
version = "0.1.0-1"
source = { url = "git+https://example.invalid/agent-sandbox.git", tag = "v0.1.0" }
description = {
  summary = "Safe places for Lua agents to work: a virtual file tree and a rooted, confined container",
  detailed = [[
VirtualSandbox (in-memory tree) and ContainerSandbox (a real directory bound
to a root fd; commands run with posix_spawn, timeouts, whole-tree kill and
Landlock), both generating tool tables for OpenAI/Anthropic/MCP agent loops.]],
  license = "MIT",
  homepage = "https://example.invalid/agent-sandbox",
}
dependencies = { "lua >= 5.4, < 5.5" }
external_dependencies = {
  LIBUV = { header = "uv.h", library = "uv" },
  UTHASH = { header = "uthash.h" },
  CURL = { library = "curl" }, -- curl.h is in the multiarch include dir the compiler searches
}
build = {
  type = "builtin",
  modules = {
    ["sandbox.exec"] = "lua/sandbox/exec.lua",
    ["sandbox"] = "lua/sandbox/init.lua",
    ["sandbox.net"] = "lua/sandbox/net.lua",
    ["sandbox.options"] = "lua/sandbox/options.lua",
    ["sandbox.tools"] = "lua/sandbox/tools.lua",
    ["sandbox.tools.builtin"] = "lua/sandbox/tools/builtin.lua",
    ["sandbox.tools.schema"] = "lua/sandbox/tools/schema.lua",
    ["sandbox.tools.text"] = "lua/sandbox/tools/text.lua",
    ["sandbox.core"] = {
      sources = {
        "csrc/confine.c",
        "csrc/confine_landlock.c",
        "csrc/confine_netns.c",
        "csrc/core.c",
        "csrc/exec_cgroup.c",
        "csrc/exec_outbuf.c",
        "csrc/exec_proc.c",
        "csrc/exec_spawn.c",
        "csrc/fs_tree.c",
        "csrc/net_agent.c",
        "csrc/net_gate.c",
        "csrc/net_hosts.c",
        "csrc/net_http.c",
        "csrc/net_proxy.c",
        "csrc/net_relay.c",
        "csrc/net_service.c",
        "csrc/resolve.c",
        "csrc/rootfs.c",
        "csrc/sb_caps.c",
        "csrc/sb_dirlist.c",
        "csrc/sb_err.c",
        "csrc/sb_glob.c",
        "csrc/sb_lua.c",
        "csrc/sb_lua_confine.c",
        "csrc/sb_lua_exec.c",
        "csrc/sb_lua_net.c",
        "csrc/sb_lua_search.c",
        "csrc/sb_mem.c",
        "csrc/sb_path.c",
        "csrc/sb_policy.c",
        "csrc/vfs.c",
      },
      defines = { "_GNU_SOURCE" },
      libraries = { "uv", "curl", "pthread" },
      incdirs = { "csrc", "$(LIBUV_INCDIR)", "$(UTHASH_INCDIR)", "$(CURL_INCDIR)" },
      libdirs = { "$(LIBUV_LIBDIR)", "$(CURL_LIBDIR)" },
    },
  },
}
