-- The backends a shared behaviour spec runs against. Each entry makes a
-- fresh sandbox from (opts, files); `files` is an initial tree
-- {["a/b.txt"] = "content", ["dir/"] = true}. Container roots are fresh
-- directories on tmpfs (real-file tests belong there), removed on dispose.
local sandbox = require "sandbox"
local sh = require "support.sh"

local M = {}

--- A fresh empty directory for a test (mode 0700, as mktemp makes it);
--- removed by M.cleanup(). Made in batches: a spawn per directory cost
--- more than most tests (a child of an ASan run loads ASan's runtime too).
local made, ready = {}, {}
local BATCH = 64
-- /dev/shm (a tmpfs: real-file tests belong there), or where a host has
-- none writable, TMPDIR or /tmp (said once in the run's notes)
local default_base
local function tmp_base()
  if not default_base then
    if sh.run("test -d /dev/shm -a -w /dev/shm") then
      default_base = "/dev/shm"
    else
      default_base = os.getenv("TMPDIR") or "/tmp"
      require("support.host").note("test directories on a tmpfs", "/dev/shm is not a writable directory here: " .. default_base .. " is used")
    end
  end
  return default_base
end
function M.tmpdir(tag)
  local base = os.getenv("SANDBOX_TEST_TMP") or tmp_base()
  local pool = ready[base]
  if not pool or #pool == 0 then
    pool = sh.lines(("for i in $(seq %d); do mktemp -d %s/sbtest-XXXXXX; done"):format(BATCH, base))
    assert(#pool == BATCH, "mktemp failed in " .. base)
    ready[base] = pool
  end
  local dir = table.remove(pool)
  made[#made + 1] = dir
  -- the tag names it, for whoever reads a failure (same directory, one rename)
  local named = dir:gsub("sbtest%-", "sbtest-" .. (tag or "x"):gsub("[^%w_-]", "_") .. "-")
  if os.rename(dir, named) then
    made[#made] = named
    dir = named
  end
  return dir
end

-- Every directory made since the last cleanup, in as few spawns as the
-- command line allows.
function M.cleanup()
  for base, pool in pairs(ready) do
    for _, d in ipairs(pool) do made[#made + 1] = d end
    ready[base] = nil
  end
  local i = #made
  while i > 0 do
    local args, len = {}, 0
    while i > 0 and len < 60000 do
      args[#args + 1] = sh.quote(made[i])
      len = len + #args[#args] + 1
      made[i] = nil
      i = i - 1
    end
    sh.run("rm -rf " .. table.concat(args, " "))
  end
end

--- Populate a directory through an unrestricted sandbox (as a host would;
--- no commands, so no confinement is set up for it).
function M.populate(dir, files)
  if not files then return end
  local sb = assert(sandbox.container { base_dir = dir, exec = false })
  local paths = {}
  for p in pairs(files) do paths[#paths + 1] = p end
  table.sort(paths)
  for _, p in ipairs(paths) do
    local v = files[p]
    if v == true then assert(sb:mkdir(p)) else assert(sb:write_file(p, v)) end
  end
  sb:dispose()
end

local function container(resolver)
  return function(opts, files)
    opts = opts or {}
    local dir = M.tmpdir(resolver)
    M.populate(dir, files)
    opts.base_dir = dir
    opts.resolver = resolver
    return assert(sandbox.container(opts))
  end
end

M.list = {
  {
    name = "virtual",
    kind = "virtual",
    new = function(opts, files)
      opts = opts or {}
      opts.files = files
      return sandbox.virtual(opts)
    end,
  },
  { name = "container (fallback)", kind = "container", resolver = "fallback", new = container("fallback") },
}

-- openat2 where this kernel (or tool: valgrind 3.19 lacks it) has it.
if sandbox.capabilities().openat2 then
  table.insert(M.list, 2, { name = "container (openat2)", kind = "container", resolver = "openat2",
                            new = container("openat2") })
else
  io.stderr:write("note: openat2 unavailable here; container specs run the fallback resolver only\n")
end

-- The OverlaySandbox over a base holding the initial tree (the merged view
-- must behave as one tree). It needs the sandbox's own mount namespace:
-- not under valgrind, whose run has no confinement (see the Makefile).
if not os.getenv("SANDBOX_TEST_UNCONFINED") then
  M.list[#M.list + 1] = {
    name = "overlay", kind = "overlay",
    new = function(opts, files)
      opts = opts or {}
      local dir = M.tmpdir("overlay")
      M.populate(dir, files)
      opts.base_dir = dir
      return assert(sandbox.overlay(opts))
    end,
  }
end

-- The overlay with its file operations in userspace: what runs where the
-- kernel cannot mount overlayfs (forced here by confine = {namespaces =
-- false}); no commands. It needs no namespace, so valgrind runs it too.
M.list[#M.list + 1] = {
  name = "overlay (userspace)", kind = "overlay", commands = false,
  new = function(opts, files)
    opts = opts or {}
    local dir = M.tmpdir("overlay-userspace")
    M.populate(dir, files)
    opts.base_dir = dir
    if opts.confine == nil then opts.confine = { namespaces = false } end
    local sb = assert(sandbox.overlay(opts))
    assert(sb.overlay_view == "userspace", "the userspace overlay was not chosen")
    return sb
  end,
}

-- The RemoteSandbox over the E2B test peer (spec/js/e2b/peer.mjs: E2B's
-- control plane and envd over a temporary directory; one peer per run,
-- started with the first remote sandbox). The initial tree is written
-- through the sandbox itself, as a host would. Commands run in the peer as
-- real processes.
local peer
local PEER_KEY = "spec-remote-key-0123456789"
-- SANDBOX_TEST_NO_REMOTE=1 leaves it out (CI's runs under the other Lua
-- versions and valgrind, to stay within CI's time: the 5.4 and sanitizer
-- runs have it, and spec/remote_spec.lua runs everywhere)
--
-- SANDBOX_TEST_REAL_ENGINE=1 with E2B_API_KEY: the same cases on a real
-- engine (E2B_API_URL, E2B_ENVD_URL where its routing differs), one sandbox
-- for the run and a fresh root directory in it for each case (a sandbox a
-- case would cost a real engine too much); it ends with its TTL (600 s).
local real = os.getenv("SANDBOX_TEST_REAL_ENGINE") == "1" and os.getenv("E2B_API_KEY")
local shared, cases = nil, 0
local function engine()
  if real then return { api = os.getenv("E2B_API_URL"), envd = os.getenv("E2B_ENVD_URL"), key = real } end
  -- SANDBOX_TEST_ENVD_VERSION: the envd the peer stands for (0.5.1, 0.5.6; default 0.6.13)
  if not peer then peer = require("support.e2b_peer").start(PEER_KEY, { envd_version = os.getenv("SANDBOX_TEST_ENVD_VERSION") }) end
  return { api = peer.api, envd = peer.envd, key = PEER_KEY }
end
if not os.getenv("SANDBOX_TEST_NO_REMOTE") then M.list[#M.list + 1] = {
  name = real and "remote (real engine)" or "remote", kind = "remote",
  new = function(opts, files)
    local g = engine()
    opts = opts or {}
    local where = { api_url = g.api, api_key = g.key, envd_url = g.envd, keep = true }
    if real then
      if not shared then
        shared = assert(sandbox.remote { api_url = g.api, api_key = g.key, envd_url = g.envd, keep = true, timeout = 600 })
      end
      cases = cases + 1
      local dir = ("case-%d-%d"):format(os.time(), cases)
      assert(shared:mkdir(dir))
      where.sandbox_id, where.root, opts.keep, opts.root = shared.sandbox_id, "/home/user/" .. dir, true, "/home/user/" .. dir
    end
    local filler = assert(sandbox.remote(where))
    local paths = {}
    for p in pairs(files or {}) do paths[#paths + 1] = p end
    table.sort(paths)
    for _, p in ipairs(paths) do
      local v = files[p]
      if v == true then assert(filler:mkdir(p)) else assert(filler:write_file(p, v)) end
    end
    filler:dispose() -- keep: the sandbox stays for the one below
    -- the sandbox with the spec's options, reattached to the one just filled
    opts.api_url, opts.api_key, opts.envd_url, opts.sandbox_id = g.api, g.key, g.envd, filler.sandbox_id
    return assert(sandbox.remote(opts))
  end,
} end

-- SANDBOX_TEST_ONLY_REMOTE=1: the remote entry alone (CI's run of the
-- backend-list suites on the peer at an older envd)
if os.getenv("SANDBOX_TEST_ONLY_REMOTE") then
  local only = {}
  for _, b in ipairs(M.list) do
    if b.kind == "remote" then only[#only + 1] = b end
  end
  M.list = only
end

--- Only the container entries.
--- new(opts): a sandbox of backend be over files, disposed after its test
--- (after_each: the spec's own).
function M.fresh(be, files, after_each)
  local live = {}
  after_each(function()
    for _, sb in ipairs(live) do sb:dispose() end
    live = {}
  end)
  return function(opts)
    local sb = be.new(opts or {}, files)
    live[#live + 1] = sb
    return sb
  end
end

function M.containers()
  local out = {}
  for _, b in ipairs(M.list) do
    if b.kind == "container" then out[#out + 1] = b end
  end
  return out
end

return M
