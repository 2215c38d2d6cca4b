-- The cases of spec/policy_commands_spec.lua (SPEC §6.1), run from a process
-- of the calling user: as root in the suite, and as an unprivileged user
-- through spec/support/policy_as_user.lua. Each case makes a sandbox over a
-- fresh copy of TREE, does a thing through a file tool and through commands
-- side by side, and returns what it saw as strings: {field = text}. The
-- spec asserts on them and on the tree the host sees afterwards.
local sandbox = require "sandbox"

local M = {}

-- Every case starts from this tree; the SECRET-* strings must never show.
M.TREE = {
  [".env"] = "SECRET-ENV-7731\n",
  ["keys/a.pem"] = "SECRET-PEM-4410\n",
  ["keys/readme"] = "public key notes\n",
  ["private/notes.txt"] = "SECRET-PRIVATE-9032\n",
  ["conf/secret.txt"] = "SECRET-CONF-5521\n",
  ["conf/app.ini"] = "[app]\n",
  ["src/main.lua"] = "print('hi')\n",
  ["src/secret.lua"] = "SECRET-SRC-6604\n",
  ["README.md"] = "readme text\n",
}
M.SECRETS = { "SECRET-ENV-7731", "SECRET-PEM-4410", "SECRET-PRIVATE-9032", "SECRET-CONF-5521", "SECRET-SRC-6604" }
-- the deny case's rules, and the secrets they cover (src/secret.lua is the allow case's)
M.DENY = { ".env", "**/*.pem", "private", "conf/secret.txt" }
M.DENIED = { "SECRET-ENV-7731", "SECRET-PEM-4410", "SECRET-PRIVATE-9032", "SECRET-CONF-5521" }

local function out(r, msg, code)
  if not r then return "FAILED " .. tostring(code) .. ": " .. tostring(msg) end
  return r.stdout .. r.stderr .. "\nexit=" .. tostring(r.exit_code)
end

local function code_of(v, _, code) return v and "ok" or tostring(code) end

-- An overlay's changes as "kind path" lines (what its commands wrote);
-- a container's are on the host, where the spec looks.
local function changes(sb)
  if sb.kind ~= "overlay" then return "" end
  local t = {}
  for _, c in ipairs(sb:changes()) do t[#t + 1] = c.kind .. " " .. c.path end
  return table.concat(t, "\n")
end
M.changes = changes

local function new(kind, dir, opts)
  opts.base_dir = dir
  opts.allow_shell = true
  opts.kill_grace = 0.2
  return sandbox[kind](opts)
end

-- The cases: name -> function(kind, dir) -> {field = text}. kind is
-- "container" or "overlay"; dir holds TREE (and may be changed).
M.cases = {}

M.cases.deny = function(kind, dir)
  local sb = assert(new(kind, dir, { rules = { deny = M.DENY } }))
  local o = { tool_read = code_of(sb:read_file(".env")), tool_grep = "" }
  for _, m in ipairs(sb:grep("SECRET") or {}) do o.tool_grep = o.tool_grep .. m.text .. "\n" end
  -- every way a command reads
  o.read = out(sb:exec_shell(table.concat({
    "cat .env keys/a.pem private/notes.txt conf/secret.txt",
    "grep -r SECRET . ; grep -r SECRET /dev/null .env",
    "cp .env /tmp/c && cat /tmp/c; cp -r private /tmp/p && cat /tmp/p/*",
    "tar cf - . 2>/dev/null | grep -a SECRET",
    "ls -la . keys private conf",
    "test -x /usr/bin/python3 && /usr/bin/python3 -c 'print(open(\".env\").read())'",
    "echo end" }, "; ")))
  -- every way a command changes
  o.change = out(sb:exec_shell(table.concat({
    "echo PWNED > .env", "echo PWNED >> keys/a.pem", "rm -f .env keys/a.pem", "rm -rf private",
    "mv keys k2", "mv conf c2", "mv private p2", "mv .env e2", "ln .env h1", "ln keys/a.pem h2",
    "ln conf/secret.txt h3", "chmod 777 .env", "touch .env", "echo end" }, "; ")))
  -- a path that comes to match a rule later: masked from the next command on
  o.made = out(sb:exec_shell("echo SECRET-MADE-8181 > made.pem; cat made.pem"))
  o.made_next = out(sb:exec_shell("cat made.pem; mv made.pem m2; ln made.pem m3; echo end"))
  -- the file tools cannot carry a denied path out from under its rule either
  o.tool_move = code_of(sb:rename("conf", "c3"))
  o.tool_move_ok = code_of(sb:rename("keys", "k4")) -- k4/a.pem is still denied there
  o.rules = sb.confinement.rules and tostring(sb.confinement.rules.enforced) or "nil"
  o.changes = changes(sb)
  sb:dispose()
  return o
end

M.cases.read_only = function(kind, dir)
  local o = {}
  for _, opts in ipairs { { read_only = true }, { mode = "r" } } do
    local k = opts.read_only and "ro" or "mode_r"
    local sb = assert(new(kind, dir, opts))
    o[k .. "_tool"] = code_of(sb:write_file("new.txt", "x"))
    o[k .. "_cmd"] = out(sb:exec_shell(table.concat({
      "echo x > new.txt", "echo x >> README.md", "rm README.md", "mkdir d", "mv src s2", "touch README.md",
      "ln README.md h", "ln -s README.md l", "cat README.md", "echo end" }, "; ")))
    o[k .. "_tmp"] = out(sb:exec_shell("echo x > /tmp/t && cat /tmp/t"))
    o[k .. "_report"] = tostring(sb.confinement.read_only.enforced)
    o[k .. "_changes"] = changes(sb)
    sb:dispose()
  end
  return o
end

M.cases.mode_w = function(kind, dir)
  local sb = assert(new(kind, dir, { mode = "w" }))
  local o = {
    tool = code_of(sb:read_file("README.md")),
    refused = tostring(sb.confinement.refused),
    cmd = out(sb:exec_shell("cat README.md src/main.lua; head -c 3 .env; ls; echo written > new.txt; "
      .. "cp README.md /tmp/r; cat /tmp/r; echo end")),
    report = tostring(sb.confinement.mode.enforced),
  }
  sb:dispose()
  return o
end

M.cases.allow = function(kind, dir)
  local sb = assert(new(kind, dir, { rules = { allow = { "src/**", "README.md" }, deny = { "src/secret.lua" } } }))
  local o = {
    tool = code_of(sb:read_file(".env")),
    ls = out(sb:exec_shell("ls -A; ls -A src")),
    cmd = out(sb:exec_shell("cat .env private/notes.txt src/secret.lua; cat src/main.lua README.md; "
      .. "echo new > src/new.lua; echo top > top.txt; grep -r SECRET . ; echo end")),
  }
  -- a path the file tools add is in the commands' view from the next command
  assert(sb:write_file("src/added.lua", "added\n"))
  o.next = out(sb:exec_shell("cat src/added.lua"))
  sb:dispose()
  return o
end

M.cases.disk = function(kind, dir)
  local o = {}
  local sb = assert(new(kind, dir, { max_disk_usage = "1MB" }))
  o.cmd = out(sb:exec_shell("head -c 10000000 /dev/zero > big; ls -la big; echo end"))
  o.tool = code_of(sb:write_file("x.bin", ("x"):rep(2000000)))
  o.report = tostring(sb.confinement.disk.enforced)
  sb:dispose()
  sb = assert(new(kind, dir, { max_disk_usage = "1MB", max_disk_usage_files_only = true }))
  o.files_only = out(sb:exec_shell("echo ran"))
  o.files_only_tool = code_of(sb:write_file("x.bin", ("x"):rep(2000000)))
  o.files_only_report = tostring(sb.confinement.disk.why)
  sb:dispose()
  return o
end

M.cases.tmp = function(kind, dir)
  local sb = assert(new(kind, dir, { confine = { tmp_size = "8MB" } }))
  local o = {
    files = out(sb:exec_shell("i=0; while [ $i -lt 5000 ] && printf '' 2>/dev/null > /tmp/f$i; do i=$((i+1)); done; echo made=$i")),
    shared = out(sb:exec_shell("rm -f /tmp/f*; head -c 5000000 /dev/zero > /tmp/a && echo tmp-ok; "
      .. "head -c 5000000 /dev/zero > /dev/shm/b && echo shm-ok; echo end")),
    report = tostring(sb.confinement.tmpdir.inodes) .. " " .. tostring(sb.confinement.tmpdir.shm),
  }
  sb:dispose()
  return o
end

-- dir's parent holds the root one level down: the way to it is pinned
M.cases.later = function(kind, dir)
  local parent = dir:match("^(.*)/[^/]+$")
  local sb = assert(new(kind, dir, {}))
  local o = {
    breaks = out(sb:exec_shell(table.concat({
      ("mv %s %s.moved"):format(parent, parent), ("mv %s %s.moved"):format(dir, dir),
      ("rm -rf %s"):format(parent), ("mount -t tmpfs x %s"):format(parent), "rmdir " .. dir,
      "head -c 600000000 /dev/zero > /tmp/fill", "kill -9 -1", "echo end" }, "; "))),
  }
  o.next = out(sb:exec_shell("pwd; echo alive"))
  o.bg = out(sb:exec_shell("sleep 30 & kill -9 -1; sleep 1; echo x"))
  o.after = out(sb:exec("pwd"))
  o.cwd = sb.cwd
  sb:dispose()
  return o
end

return M
