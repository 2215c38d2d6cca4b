-- Confinement of commands (SPEC §6): what a command must not be able to do,
-- each test asserting the attempt failed AND left nothing behind; what must
-- still work; and the fail-closed paths.
local sandbox = require "sandbox"
local backends = require "support.backends"
local sh = require "support.sh"
local hostcan = require "support.host"
local procs = require "support.procs"

local function new(opts)
  opts = opts or {}
  opts.base_dir = opts.base_dir or backends.tmpdir("conf")
  opts.kill_grace = opts.kill_grace or 0.3
  return assert(sandbox.container(opts))
end

local function with_probe(sb)
  assert(sh.run(("cp %s/test/probe %s/probe"):format(sh.build, sb.cwd)))
  return sb.cwd .. "/probe"
end

local read = sh.read_file

-- Whether process pid's readable memory holds the string secret (regions
-- up to 64 MiB), and how many bytes could be read.
local function memory_holds(pid, secret)
  local mem, found, scanned = io.open("/proc/" .. pid .. "/mem", "rb"), false, 0
  if not mem then return false, 0 end
  for line in io.lines("/proc/" .. pid .. "/maps") do
    local from, to, perm = line:match("^(%x+)%-(%x+) (%S+)")
    from, to = tonumber(from, 16), tonumber(to, 16)
    if perm:sub(1, 1) == "r" and to - from <= 64 * 1024 * 1024 and mem:seek("set", from) then
      local bytes = mem:read(to - from)
      if bytes then
        scanned = scanned + #bytes
        found = found or bytes:find(secret, 1, true) ~= nil
      end
    end
  end
  mem:close()
  return found, scanned
end

local caps = sandbox.capabilities()

local without_layers = require("support.host").without_layers("the confinement of commands is Linux's namespaces, Landlock, seccomp and cgroups")
if without_layers then
  describe("confinement", function() pending(without_layers) end)
  return
end
if os.getenv("SANDBOX_TEST_UNCONFINED") then
  describe("confinement", function()
    pending("not run here: valgrind 3.19 does not know the Landlock system calls (see the Makefile)")
  end)
  return
end

describe("confinement", function()
  local sb, outside
  before_each(function()
    outside = backends.tmpdir("outside")
    assert(sh.run(("printf OUTSIDE-SECRET > %s/secret"):format(outside)))
    sb = new()
  end)
  after_each(function() sb:dispose() end)

  it("is reported in sb.confinement as data, one field per layer", function()
    local c = sb.confinement
    assert.is_true(c.enabled)
    assert.is_nil(c.refused)
    assert.same({ enforced = true }, c.no_new_privs)
    -- Landlock's ABI is the kernel's: the report follows it (scoping of
    -- signals and abstract sockets came with ABI 6)
    assert.equal(caps.landlock_abi and true or false, c.landlock.enforced)
    if caps.landlock_abi then
      assert.equal(caps.landlock_abi, c.landlock.abi)
      assert.equal(caps.landlock_abi >= 6, c.landlock.scoped)
    end
    for _, k in ipairs { "capabilities", "namespaces", "mount_view", "seccomp", "setid_files" } do
      assert.is_true(c[k].enforced, k)
    end
    assert.equal(not caps.root, c.namespaces.user)
    assert.equal(sb.cwd, c.mount_view.root)
    assert.is_true(c.network.enforced)
    assert.equal("none", c.network.mode)
    assert.is_true(c.tree_kill.enforced)
    assert.is_string(c.tree_kill.via)
    assert.equal("/tmp", c.tmpdir.path) -- the view's private /tmp
    for _, k in ipairs { "memory_limit", "pids_limit", "cpu_limit", "file_size_limit", "user" } do
      assert.same(false, c[k].enforced, k)
      assert.is_string(c[k].why, k)
    end
  end)

  describe("file system", function()
    it("cannot read /etc/shadow, even as root: it is not in the view", function()
      local r = assert(sb:exec("cat", { "/etc/shadow" }))
      assert.is_true(r.exit_code ~= 0)
      assert.equal("", r.stdout)
      assert.matches("No such file", r.stderr)
    end)

    it("cannot read a file outside the root", function()
      local r = assert(sb:exec("cat", { outside .. "/secret" }))
      assert.is_true(r.exit_code ~= 0)
      assert.is_nil((r.stdout .. r.stderr):find("OUTSIDE-SECRET", 1, true))
    end)

    it("cannot create files outside the root: ../x, /tmp, an outside directory", function()
      -- ../x lands in the view's private tmpfs around the root, /tmp is private: the host sees neither
      assert(sb:exec("touch", { "../escape-" .. procs.marker() }))
      local tmpfile = "/tmp/sb-confine-" .. procs.marker()
      assert(sb:exec("sh", { "-c", "echo x > " .. tmpfile }))
      assert.is_nil(read(tmpfile))
      local r = assert(sb:exec("sh", { "-c", "echo x > " .. outside .. "/new" }))
      assert.is_true(r.exit_code ~= 0)
      local _, out = sh.run("ls " .. outside)
      assert.equal("secret\n", out)
      local _, parent = sh.run("ls " .. sb.cwd .. "/.. | grep escape- || true")
      assert.equal("", parent)
    end)

    it("cannot write through a symlink inside the root that points out", function()
      assert(sh.run(("ln -s %s/secret %s/link"):format(outside, sb.cwd)))
      local r = assert(sb:exec("sh", { "-c", "echo overwritten > link" }))
      assert.is_true(r.exit_code ~= 0)
      assert.equal("OUTSIDE-SECRET", read(outside .. "/secret"))
      r = assert(sb:exec("cat", { "link" }))
      assert.is_true(r.exit_code ~= 0)
    end)

    it("sees only its own /proc: not the init's environment, not the host's", function()
      local host = sh.pid()
      local r = assert(sb:exec("sh", { "-c", "cat /proc/1/environ /proc/1/cmdline; echo; cat /proc/" .. host .. "/environ; ls /proc" }))
      assert.is_nil((r.stdout .. r.stderr):find("PATH=", 1, true))
      assert.matches("sandbox%-init", r.stdout) -- pid 1, the sandbox's init, without the host's command line
      assert.is_nil(r.stdout:find("busted", 1, true))
    end)

    -- A fork of the host (as the init once was) keeps a copy of every page
    -- the host had, its secrets with them, for the sandbox's life.
    it("its init is a program of its own: no byte, mapping or page of the host's", function()
      local secret = "init-must-not-hold-" .. procs.marker() -- a string of the host's heap
      local box = new()
      local pid = box.confinement.namespaces.init
      assert.equal("/memfd:sandbox-init (deleted)", sh.lines(("readlink /proc/%d/exe"):format(pid))[1])
      local maps = assert(read(("/proc/%d/maps"):format(pid)))
      assert.is_nil(maps:find("lua", 1, true), maps) -- not the interpreter, not its libraries
      assert.is_nil(maps:find("core.so", 1, true), maps)
      local found, scanned = memory_holds(pid, secret)
      box:dispose()
      if scanned == 0 then return hostcan.note("the init's memory", "this host lets no process read another's") end
      assert.is_false(found, "the host's secret is in the init's memory")
      assert.is_truthy(secret) -- held until here
    end)

    it("cannot create device nodes in the root", function()
      local r = assert(sb:exec("mknod", { "dev0", "c", "1", "3" }))
      assert.is_true(r.exit_code ~= 0)
      assert.is_false(sb:exists("dev0"))
    end)
  end)

  describe("what still works", function()
    it("sh, coreutils and pipes", function()
      local r = assert(sb:exec("sh", { "-c", "mkdir -p a/b && echo hi > a/b/f && cat a/b/f | tr a-z A-Z && ls a/b && mv a/b/f a/g && wc -c < a/g" }))
      assert.equal(0, r.exit_code, r.stderr)
      assert.equal("HI\nf\n3\n", r.stdout)
      assert.equal("hi\n", sb:read_file("a/g"))
    end)

    it("python3 from /usr/bin, with a subprocess", function()
      if not hostcan.can("python3 in a confined command", hostcan.program("/usr/bin/python3")) then return end
      local r = assert(sb:exec("/usr/bin/python3", { "-c",
        "import json, subprocess, tempfile; t = tempfile.mkstemp(); print(json.dumps(subprocess.run(['echo', 'sub'], capture_output=True, text=True).stdout.strip()))" }))
      assert.equal(0, r.exit_code, r.stderr)
      assert.equal('"sub"\n', r.stdout)
    end)

    it("a script inside the root, and a private TMPDIR", function()
      assert(sb:write_file("run.sh", "#!/bin/sh\necho \"script ran in $PWD\"\necho temp > \"$TMPDIR/t\" && cat \"$TMPDIR/t\"\n"))
      assert(sh.run("chmod +x " .. sb.cwd .. "/run.sh"))
      local r = assert(sb:exec("./run.sh"))
      assert.equal(0, r.exit_code, r.stderr)
      assert.equal("script ran in " .. sb.cwd .. "\ntemp\n", r.stdout)
    end)

    it("removes the private TMPDIR on dispose (without namespaces: a host directory)", function()
      local s2 = new { confine = { namespaces = false } }
      local dir = s2.confinement.tmpdir.path
      assert(s2:exec("sh", { "-c", "mkdir -p $TMPDIR/x && touch $TMPDIR/x/y" }))
      assert.is_true(sh.run("test -d " .. dir))
      s2:dispose()
      assert.is_false(sh.run("test -e " .. dir))
    end)
  end)

  describe("network", function()
    local function listener(kind)
      local dir = backends.tmpdir("net")
      local out = dir .. "/out"
      local pid = sh.lines(("%s/test/probe %s-listen %s/port 4 >%s 2>&1 & echo $!"):format(
        sh.build, kind, dir, out))[1]
      local port
      for _ = 1, 100 do
        port = read(dir .. "/port")
        if port and port:match("%d+\n") then break end
        sh.run("sleep 0.02")
      end
      return port:match("%d+"), out, pid
    end

    it("a TCP connection to a loopback server on the host fails", function()
      local port, out, pid = listener("tcp")
      local probe = with_probe(sb)
      local r = assert(sb:exec(probe, { "tcp-connect", port }))
      assert.is_true(r.exit_code ~= 0)
      assert.matches("tcp%-connect: ", r.stdout)
      assert.is_nil(r.stdout:find(": ok", 1, true))
      assert(sh.run("kill " .. pid .. " 2>/dev/null; true"))
      assert.equal("", read(out) or "")
    end)

    it("a UDP datagram to a loopback server on the host is not delivered", function()
      local port, out, pid = listener("udp")
      local probe = with_probe(sb)
      sb:exec(probe, { "udp-send", port })
      sh.run("sleep 0.3")
      assert(sh.run("kill " .. pid .. " 2>/dev/null; true"))
      assert.equal("", read(out) or "")
    end)

    it("commands of one sandbox reach each other over its own loopback, not the host's", function()
      local probe = with_probe(sb)
      local h = assert(sb:exec(probe, { "tcp-listen", "port", "3" }, { background = true }))
      local port
      for _ = 1, 100 do
        port = sb:read_file("port")
        if port and port:match("%d+\n") then break end
        sb:poll(0.02)
      end
      port = port:match("%d+")
      local r = assert(sb:exec(probe, { "tcp-connect", port }))
      assert.equal("tcp-connect: ok\n", r.stdout)
      local r2 = assert(h:wait(10))
      assert.matches("got 1", r2.stdout)
      -- the same port on the host is someone else's: a host server is not reached
      local hport, out, pid = listener("tcp")
      r = assert(sb:exec(probe, { "tcp-connect", hport }))
      assert.is_nil(r.stdout:find(": ok", 1, true))
      sh.run("kill " .. pid .. " 2>/dev/null; true")
      assert.equal("", read(out) or "")
    end)

    it("allow_outbound = true lets a command connect", function()
      local port, out, pid = listener("tcp")
      local s2 = new { allow_outbound = true }
      assert.same({ enforced = false, mode = "allowed", why = "allow_outbound = true: commands use the host's network" }, s2.confinement.network)
      local probe = with_probe(s2)
      local r = assert(s2:exec(probe, { "tcp-connect", port }))
      assert.equal("tcp-connect: ok\n", r.stdout)
      s2:dispose()
      sh.run("sleep 0.2; kill " .. pid .. " 2>/dev/null; true")
      assert.matches("got 1", read(out))
    end)
  end)

  describe("signals", function()
    it("cannot kill a host process by pid", function()
      local m = procs.marker()
      local pid = sh.lines(("sleep %s >/dev/null 2>&1 & echo $!"):format(m))[1]
      local probe = with_probe(sb)
      local r = assert(sb:exec(probe, { "kill", pid }))
      assert.is_true(r.exit_code ~= 0)
      assert.matches("No such process", r.stdout) -- its own PID namespace: the host's pids do not exist
      assert.equal(1, #procs.find(m), "the host process was killed")
      sh.run("kill " .. pid)
    end)
  end)

  describe("resource limits", function()
    it("pids_limit bounds a fork bomb", function()
      local s2 = new { pids_limit = 20 }
      local probe = with_probe(s2)
      local r = assert(s2:exec(probe, { "forks", "300" }, { timeout = 20 }))
      local n = tonumber(r.stdout:match("forked (%d+)"))
      assert.is_true(n ~= nil and n < 20, r.stdout .. r.stderr)
      if s2.confinement.pids_limit.via:match("cgroup") then assert.is_true(r.pids_limit_hit) end
      s2:dispose()
    end)

    it("memory_limit kills a memory hog and reports oom", function()
      local s2 = new { memory_limit = "64MB" }
      local probe = with_probe(s2)
      local r = assert(s2:exec(probe, { "hog", "400" }, { timeout = 30 }))
      assert.is_true(r.exit_code ~= 0)
      assert.is_nil(r.stdout:find("allocated", 1, true))
      if s2.confinement.memory_limit.via:match("cgroup") then
        assert.is_true(r.oom)
        assert.equal("SIGKILL", r.signal)
        assert.matches("memory_limit", r.hint)
      end
      assert.is_true(assert(s2:exec(probe, { "hog", "16" })).exit_code == 0) -- below the limit: fine
      s2:dispose()
    end)

    it("file_size_limit stops a large write with SIGXFSZ", function()
      local s2 = new { file_size_limit = "1MB" }
      local r = assert(s2:exec("dd", { "if=/dev/zero", "of=big", "bs=1M", "count=4" }))
      assert.equal("SIGXFSZ", r.signal)
      assert.equal(153, r.exit_code)
      assert.matches("file_size_limit", r.hint)
      assert.is_true(s2:stat("big").size <= 1048576)
      s2:dispose()
    end)

    it("cpu_limit throttles a busy loop", function()
      local s2 = new { cpu_limit = "20%" }
      assert.matches("cgroup", s2.confinement.cpu_limit.via)
      -- a busy loop for 1.5 s of wall time gets about 0.3 s of CPU at 20 %
      local r = assert(s2:exec("sh", { "-c", "end=$(( $(date +%s) + 2 )); while [ $(date +%s) -lt $end ]; do :; done; cat /proc/self/stat 2>/dev/null; echo done" }, { timeout = 10 }))
      assert.equal(0, r.exit_code)
      s2:dispose()
    end)

    it("limits that cannot be enforced make the sandbox fail to build", function()
      local script = ([[SANDBOX_NO_CGROUP=1 %s -e '
        package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
        package.cpath = "%s/?.so;" .. package.cpath
        local s = require "sandbox"
        print(select(3, s.container { base_dir = "%s", cpu_limit = 1 }))
        local ok = s.container { base_dir = "%s", memory_limit = "64MB" }
        print(ok.confinement.memory_limit.via)']]):format(sh.lua(), sh.build, sb.cwd, sb.cwd)
      local ok, out = sh.run(script)
      assert.is_true(ok, out)
      assert.equal("ENOTSUP\nrlimit\n", out)
    end)
  end)

  describe("privilege drop", function()
    it("runs commands as the configured user with no supplementary groups", function()
      if not hostcan.can("dropping commands to another user", hostcan.root()) then return end
      local s2 = new { user = { uid = 65534, gid = 65534 } }
      sh.run("chown 65534:65534 " .. s2.cwd)
      local r = assert(s2:exec("id"))
      assert.equal("uid=65534(nobody) gid=65534(nogroup) groups=65534(nogroup)\n", r.stdout)
      assert.same({ enforced = true, uid = 65534, gid = 65534 }, s2.confinement.user)
      assert.is_true(assert(s2:exec("touch", { "mine" })).exit_code == 0)
      s2:dispose()
    end)
  end)

  -- A sandbox's confined commands from the second on are forked by its
  -- zygote (exec/zygote.h), which took the layers once; the first is
  -- spawned directly. Both must give the command the same confinement.
  describe("the zygote", function()
    -- box's zygote: the host's child named so, in the mount namespace of
    -- box's init (other sandboxes of this process have theirs)
    local function zygotes(box)
      local function mnt(pid) return sh.lines(("readlink /proc/%d/ns/mnt; true"):format(pid))[1] end
      local want, out = mnt(box.confinement.namespaces.init), {}
      for _, f in ipairs(sh.lines("grep -lx sandbox-spawn /proc/[0-9]*/comm 2>/dev/null; true")) do
        local pid = f:match("^/proc/(%d+)/comm$")
        local stat = pid and read("/proc/" .. pid .. "/stat") or ""
        local ppid = stat:match("^%d+ %b() %a (%d+)")
        if ppid and tonumber(ppid) == tonumber(sh.pid()) and mnt(pid) == want then out[#out + 1] = tonumber(pid) end
      end
      return out
    end
    local function alive(pid) -- a zombie is not: it only waits for the host to reap it
      local state = (read("/proc/" .. pid .. "/stat") or ""):match("^%d+ %(sandbox%-spawn%) (%a)")
      return state ~= nil and state ~= "Z"
    end
    -- what a command can see of its own confinement, pids and timing left out
    local report = [[
      grep -E '^(Uid|Gid|Groups|Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Seccomp|Seccomp_filters):' /proc/self/status
      for n in user mnt ipc uts cgroup net pid; do echo "$n $(readlink /proc/self/ns/$n)"; done
      set -- $(cut -d' ' -f5,6 /proc/$$/stat)
      echo "ppid $PPID group-leader $([ "$1" = $$ ] && echo yes) session-leader $([ "$2" = $$ ] && echo yes)"
      cut -c1-60 /proc/self/limits; cat /proc/self/cgroup; hostname; pwd; umask; cat /proc/1/comm
      (echo x > /usr/escape) 2>/dev/null && echo wrote-outside || echo outside-refused
      (echo x > mine) && echo wrote-inside
      unshare -U true 2>/dev/null && echo unshared || echo unshare-refused]]

    it("gives the later commands the first one's confinement", function()
      local s2 = new { file_size_limit = "1MB" }
      local first = assert(s2:exec("sh", { "-c", report }))
      assert.same({}, zygotes(s2)) -- made at the second command
      for i = 1, 3 do
        local r = assert(s2:exec("sh", { "-c", report }))
        assert.equal(0, r.exit_code, r.stderr)
        assert.equal(first.stdout, r.stdout, "command " .. (i + 1))
        assert.equal(first.stderr, r.stderr)
      end
      assert.equal(1, #zygotes(s2))
      assert.matches("Seccomp:%s+2", first.stdout)
      assert.matches("NoNewPrivs:%s+1", first.stdout)
      assert.matches("CapEff:%s+0+\n", first.stdout)
      assert.matches("outside%-refused", first.stdout)
      assert.matches("unshare%-refused", first.stdout)
      s2:dispose()
    end)

    it("is out of the commands' reach, holds no fd of the host's but its standard streams, and ends with the sandbox", function()
      local s2 = new()
      for _ = 1, 2 do assert(s2:exec("true")) end
      local z = zygotes(s2)
      assert.equal(1, #z)
      -- in the commands' PID namespace it does not exist
      local r = assert(s2:exec("sh", { "-c", "cat /proc/[0-9]*/comm" }))
      assert.is_nil(r.stdout:find("sandbox-spawn", 1, true))
      -- its fds: 0-2 (the host's, as the init keeps them) and its socket
      local extra = sh.lines(("for f in /proc/%d/fd/*; do n=${f##*/}; [ $n -gt 2 ] && readlink $f; done; true"):format(z[1]))
      assert.equal(1, #extra, table.concat(extra, " "))
      assert.matches("^socket:", extra[1])
      s2:dispose()
      assert.is_false(alive(z[1]))
      assert.same({}, procs.zombie_children(sh.pid()))
    end)

    it("holds nothing of the host's memory: a program of its own, with an empty environment", function()
      local secret = "zygote-must-not-hold-" .. procs.marker() -- a string of the host's heap
      local s2 = new()
      for _ = 1, 2 do assert(s2:exec("true")) end
      local z = zygotes(s2)
      assert.equal(1, #z)
      assert.equal("sandbox-spawn\0", read("/proc/" .. z[1] .. "/cmdline"))
      assert.equal("", read("/proc/" .. z[1] .. "/environ"))
      local found, scanned = memory_holds(z[1], secret)
      assert.is_true(scanned > 0)
      assert.is_false(found)
      assert.is_truthy(secret) -- held until here
      s2:dispose()
    end)

    it("is made again when it dies, and the command in between still runs", function()
      local s2 = new()
      for _ = 1, 2 do assert(s2:exec("true")) end
      local z = zygotes(s2)
      assert.equal(1, #z)
      sh.run("kill -9 " .. z[1])
      local deadline = require("sandbox.core").clock() + 5
      while alive(z[1]) and require("sandbox.core").clock() < deadline do
        sh.run("sleep 0.02")
      end
      for i = 1, 3 do
        local r = assert(s2:exec("echo", { "run " .. i }))
        assert.equal("run " .. i .. "\n", r.stdout)
      end
      local now = zygotes(s2)
      assert.equal(1, #now)
      assert.are_not.equal(z[1], now[1])
      s2:dispose()
      assert.is_false(alive(now[1]))
      assert.same({}, procs.zombie_children(sh.pid()))
    end)

    it("passes 1 MB of arguments and environment whole, and fails what is too large for execve as a direct spawn does", function()
      local s2 = new()
      for _ = 1, 2 do assert(s2:exec("true")) end
      local args, piece = { "-c", 'n=0; for a in "$@"; do n=$((n + ${#a})); done; echo $# $n ${#X}', "_" }, string.rep("a", 100000)
      for i = 1, 10 do args[#args + 1] = piece .. i end -- one string may hold 128 KiB (MAX_ARG_STRLEN)
      local r = assert(s2:exec("sh", args, { env = { X = piece } }))
      assert.equal("10 1000011 100000\n", r.stdout)
      local huge = {}
      for i = 1, 30 do huge[i] = piece end -- 3 MB: more than execve takes, more than the zygote's mapping
      local v, msg = s2:exec("true", huge)
      assert.is_nil(v)
      assert.matches("Argument list too long", msg)
      assert.equal(0, assert(s2:exec("true")).exit_code)
      s2:dispose()
    end)
  end)

  -- a sandbox that never runs a command (an editor's file tools, a test
  -- fixture) never pays for its namespaces, view and Landlock (~7 ms here)
  describe("made at first need", function()
    local function layers(c)
      local out = {}
      for k, v in pairs(c) do
        if type(v) == "table" then out[#out + 1] = k .. "=" .. tostring(v.enforced) end
      end
      table.sort(out)
      return table.concat(out, " ")
    end

    it("starts no process and no private TMPDIR until a command runs", function()
      local tmp = backends.tmpdir("lazy-tmp")
      local script = ([[TMPDIR=%s %s -e '
        package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
        package.cpath = "%s/?.so;" .. package.cpath
        local s = require "sandbox"
        local procs = require "support.procs"
        local me = tonumber(io.open("/proc/self/stat"):read("*a"):match("^(%%d+)"))
        local function kids() return #procs.descendants(me) end
        local function tmps() local p = io.popen("ls -A %s"); local n = #p:read("*a"); p:close(); return n end
        for _, confine in ipairs { true, { namespaces = false } } do
          local sb = assert(s.container { base_dir = "%s", confine = confine })
          assert(sb:write_file("f", "x"))
          print(kids(), tmps())
          print(sb:exec("cat", { "f" }).stdout, kids() > 0 or tmps() > 0)
          sb:dispose()
          print(kids(), tmps())
        end']]):format(tmp, sh.lua(), sh.build, tmp, sb.cwd)
      local ok, out = sh.run("cd " .. sh.quote(os.getenv("PWD") or ".") .. " && LUA_PATH='./spec/?.lua;;' " .. script)
      assert.is_true(ok, out)
      -- namespaces: the init made at the first command; without them the
      -- network namespace's helper or the private TMPDIR
      assert.equal("0\t0\nx\ttrue\n0\t0\n0\t0\nx\ttrue\n0\t0\n", out)
    end)

    it("the first read of sb.confinement makes it, and reports what the eager path does", function()
      local before = #procs.descendants(sh.pid())
      local c = sb.confinement
      assert.is_true(c.namespaces.enforced)
      local kids = procs.descendants(sh.pid())
      assert.equal(before + 1, #kids)
      local found = false
      for _, pid in ipairs(kids) do found = found or pid == c.namespaces.init end
      assert.is_true(found, "the reported init is the host's new descendant")
      assert.is_true(sb.confinement == c) -- kept: read once, made once
      assert.equal(0, assert(sb:exec("true")).exit_code)
      local script = ([[SANDBOX_CONFINE_EAGER=1 %s -e '
        package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
        package.cpath = "%s/?.so;" .. package.cpath
        local s = require "sandbox"
        local sb = assert(s.container { base_dir = "%s" })
        local out = {}
        for k, v in pairs(sb.confinement) do
          if type(v) == "table" then out[#out + 1] = k .. "=" .. tostring(v.enforced) end
        end
        table.sort(out)
        io.write(table.concat(out, " "))']]):format(sh.lua(), sh.build, sb.cwd)
      local ok, out = sh.run(script)
      assert.is_true(ok, out)
      assert.equal(out, layers(c))
    end)

    it("adds the Landlock rules of the host's own paths while the init builds the view", function()
      if not hostcan.can("the host's work beside the init's (seen by strace)", hostcan.program("/usr/bin/strace")) then
        return
      end
      local log = os.tmpname()
      local ok, out = sh.run(([[strace -f -qq -e trace=landlock_add_rule,recvfrom -e signal=none -o %s %s -e '
        package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
        package.cpath = "%s/?.so;" .. package.cpath
        local sb = assert(require("sandbox").container { base_dir = "%s" })
        assert(sb:exec("true"))
        sb:dispose()']]):format(sh.quote(log), sh.lua(), sh.build, sb.cwd))
      local trace = sh.read_file(log)
      os.remove(log)
      assert.is_true(ok, out)
      -- only the host adds rules; its first recv waits for the init's report
      local host = assert(trace:match("(%d+) +landlock_add_rule"), trace)
      local before, after, waited = 0, 0, false
      for pid, call in trace:gmatch("(%d+) +([%w_]+)%(") do
        if pid == host and call == "recvfrom" then
          waited = true
        elseif pid == host and call == "landlock_add_rule" then
          if waited then after = after + 1 else before = before + 1 end
        end
      end
      assert.is_true(waited, trace)
      -- the system directories' rules (dozens) before; the view's few after
      assert.is_true(before >= 20 and after <= 10, ("%d rules before the report, %d after"):format(before, after))
    end)

    it("is nil on a sandbox disposed before anything was made", function()
      local s2 = new()
      s2:dispose()
      assert.is_nil(s2.confinement)
    end)
  end)

  describe("fail closed", function()
    it("refuses to run commands without Landlock, unless confine = false", function()
      local script = ([[SANDBOX_NO_LANDLOCK=1 %s -e '
        package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
        package.cpath = "%s/?.so;" .. package.cpath
        local s = require "sandbox"
        local a = s.container { base_dir = "%s" }
        local v, msg, code = a:exec("true")
        print(code, msg:find("Landlock") ~= nil, a.confinement.enabled, a.confinement.refused ~= nil)
        local b = s.container { base_dir = "%s", confine = false }
        print(b:exec("true").exit_code, b.confinement.enabled, b.confinement.landlock.why)']]):format(
        sh.lua(), sh.build, sb.cwd, sb.cwd)
      local ok, out = sh.run(script)
      assert.is_true(ok, out)
      assert.equal("ENOTSUP\ttrue\tfalse\ttrue\n0\tfalse\tconfine = false\n", out)
    end)

    it("confine = false still keeps the network off and the tree kill on", function()
      local s2 = new { confine = false }
      assert.is_false(s2.confinement.enabled)
      assert.equal("none", s2.confinement.network.mode)
      local r = assert(s2:exec("cat", { "/proc/self/status" }))
      assert.equal(0, r.exit_code)
      s2:dispose()
    end)
  end)

  describe("as an unprivileged user", function()
    it("confines files and network without root (user namespace)", function()
      if not hostcan.can("a sandbox of an unprivileged user", hostcan.unprivileged()) then return end
      local dir = backends.tmpdir("nobody")
      sh.run(("chown 65534:65534 %s && cp %s/test/probe %s/probe && chmod 755 %s/probe"):format(dir, sh.build, dir, dir))
      local script = ([[cd %s && setpriv --reuid=65534 --regid=65534 --clear-groups %s -e '
        package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
        package.cpath = "%s/?.so;" .. package.cpath
        local s = require "sandbox"
        local sb = assert(s.container { base_dir = "%s", kill_grace = 0.2 })
        print(sb.confinement.network.mode, sb.confinement.network.namespace, sb.confinement.enabled)
        print((sb:exec("sh", { "-c", "echo hi > ok && cat ok" }).stdout:gsub("\n", "")))
        print(sb:exec("sh", { "-c", "echo x > /tmp/nobody-escape" }).exit_code) -- the private /tmp
        print((sb:exec("./probe", { "tcp-connect", "22" }).stdout:gsub("\n", "")))
        local r = sb:exec("sleep", { "5" }, { timeout = 0.2 })
        print(r.timed_out)']]):format(sh.quote(os.getenv("PWD") or "."), sh.lua(), sh.build, dir)
      local ok, out = sh.run(script)
      assert.is_true(ok, out)
      local lines = {}
      for l in out:gmatch("[^\n]+") do lines[#lines + 1] = l end
      assert.equal("none\tthe sandbox's\ttrue", lines[1])
      assert.equal("hi", lines[2])
      assert.equal("0", lines[3])
      -- the sandbox's own namespace has no server there, and no route out
      assert.matches("tcp%-connect: ", lines[4])
      assert.is_nil(lines[4]:find(": ok", 1, true))
      assert.equal("true", lines[5])
      assert.is_nil(read("/tmp/nobody-escape"))
    end)

    -- overlayfs leaves work/work at mode 000, and a command may chmod 000 its
    -- own directories: without root neither can be read to be emptied
    it("leaves nothing in TMPDIR at dispose, even directories its commands made unreadable", function()
      if not hostcan.can("a sandbox of an unprivileged user", hostcan.unprivileged()) then return end
      local tmp, base = backends.tmpdir("nobody-tmp"), backends.tmpdir("nobody-base")
      sh.run(("chown 65534:65534 %s %s && echo a > %s/a"):format(tmp, base, base))
      local mess = "T=$TMPDIR; mkdir -p d$K/e $T/x/y && touch d$K/e/f $T/x/y/z && chmod 000 d$K/e $T/x/y && chmod 500 d$K $T/x"
      local script = ([[cd %s && setpriv --reuid=65534 --regid=65534 --clear-groups env TMPDIR=%s %s -e '
        package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
        package.cpath = "%s/?.so;" .. package.cpath
        local s = require "sandbox"
        -- (without namespaces the private /tmp is a directory in TMPDIR)
        for _, kind in ipairs { "overlay", "container", "landlock" } do
          local confine = kind == "landlock" and { namespaces = false } or nil
          local sb = assert(s[kind == "overlay" and kind or "container"] { base_dir = "%s", confine = confine })
          local r = assert(sb:exec("sh", { "-c", "K=" .. kind .. "; %s; ls $T/x" }))
          print(kind, r.exit_code, (r.stdout:gsub("\n", "")), sb.state_temporary)
          sb:dispose()
        end']]):format(sh.quote(os.getenv("PWD") or "."), tmp, sh.lua(), sh.build, base, mess)
      local ok, out = sh.run(script)
      sh.run(("chmod -R u+rwx %s 2>/dev/null; true"):format(base)) -- for the spec's own clean-up
      assert.is_true(ok, out)
      assert.matches("overlay\t0\ty\ttrue\n", out, 1, true)
      assert.matches("container\t0\ty\tnil\n", out, 1, true)
      assert.matches("landlock\t0\ty\tnil\n", out, 1, true)
      local _, left = sh.run("ls -A " .. tmp)
      assert.equal("", left, "left in TMPDIR")
    end)
  end)
end)

describe("sandbox.capabilities()", function()
  it("reports what this kernel can enforce", function()
    local c = sandbox.capabilities()
    for _, k in ipairs { "openat2", "pidfd", "userns", "netns", "namespaces", "seccomp", "cgroup_v2", "root" } do
      assert.is_boolean(c[k], k)
    end
    assert.is_true(c.landlock_abi == false or c.landlock_abi >= 1)
    assert.is_table(c.cgroup_limits)
  end)
end)
