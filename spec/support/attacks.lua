-- The attacks of a confined command on its host (spec/isolation_spec.lua),
-- run from a sandbox of the calling process: as root in the suite, and as
-- an unprivileged user through spec/support/attacks_as_user.lua. Each
-- returns what the attack program (spec/c/attack.c) printed.
local sandbox = require "sandbox"

local M = {}

local function trim(s) return (s:gsub("%s+$", "")) end

--- Run every attack in a fresh sandbox at `root` (holding ./attack).
--- host: {pid = a host process, shm = a host SysV segment id, sock = a
--- host unix socket path}. Returns {name = output}.
function M.run(root, host, opts)
  opts = opts or {}
  opts.base_dir = root
  opts.kill_grace = 0.2
  local sb = assert(sandbox.container(opts))
  local out = { confinement = sb.confinement }
  local function a(name, ...)
    local r, msg = sb:exec("./attack", { ... }, { timeout = 20 })
    out[name] = r and trim(r.stdout .. r.stderr) or ("spawn failed: " .. tostring(msg))
  end
  a("caps", "caps")
  a("settime", "settime")
  a("bpf", "bpf")
  a("prlimit", "prlimit", host.pid)
  a("cpu", "cpu", host.pid)
  a("renice", "renice", host.pid)
  a("affinity", "affinity", host.pid)
  a("netns", "netns", host.pid)
  a("shm", "shm", host.shm)
  a("unix", "unix", host.sock)
  a("hostname", "hostname")
  a("syscalls", "syscalls")
  a("x32", "x32")
  a("i386", "i386")
  assert(sb:write_file("plant", "#!/bin/sh\nid -u\n"))
  a("setuid", "setuid", "plant")
  a("setcap", "setcap", "plant")
  a("chattr", "chattr", "plant")
  local r = assert(sb:exec("sh", { "-c", "touch $TMPDIR/t && ./attack chattr $TMPDIR/t" }))
  out.chattr_tmp = trim(r.stdout .. r.stderr)
  r = assert(sb:exec("sh", { "-c", "ls /etc/ssl/private /etc/shadow /etc/sudoers /etc/ssh 2>&1; ls /sys 2>&1; echo end" }))
  out.secrets = trim(r.stdout)
  r = assert(sb:exec("sh", { "-c", "readlink /proc/self/ns/pid /proc/self/ns/ipc /proc/self/ns/uts /proc/self/ns/mnt /proc/self/ns/net /proc/self/ns/cgroup" }))
  out.ns = trim(r.stdout)
  -- what a command creates in the root belongs to the host's user (uid and
  -- gid map to themselves), as the command sees it and as the host does
  r = assert(sb:exec("sh", { "-c", "echo x > made-here && id -u && id -g" }))
  out.inside_ids = trim(r.stdout)
  local p = assert(io.popen("stat -c '%u %g' " .. root .. "/made-here"))
  out.host_owner = trim(p:read("*a"))
  p:close()
  sb:dispose()
  return out
end

return M
