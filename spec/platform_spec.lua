-- What a build says about its platform, and what commands do in a build
-- without Linux's confinement layers (SPEC §19): macOS and the BSDs, and
-- `make PORTABLE=1` here, which builds their code paths on Linux so that this
-- spec and the rest of the suite run them. There `confine = true` (the
-- default) and keeping commands off the network fail closed, naming what is
-- missing and the opt-out; commands asked for unconfined and with the host's
-- network run, time out and are killed by process group.
local sandbox = require "sandbox"
local backends = require "support.backends"
local host = require "support.host"
local procs = require "support.procs"
local sh = require "support.sh"

local caps = sandbox.capabilities()
local layered = caps.confine_layers == "linux"

describe("sandbox.capabilities() for the platform", function()
  it("names the platform and the confinement layers this build has", function()
    assert.is_string(caps.platform)
    assert.is_true(caps.confine_layers == "linux" or caps.confine_layers == false)
    if caps.platform ~= "linux" then assert.is_false(caps.confine_layers) end
  end)

  it("reports no Linux layer in a build without them", function()
    if layered then
      assert.equal("linux", caps.platform)
      return
    end
    assert.same({ false, false, false, false, false, false, false },
      { caps.namespaces, caps.userns, caps.netns, caps.seccomp, caps.landlock_abi, caps.openat2, caps.pidfd })
    assert.same({ false, false, false, false }, { caps.policy.read_only, caps.policy.mode_w, caps.policy.rules, caps.policy.disk })
  end)
end)

describe("commands in a build without Linux's layers", function()
  if not host.can("commands without Linux's layers (make PORTABLE=1 runs them)", not layered,
    "this build has the Linux layers: spec/confine_spec.lua and the others check them") then
    it("are checked in make PORTABLE=1", function() end)
    return
  end

  local function box(opts)
    opts.base_dir = opts.base_dir or backends.tmpdir("platform")
    opts.kill_grace = 0.3
    return assert(sandbox.container(opts))
  end

  it("refuse confine = true (the default) with ENOTSUP naming what is missing and the opt-out; nothing runs", function()
    local dir = backends.tmpdir("platform")
    local sb = box { base_dir = dir, confine = true, allow_outbound = true }
    local r, msg, code = sb:exec("touch", { "ran" })
    assert.is_nil(r)
    assert.equal("ENOTSUP", code)
    assert.matches("confine = true needs Linux's namespaces, Landlock and seccomp", msg, 1, true)
    assert.matches("set confine = false", msg, 1, true)
    assert.is_false(sh.run("test -e " .. sh.quote(dir .. "/ran")))
    local c = sb.confinement
    assert.is_false(c.namespaces.enforced)
    assert.is_false(c.landlock.enforced)
    assert.matches("confine = true needs", c.landlock.why, 1, true)
    sb:dispose()
  end)

  it("refuse to keep commands off the network they cannot cut: allow_outbound = true is the opt-out", function()
    for _, opts in ipairs { { confine = false, allow_outbound = false }, { confine = false, allowed_hosts = { "example.org" } } } do
      local sb = box(opts)
      local r, msg, code = sb:exec("true")
      assert.is_nil(r)
      assert.equal("ENOTSUP", code)
      assert.matches("keeping them off the network needs Linux's network namespaces", msg, 1, true)
      assert.matches("set allow_outbound = true", msg, 1, true)
      assert.is_false(sb.confinement.network.enforced)
      sb:dispose()
    end
  end)

  it("refuse a read_only policy, which only confinement binds commands to", function()
    local sb = box { confine = false, allow_outbound = true, read_only = true }
    local r, msg, code = sb:exec("true")
    assert.is_nil(r)
    assert.equal("ENOTSUP", code)
    assert.matches("read_only", msg, 1, true)
    sb:dispose()
  end)

  it("run unconfined with the host's network: output, exit codes, stdin, limits as rlimits", function()
    local sb = box { confine = false, allow_outbound = true, memory_limit = "256MB", file_size_limit = 4096 }
    local r = assert(sb:exec("sh", { "-c", "echo out; echo err >&2; cat; exit 3" }, { stdin = "in\n" }))
    assert.same({ 3, "out\nin\n", "err\n" }, { r.exit_code, r.stdout, r.stderr })
    assert.equal("rlimit", sb.confinement.memory_limit.via)
    r = assert(sb:exec("sh", { "-c", "head -c 8192 /dev/zero > big; echo $?" }))
    assert.is_true(r.exit_code ~= 0 or r.stdout ~= "0\n") -- RLIMIT_FSIZE: SIGXFSZ or EFBIG
    assert.is_true(#assert(sb:read_file("big")) <= 4096)
    sb:dispose()
  end)

  it("time out and kill the command's process group, leaving no process", function()
    local sb = box { confine = false, allow_outbound = true }
    local m = procs.marker()
    local r = assert(sb:exec("sh", { "-c", "sleep " .. m .. " & sleep " .. m .. " & wait" }, { timeout = 0.3 }))
    assert.same({ true, "SIGTERM", 143 }, { r.timed_out, r.signal, r.exit_code })
    local deadline = require("sandbox.core").clock() + 5
    while #procs.find(m) > 0 and require("sandbox.core").clock() < deadline do sh.run("sleep 0.05") end
    assert.same({}, procs.find(m))
    sb:dispose()
  end)

  it("keep background handles: read, wait, kill, and the dispose that ends them", function()
    local sb = box { confine = false, allow_outbound = true }
    local h = assert(sb:exec("sh", { "-c", "echo up; exec sleep 30" }, { background = true }))
    local deadline = require("sandbox.core").clock() + 5
    local got = ""
    while not got:find("up\n", 1, true) and require("sandbox.core").clock() < deadline do
      got = got .. (h:read("stdout", 0.1) or "")
    end
    assert.equal("up\n", got)
    assert.is_true(h:kill())
    local res = assert(h:wait(5))
    assert.equal("SIGTERM", res.signal)
    local h2 = assert(sb:exec("sleep", { "30" }, { background = true }))
    local pid = h2.pid
    sb:dispose()
    assert.is_false(sh.run("kill -0 " .. pid .. " 2>/dev/null"))
  end)
end)
