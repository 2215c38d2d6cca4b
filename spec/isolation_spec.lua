-- Commands isolated like a container, whether the host runs as root or not
-- (SPEC §6). One test per attack class found against the earlier
-- confinement; each asserts what did not happen on the host: its clock,
-- hostname, network, processes, SysV memory, sockets and files untouched,
-- nothing left behind. The same attacks run as root (the suite) and as an
-- unprivileged user (setpriv), each from a fresh sandbox.
local sandbox = require "sandbox"
local backends = require "support.backends"
local sh = require "support.sh"
local procs = require "support.procs"
local attacks = require "support.attacks"
local hostcan = require "support.host"

local caps = sandbox.capabilities()
local without_layers = require("support.host").without_layers("the attacks are refused by Linux's layers")
if without_layers then
  describe("isolation", function() pending(without_layers) end)
  return
end
if os.getenv("SANDBOX_TEST_UNCONFINED") then -- valgrind: see the Makefile
  describe("isolation", function() pending("not run here: commands are unconfined in this run (valgrind; make PORTABLE=1)") end)
  return
end

local function read(path) return sh.read_file(path) end
local function lines(s)
  local t = {}
  for l in s:gmatch("[^\n]+") do t[#t + 1] = l end
  return t
end

-- A root holding the attack program (and readable by nobody).
local function attack_root(owner)
  local dir = backends.tmpdir("attack")
  assert(sh.run(("cp %s/test/attack %s/attack && chmod 755 %s %s/attack"):format(sh.build, dir, dir, dir)))
  if owner then assert(sh.run(("chown -R %s %s"):format(owner, dir))) end
  return dir
end

-- The host's side: a busy and a sleeping process, a SysV segment with a
-- secret, a unix socket server outside every root.
local host = {}
local function host_setup()
  host.marker = procs.marker()
  host.pid = sh.lines(("sleep %s >/dev/null 2>&1 & echo $!"):format(host.marker))[1]
  host.limits = read("/proc/" .. host.pid .. "/limits")
  host.nice = sh.lines("ps -o ni= -p " .. host.pid)[1]
  host.shm = sh.lines(sh.build .. "/test/attack shm-create HOST-SHM-SECRET")[1]
  host.sockdir = backends.tmpdir("hostsock")
  host.sock = host.sockdir .. "/daemon.sock"
  sh.run(("chmod 777 %s"):format(host.sockdir))
  host.listener = sh.popen(("%s/test/attack unix-listen %s 60"):format(sh.build, host.sock))
  assert(host.listener:read("*l") == "listening")
  sh.run("chmod 777 " .. host.sock)
  host.hostname = sh.lines("hostname")[1]
  host.ns = {}
  for _, n in ipairs { "pid", "ipc", "uts", "mnt", "net", "cgroup" } do
    host.ns[n] = sh.lines("readlink /proc/self/ns/" .. n)[1]
  end
  host.links = sh.lines("ls /sys/class/net | wc -l")[1]
end

local function host_teardown()
  sh.run("kill " .. host.pid .. " 2>/dev/null; ipcrm -m " .. host.shm)
  sh.run("pkill -f 'attack unix-listen " .. host.sock .. "'")
  host.listener:close()
end

local function run_as_root()
  return attacks.run(attack_root(), host)
end

-- The attacks in a process of their own: `prefix` runs it (a user, an
-- environment).
local function run_apart(dir, prefix)
  local ok, out = sh.run(("cd %s && %s env SANDBOX_BUILD=%s %s spec/support/attacks_as_user.lua %s %s %s %s"):format(
    sh.quote(os.getenv("PWD") or "."), prefix, sh.build, sh.lua(), dir, host.pid, host.shm, host.sock))
  assert(ok, out)
  local res = {}
  for _, l in ipairs(lines(out)) do
    local k, v = l:match("^([%w_]+)\t(.*)$")
    if k then res[k] = v:gsub("\\n", "\n") end
  end
  return res
end

local function run_as_nobody()
  return run_apart(attack_root("65534:65534"), "setpriv --reuid=65534 --regid=65534 --clear-groups")
end

-- As root the network namespace is made beside the init while it builds
-- the view; where that cannot be (SANDBOX_NETNS_IN_INIT plays it), the
-- init makes it after the view: the same isolation either way.
local function run_as_root_net_in_init()
  return run_apart(attack_root(), "SANDBOX_NETNS_IN_INIT=1")
end

local modes = { { "as root", run_as_root, caps.root },
                { "as root, the init making the network namespace", run_as_root_net_in_init, caps.root } }
if hostcan.can("the attacks as an unprivileged user", hostcan.unprivileged()) then
  modes[#modes + 1] = { "as an unprivileged user", run_as_nobody, true, user = "65534" }
end

for _, mode in ipairs(modes) do
  describe("isolation " .. mode[1] .. ":", function()
    local res
    setup(function()
      host_setup()
      res = mode[2]()
    end)
    teardown(host_teardown)

    it("holds no capability", function()
      assert.equal("0000000000000000", res.caps)
    end)

    it("lives in its own PID, IPC, UTS, mount, network and cgroup namespaces", function()
      local seen = lines(res.ns)
      assert.equal(6, #seen, res.ns)
      for i, n in ipairs { "pid", "ipc", "uts", "mnt", "net", "cgroup" } do
        assert.are_not.equal(host.ns[n], seen[i], n)
      end
    end)

    it("cannot set the host's clock, create BPF maps, or move its loopback into the host's network", function()
      assert.matches("^refused", res.settime)
      assert.matches("^refused", res.bpf)
      assert.matches("^refused", res.netns)
      assert.equal(host.links, sh.lines("ls /sys/class/net | wc -l")[1])
      assert.is_true(math.abs(os.time() - tonumber(sh.lines("date +%s")[1])) < 5)
    end)

    it("cannot re-limit, renice, pin or CPU-kill a host process", function()
      for _, k in ipairs { "prlimit", "cpu", "renice", "affinity" } do assert.matches("^refused", res[k], k) end
      assert.equal(host.limits, read("/proc/" .. host.pid .. "/limits"))
      assert.equal(host.nice, sh.lines("ps -o ni= -p " .. host.pid)[1])
      assert.equal(1, #procs.find(host.marker), "the host process died")
    end)

    it("cannot read a host SysV shared-memory segment", function()
      assert.matches("^refused", res.shm)
      assert.is_nil(res.shm:find("HOST-SHM-SECRET", 1, true))
    end)

    it("cannot reach a host unix socket file outside the root", function()
      assert.matches("^refused", res.unix)
    end)

    it("does not see /etc/ssl/private, shadow files, sudoers, ssh keys, or /sys", function()
      for _, p in ipairs { "/etc/ssl/private", "/etc/shadow", "/etc/sudoers", "/etc/ssh", "/sys" } do
        assert.matches("cannot access '" .. p:gsub("%p", "%%%0") .. "': No such file or directory", res.secrets)
      end
    end)

    it("cannot plant set-user-ID, set-group-ID or capability files", function()
      for _, l in ipairs(lines(res.setuid)) do assert.matches("refused", l) end
      assert.matches("^refused", res.setcap)
      -- the files in the root carry no set-id bit and no file capability
      -- (other runs share the directory: one of theirs may go while find
      -- walks, which find reports; what counts is the files it prints)
      local out = sh.lines("find " .. backends.tmpdir("x"):gsub("[^/]+$", "") .. " -maxdepth 2 -name 'plant*' -perm /6000 2>/dev/null; true")
      assert.same({}, out)
      local _, caps_out = sh.run("getcap -r " .. backends.tmpdir("y"):gsub("[^/]+$", "") .. " 2>/dev/null | grep plant || true")
      assert.equal("", caps_out)
    end)

    it("cannot make files immutable, in the root or its TMPDIR", function()
      assert.matches("^refused", res.chattr)
      assert.matches("^refused", res.chattr_tmp)
    end)

    it("meets the seccomp baseline, other ABIs included", function()
      for _, l in ipairs(lines(res.syscalls)) do assert.matches("refused", l) end
      assert.is_true(#lines(res.syscalls) >= 13)
      -- other ABIs: refused where the host itself offers them
      hostcan.expect_refused("x32", res.x32)
      hostcan.expect_refused("i386", res.i386)
    end)

    it("creates files in the root that belong to the host's user", function()
      local uid, gid = sh.lines("id -u")[1], sh.lines("id -g")[1]
      if mode.user then uid, gid = mode.user, mode.user end
      assert.equal(uid .. "\n" .. gid, res.inside_ids)
      assert.equal(uid .. " " .. gid, res.host_owner)
    end)

    it("cannot change the host's name", function()
      assert.matches("^refused", res.hostname)
      assert.equal(host.hostname, sh.lines("hostname")[1])
    end)
  end)
end

describe("isolation: the seccomp filter", function()
  it("answers as the contract for every system call number of every ABI, on each rule's edges", function()
    -- an interpreter runs the built program off the kernel (spec/c/seccomp_eval.c)
    local ok, out = sh.run(sh.build .. "/test/seccomp_eval")
    assert(ok, out)
    local n, m, checks = out:match("^ok (%d+) (%d+) (%d+)")
    assert.is_truthy(n, out)
    assert.is_true(tonumber(checks) > 400000, out)
    -- short enough that installing it costs each command little
    assert.is_true(tonumber(n) < 200 and tonumber(m) < 200, out)
  end)
end)

describe("isolation, the sandbox's end", function()
  local function new(opts)
    opts = opts or {}
    opts.base_dir = backends.tmpdir("iso")
    opts.kill_grace = 0.2
    return assert(sandbox.container(opts))
  end

  it("leaves no process, namespace or temporary directory behind", function()
    -- the weaker level makes a private TMPDIR on the host: gone with it
    -- (asked by its own path: other runs may make theirs meanwhile)
    local weak = new { confine = { namespaces = false } }
    local tmp = weak.confinement.tmpdir.path
    assert.matches("^/.*/sandbox%-tmp%-", tmp)
    assert.is_true(sh.run("test -d " .. sh.quote(tmp)))
    weak:dispose()
    assert.is_false(sh.run("test -e " .. sh.quote(tmp)), "the private TMPDIR was left")
    local sb = new()
    local m = procs.marker()
    local init = sb.confinement.namespaces.init
    assert.is_true(init > 1)
    assert(sb:exec("sh", { "-c", "sleep " .. m .. " & sleep " .. m .. " &" }))
    assert(sb:exec("sleep", { m }, { background = true }))
    sb:dispose()
    assert.same({}, procs.find(m))
    assert.is_false(sh.run("kill -0 " .. init .. " 2>/dev/null"), "the init survived")
  end)

  it("reaps orphans at once: a killed command's children leave no zombie counted against pids_limit", function()
    local sb = new { pids_limit = 40 }
    if not hostcan.can("orphans reaped before pids_limit counts them", sb.confinement.pids_limit.enforced,
                       "no pids controller is delegated here") then sb:dispose() return end
    assert(sb:write_file("spawn.sh", "for i in $(seq 30); do (sleep 100 &); done; sleep 100\n"))
    local r = assert(sb:exec("sh", { "spawn.sh" }, { timeout = 0.5 }))
    assert.is_true(r.timed_out)
    assert(sh.run(("cp %s/test/probe %s/probe"):format(sh.build, sb.cwd)))
    r = assert(sb:exec("./probe", { "forks", "30" }))
    assert.matches("30", r.stdout)
    -- probe's own children, killed with it, are orphans of the init now: it
    -- reaps them when it next runs, which a loaded host may delay past the
    -- next command (30 zombies seen once in CI); an init that did not reap
    -- would leave them for the sandbox's life
    local zombies
    for _ = 1, 40 do
      local z = assert(sb:exec("sh", { "-c", "ps -eo stat= | grep -c Z || true" }))
      zombies = z.stdout:gsub("%s", "")
      if zombies == "0" then break end
      assert(sb:exec("sleep", { "0.05" }))
    end
    assert.equal("0", zombies)
    sb:dispose()
  end)
end)

describe("isolation fails closed", function()
  local function script(user, filter, opts)
    local dir = backends.tmpdir("closed")
    sh.run("chmod 777 " .. dir)
    local lua = ([[%s/test/no_ns %s %s -e '
      package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
      package.cpath = "%s/?.so;" .. package.cpath
      local s = require "sandbox"
      local c = s.capabilities()
      print(c.namespaces, c.userns)
      local sb = assert(s.container { base_dir = "%s", confine = %s })
      local r, msg, code = sb:exec("true")
      print(code or r.exit_code)
      print(msg or "")
      print(sb.confinement.namespaces.enforced, sb.confinement.capabilities and sb.confinement.capabilities.enforced,
            sb.confinement.seccomp and sb.confinement.seccomp.enforced)']]):format(sh.build, filter, sh.lua(),
      sh.build, dir, opts)
    if user then lua = "setpriv --reuid=65534 --regid=65534 --clear-groups " .. lua end
    local ok, out = sh.run(("cd %s && %s"):format(sh.quote(os.getenv("PWD") or "."), lua))
    assert(ok, out)
    return lines(out)
  end

  it("where user namespaces are refused (an unprivileged host under Docker's seccomp profile)", function()
    if not hostcan.can("an unprivileged host where user namespaces are refused", hostcan.root()) or
       not hostcan.can("an unprivileged host where user namespaces are refused", hostcan.checkout_readable()) then
      return
    end
    local out = script(true, "user", "true")
    assert.equal("false\tfalse", table.remove(out, 1), "sandbox.capabilities() says so")
    assert.equal("ENOTSUP", out[1])
    assert.matches("namespaces: user namespaces are refused here", out[2])
    assert.matches("confine = {namespaces = false}", out[2])
    assert.equal("false\tnil\tnil", out[3])
    -- the weaker level without a network namespace cannot cut the network off: refused too
    out = script(true, "user", "{ namespaces = false }")
    table.remove(out, 1)
    assert.equal("ENOTSUP", out[1])
    assert.matches("cannot create a network namespace", out[2])
    assert.matches("allow_outbound = true", out[2])
    -- the weaker level, chosen explicitly with the host's network: runs, with
    -- capabilities dropped and seccomp
    out = script(true, "user", "{ namespaces = false }, allow_outbound = true")
    table.remove(out, 1)
    assert.same({ "0", "false\ttrue\ttrue" }, out) -- (no message line)
  end)

  it("where no namespace can be made at all", function()
    local out = script(false, "all", "true")
    assert.equal("false\tfalse", table.remove(out, 1), "sandbox.capabilities() says so")
    assert.equal("ENOTSUP", out[1])
    assert.matches("namespaces: cannot create the sandbox's namespaces", out[2])
    assert.matches("confine = {namespaces = false}", out[2])
  end)

  -- the init is a program run from a memfd: where such an exec is refused,
  -- no init, no namespaces, and the command is refused with the reason
  it("where a program cannot be run from a memfd (the sysctl vm.memfd_noexec = 2)", function()
    local out = script(false, "execveat", "true")
    assert.equal("true", table.remove(out, 1):match("^%a+"), "namespaces can be made here")
    assert.equal("ENOTSUP", out[1])
    assert.matches("namespaces: cannot start the sandbox's init %(Permission denied%)", out[2])
    assert.matches("vm.memfd_noexec", out[2])
    assert.matches("confine = {namespaces = false}", out[2])
    assert.equal("false", out[3]:match("^%a+"))
  end)
end)
