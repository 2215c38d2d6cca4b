-- The document helpers (csrc/doc/, built next to sandbox/core.so:
-- sandbox-docparse for Office files, sandbox-docrender for PDF and
-- images): documents are parsed there, never in the host's process. Each
-- call starts one in its own confined ContainerSandbox over the helpers'
-- directory, read-only: every confinement layer, no network, a memory,
-- process and CPU limit, a wall-clock timeout; the file's bytes go in on
-- stdin (bytes a backend read, never a path). A crash, a zip bomb or an
-- endless PDF is an error result here. Where the confinement cannot be set
-- up the call fails closed with its reason.
local json = require "sandbox.json"
local forked = require "sandbox.forked"

local M = {}

local fmt = string.format
local unpack = table.unpack or unpack -- luacheck: ignore 143

local function pack(...) return { n = select("#", ...), ... } end

-- What one parse may cost (the helper also sets the memory and CPU caps on
-- itself before it reads a byte).
M.LIMITS = { memory = 512 * 1024 * 1024, cpu_seconds = 20, timeout = 30, max_output = 64 * 1024 * 1024,
             max_inflated = 256 * 1024 * 1024 }

local CODES = { [2] = "EINVAL", [3] = "EFBIG", [4] = "ENOMEM", [5] = "EIO" }

-- The kinds sandbox-docrender reads; the others are sandbox-docparse's.
local RENDER = { pdf = true, ["pdf-page"] = true, image = true }

local NOT_BUILT = "the document helpers (sandbox-docparse, sandbox-docrender) are not built next to " ..
  "sandbox/core.so: run make (they need libzip-dev, libexpat1-dev, libpoppler-glib-dev and " ..
  "libgdk-pixbuf-2.0-dev), or set SANDBOX_DOC_HELPERS to the directory holding them"

local function exists(path)
  local f = io.open(path, "rb")
  if f then f:close() end
  return f ~= nil
end

--- The path of the helper for kind ("docx", "pdf", ...): M.helper (one
--- program for every kind, set by a host or a test), else the one in
--- $SANDBOX_DOC_HELPERS, else the one next to the loaded sandbox/core.so;
--- nil, why when there is none.
function M.path(kind)
  local name = RENDER[kind] and "sandbox-docrender" or "sandbox-docparse"
  if M.helper then
    if not exists(M.helper) then return nil, NOT_BUILT .. " (" .. M.helper .. " is not there)" end
    return M.helper
  end
  local dir = os.getenv("SANDBOX_DOC_HELPERS")
  if dir and dir ~= "" then
    if not exists(dir .. "/" .. name) then return nil, NOT_BUILT .. " (" .. dir .. "/" .. name .. " is not there)" end
    return dir .. "/" .. name
  end
  -- package.cpath's templates in order, as require found the core (Lua 5.1
  -- has no package.searchpath)
  for template in package.cpath:gmatch("[^;]+") do
    local core = template:gsub("%?", "sandbox/core")
    if exists(core) then
      local helper = core:gsub("core%.[^/]*$", name)
      if exists(helper) then return helper end
      break -- the helpers go with the core that was found: no other build's
    end
  end
  return nil, NOT_BUILT
end

-- The helper's run in box: inside a tool call that a host's loop drives
-- (forked.run's work), it starts without waiting and the call yields
-- until it ends, the pump turns going on (SPEC §16: a hostile PDF's 30 s
-- must not freeze an editor); elsewhere it blocks. The box is disposed.
function M.exec(box, cmd, argv, bytes)
  local got
  local h, msg, code = box:exec(cmd, argv, { stdin = bytes, wait = false, on_exit = function(...) got = pack(...) end })
  if not h then
    box:dispose()
    return nil, msg, code
  end
  local job = {
    result = function()
      if not got then box:poll() end
      if not got then return false end
      return true, true, unpack(got, 1, got.n)
    end,
    cancel = function() box:dispose() end,
  }
  local waited, ok, r, m, c = forked.wait(job)
  if not waited then -- not in a driven call: wait here
    while not got do box:poll(0.05) end
    ok, r, m, c = true, got[1], got[2], got[3]
  end
  box:dispose()
  if not ok then return nil, tostring(r), "EIO" end
  return r, m, c
end

--- run(args, bytes, what): the helper's stdout for bytes (args: its KIND
--- and arguments), or nil, msg, code. what names the file in messages.
function M.run(args, bytes, what)
  local helper, why = M.path(args[1])
  if not helper then return nil, "ENOTSUP: " .. why, "ENOTSUP" end
  local dir, name = helper:match("^(.*)/([^/]+)$")
  if not dir then dir, name = ".", helper end
  local L = M.LIMITS
  local box, err, code = require("sandbox").container {
    base_dir = dir, mode = "r", memory_limit = L.memory, pids_limit = 4, cpu_limit = 1,
    allow_outbound = false, max_output_bytes = L.max_output + 1, exec_timeout = L.timeout,
  }
  if not box then
    return nil, fmt("%s: %s cannot be read: the document helper's confinement could not be set up (%s)",
      code or "EIO", what, err), code or "EIO"
  end
  local argv = { fmt("--memory=%d", L.memory), fmt("--cpu=%d", L.cpu_seconds), fmt("--max-output=%d", L.max_output),
                 fmt("--max-inflated=%d", L.max_inflated) }
  for _, a in ipairs(args) do argv[#argv + 1] = a end
  local r, msg
  r, msg, code = M.exec(box, "./" .. name, argv, bytes)
  if not r then
    return nil, fmt("%s: %s cannot be read: the document helper could not be started confined (%s)", code or "EIO",
      what, msg), code or "EIO"
  end
  if r.timed_out then
    return nil, fmt("ETIMEDOUT: %s: parsing ran past %d s and was stopped", what, L.timeout), "ETIMEDOUT"
  end
  if r.exit_code ~= 0 then
    local c = CODES[r.exit_code]
    local said = r.stderr:match("^%u+: ([^\n]*)") or r.stderr:match("[^\n]+")
    if c then return nil, fmt("%s: %s: %s", c, what, said or "the helper failed"), c end
    -- killed (a signal, the memory cap) or crashed: what a hostile file may do
    return nil, fmt("EINVAL: %s: the document helper %s while parsing it (the file is malformed or exceeds the " ..
      "parser's limits: %d MiB of memory, %d s of CPU)", what,
      r.signal and fmt("was killed by %s", tostring(r.signal)) or fmt("exited %d", r.exit_code),
      math.floor(L.memory / 1048576), L.cpu_seconds), "EINVAL"
  end
  if r.truncated or #r.stdout > L.max_output then
    return nil, fmt("EFBIG: %s: what it holds is over %d bytes", what, L.max_output), "EFBIG"
  end
  return r.stdout
end

--- json(args, bytes, what): the helper's JSON result as a table.
function M.json(args, bytes, what)
  local out, msg, code = M.run(args, bytes, what)
  if not out then return nil, msg, code end
  local t = json.decode(out)
  if type(t) ~= "table" then return nil, fmt("EIO: %s: the document helper's answer is not JSON", what), "EIO" end
  return t
end

return M
