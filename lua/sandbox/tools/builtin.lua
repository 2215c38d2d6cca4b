-- The built-in tools (SPEC §7). Each `run(ctx, args)` gets checked
-- arguments and returns the text for the model, or nil, error text; the
-- tools module adds validation, approval, error capture and exporters.
local S = require "sandbox.tools.schema"
local T = require "sandbox.tools.text"
local core = require "sandbox.core"

local fmt, concat = string.format, table.concat

local B = {}

local PATHS = "Paths are relative to the sandbox root (absolute paths are accepted when they are inside it)."

-- The version of a file the stale-write guard compares: size and mtime
-- (of what a link leads to).
local function version(sb, path)
  local st = sb:stat(path, { follow = true })
  if not st or st.type ~= "file" then return nil end
  return st.size .. ":" .. string.format("%.9f", st.mtime)
end

-- Versions are kept under the real path: reading CLAUDE.md (a link to
-- AGENTS.md) counts as reading AGENTS.md.
local function key(sb, path) return sb:realpath(path) or core.normalize(sb, path) or path end

local function remember(ctx, path)
  ctx.versions[key(ctx.sb, path)] = version(ctx.sb, path)
end

-- Refuse to overwrite a file the agent has not read in its current version.
local function stale(ctx, path, what)
  if not ctx.cfg.stale_guard then return nil end
  local now = version(ctx.sb, path)
  if not now then return nil end -- a new file
  local seen = ctx.versions[key(ctx.sb, path)]
  if seen == nil then
    return fmt("%s refused: %s already exists and you have not read it. Read it with read_file first, then retry.", what, path)
  end
  if seen ~= now then
    return fmt("%s refused: %s changed since you last read it. Read it again with read_file, then retry.", what, path)
  end
  return nil
end

local function fail(what, ...) return nil, T.error(what, ...) end

B.read_file = {
  description = "Read a text file and return it with line numbers (like `cat -n`). " .. PATHS ..
    " For long files use offset (first line, 1-based) and limit (number of lines); at most 2000 lines are " ..
    "shown at once and the output says how many lines the file has. Binary files are refused.",
  parameters = S.object({
    path = S.string("File to read."),
    offset = S.integer("Line to start at, 1-based (default 1).", { minimum = 1 }),
    limit = S.integer("Number of lines to show (default 2000).", { minimum = 1, maximum = 10000 }),
  }, { "path" }),
  read_only = true,
  run = function(ctx, a)
    local data, msg, code = ctx.sb:read_file(a.path)
    if not data then return fail("Reading " .. a.path, msg, code) end
    if T.is_binary(data) then
      return nil, fmt("%s is a binary file (%d bytes); read_file shows text files only.", a.path, #data)
    end
    remember(ctx, a.path)
    return (T.numbered(data, a.offset or 1, a.limit or T.DEFAULT_LIMIT))
  end,
}

B.write_file = {
  description = "Create a file, or replace an existing file's whole content. " .. PATHS ..
    " Parent directories are created. To change part of a file prefer edit_file. Replacing a file you " ..
    "have not read (or that changed since you read it) is refused: read it first.",
  parameters = S.object({
    path = S.string("File to write."),
    content = S.string("The complete new content."),
  }, { "path", "content" }),
  destructive = true,
  run = function(ctx, a)
    local refused = stale(ctx, a.path, "Writing")
    if refused then return nil, refused end
    local existed = ctx.sb:exists(a.path)
    local ok, msg, code = ctx.sb:write_file(a.path, a.content)
    if not ok then return fail("Writing " .. a.path, msg, code) end
    remember(ctx, a.path)
    return fmt("%s %s (%d bytes).", existed and "Replaced" or "Created", a.path, #a.content)
  end,
}

local function occurrences(s, needle)
  local n, at, lines = 0, 1, {}
  while true do
    local i = s:find(needle, at, true)
    if not i then break end
    n = n + 1
    local _, nl = s:sub(1, i):gsub("\n", "")
    lines[#lines + 1] = nl + 1
    at = i + math.max(#needle, 1)
  end
  return n, lines
end

B.edit_file = {
  description = "Replace text in a file: old_string must appear exactly once (include enough surrounding " ..
    "lines to make it unique), unless replace_all is true. Whitespace and indentation must match exactly. " ..
    PATHS .. " Read the file first: editing a file you have not read, or that changed since, is refused.",
  parameters = S.object({
    path = S.string("File to edit."),
    old_string = S.string("Exact text to replace."),
    new_string = S.string("Text to put in its place."),
    replace_all = S.boolean("Replace every occurrence (default false)."),
  }, { "path", "old_string", "new_string" }),
  destructive = true,
  run = function(ctx, a)
    if a.old_string == "" then return nil, "old_string must not be empty; to create or overwrite a file use write_file." end
    if a.old_string == a.new_string then return nil, "old_string and new_string are the same; nothing to change." end
    -- writes never follow a link; an edit of one edits what it leads to
    -- (inside the sandbox), and says so
    local path, via = a.path, nil
    local st = ctx.sb:stat(a.path)
    if st and st.type == "symlink" then
      local real, rmsg, rcode = ctx.sb:realpath(a.path)
      if not real then return fail("Editing " .. a.path .. " (a symbolic link)", rmsg, rcode) end
      path, via = real, a.path
    end
    local refused = stale(ctx, path, "Editing")
    if refused then return nil, refused end
    local data, msg, code = ctx.sb:read_file(path)
    if not data then return fail("Reading " .. path, msg, code) end
    local n, lines = occurrences(data, a.old_string)
    if n == 0 then
      return nil, fmt("old_string was not found in %s. Check it matches the file exactly (whitespace, " ..
        "indentation, line endings); read_file shows the current content.", a.path)
    end
    if n > 1 and not a.replace_all then
      return nil, fmt("old_string appears %d times in %s (lines %s). Add surrounding lines to make it " ..
        "unique, or pass replace_all=true to replace all of them.", n, a.path, concat(lines, ", "))
    end
    local out, pos, parts = {}, 1, 0
    while true do
      local i, j = data:find(a.old_string, pos, true)
      if not i or (parts == 1 and not a.replace_all) then break end
      out[#out + 1] = data:sub(pos, i - 1)
      out[#out + 1] = a.new_string
      pos = j + 1
      parts = parts + 1
    end
    out[#out + 1] = data:sub(pos)
    local ok, wmsg, wcode = ctx.sb:write_file(path, concat(out))
    if not ok then return fail("Writing " .. path, wmsg, wcode) end
    remember(ctx, path)
    return fmt("Edited %s%s: replaced %d occurrence%s.", path,
      via and fmt(" (%s is a symbolic link to it)", via) or "", parts, parts == 1 and "" or "s")
  end,
}

B.list_files = {
  description = "List the files and directories under a directory as an indented tree, with sizes; " ..
    "symbolic links show as `name -> target` (read_file reads through them). " ..
    PATHS .. " depth limits how deep it goes (default 2); at most max_entries entries are shown.",
  parameters = S.object({
    path = S.string("Directory to list (default: the sandbox root)."),
    depth = S.integer("How many levels to show (default 2, at most 10).", { minimum = 1, maximum = 10 }),
    max_entries = S.integer("Most entries to show (default 500).", { minimum = 1, maximum = 5000 }),
  }),
  read_only = true,
  run = function(ctx, a)
    local root = a.path or "."
    local depth, max = a.depth or 2, a.max_entries or 500
    local out, count, more = {}, 0, false
    local function walk(dir, level)
      local list, msg, code = ctx.sb:readdir(dir)
      if not list then return msg, code end
      for _, e in ipairs(list) do
        if count >= max then
          more = true
          return
        end
        count = count + 1
        local indent = ("  "):rep(level)
        local full = dir == "." and e.name or dir .. "/" .. e.name
        if e.type == "symlink" then -- shown, not descended into
          out[#out + 1] = fmt("%s%s -> %s", indent, e.name, ctx.sb:readlink(full) or "?")
        elseif e.is_directory then
          out[#out + 1] = indent .. e.name .. "/"
          if level + 1 < depth then walk(full, level + 1) end
        else
          out[#out + 1] = fmt("%s%s (%d bytes)%s", indent, e.name, e.size, e.type == "file" and "" or " [" .. e.type .. "]")
        end
        if more then return end
      end
    end
    local msg, code = walk(root, 0)
    if msg then return fail("Listing " .. root, msg, code) end
    if count == 0 then return fmt("%s is empty.", root) end
    if more then out[#out + 1] = fmt("[stopped after %d entries; list a subdirectory or lower depth to see the rest]", max) end
    return concat(out, "\n")
  end,
}

B.find_files = {
  description = "Find files and directories whose root-relative path matches a glob pattern: `*` " ..
    "matches within one directory level, `**` any number of levels, `?` one character, `[abc]` a class, " ..
    "`{a,b}` either alternative. Example: `**/*.lua`, `src/**/*.{c,h}`. Like ripgrep, files that " ..
    ".gitignore/.ignore exclude and hidden files are left out unless include_ignored is true. Results are " ..
    "sorted by path, or newest first with sort = \"mtime\"; at most max_results are returned.",
  parameters = S.object({
    pattern = S.string("Glob pattern, e.g. **/*.py"),
    sort = S.string("Order: by path (default) or most recently modified first.", { enum = { "path", "mtime" } }),
    include_ignored = S.boolean("Also list ignored and hidden files (default false)."),
    max_results = S.integer("Most paths to return (default 200).", { minimum = 1, maximum = 10000 }),
  }, { "pattern" }),
  read_only = true,
  run = function(ctx, a)
    local list, msg, code = ctx.sb:glob(a.pattern, { max_results = a.max_results or 200, sort = a.sort,
      ignored = a.include_ignored })
    if not list then return fail("Finding " .. a.pattern, msg, code) end
    if #list == 0 then return fmt("No files match %s.", a.pattern) end
    local text = concat(list, "\n")
    if list.truncated then text = text .. fmt("\n[only the first %d matches are shown; use a narrower pattern]", #list) end
    return text
  end,
}

local function hit_line(h)
  if h.context then return fmt("%s-%d- %s", h.path, h.line, T.cap(h.text, 500)) end
  return fmt("%s:%d: %s", h.path, h.line, T.cap(h.text, 500))
end

B.search_code = {
  description = "Search file contents with a regular expression (PCRE2 syntax as in ripgrep: \\d, \\w, \\b, " ..
    "(?i), lazy repeats, lookaround) or literal text. output_mode \"content\" (default) returns matching " ..
    "lines as `path:line: text` (context lines as `path-line- text`), \"files\" the paths with a match, " ..
    "\"count\" matches per file. Narrow it with path (a directory or file), include (a glob on file names, " ..
    "e.g. *.lua or src/**/*.{c,h}) or type (e.g. lua, py, js). Like ripgrep, files excluded by " ..
    ".gitignore/.ignore, hidden files and binary files are skipped unless include_ignored is true.",
  parameters = S.object({
    pattern = S.string("Regular expression (PCRE2), or literal text with literal=true."),
    path = S.string("Directory or file to search (default: the sandbox root)."),
    include = S.string("Only files whose name matches this glob, e.g. *.py or src/**/*.c."),
    type = S.string("Only files of this type: c, cpp, css, go, html, java, js, json, lua, md, py, rb, rust, sh, sql, toml, ts, txt, yaml, zig."),
    output_mode = S.string("What to return (default content).", { enum = { "content", "files", "count" } }),
    context = S.integer("Lines of context before and after each match (content mode).", { minimum = 0, maximum = 20 }),
    literal = S.boolean("Treat pattern as plain text (default false)."),
    ignore_case = S.boolean("Match case-insensitively (default false)."),
    multiline = S.boolean("Let a match span lines, e.g. struct \\w+ \\{[^}]*\\} (default false)."),
    include_ignored = S.boolean("Also search ignored and hidden files (default false)."),
    max_results = S.integer("Most matching lines or files (default 100).", { minimum = 1, maximum = 10000 }),
  }, { "pattern" }),
  read_only = true,
  run = function(ctx, a)
    local mode = a.output_mode or "content"
    local hits, msg, code = ctx.sb:grep(a.pattern, { path = a.path, glob = a.include, type = a.type,
      literal = a.literal, ignore_case = a.ignore_case, multiline = a.multiline, mode = mode,
      context = a.context, ignored = a.include_ignored, max_results = a.max_results or 100 })
    if not hits then return fail("Searching for " .. a.pattern, msg, code) end
    if #hits == 0 then return fmt("No matches for %s.", a.pattern) end
    local out = {}
    for i, h in ipairs(hits) do
      out[i] = mode == "files" and h or mode == "count" and fmt("%s: %d", h.path, h.count) or hit_line(h)
    end
    if hits.truncated then
      out[#out + 1] = fmt("[only the first %d results are shown; narrow the search with path, include or type]",
        mode == "content" and (a.max_results or 100) or #hits)
    end
    return concat(out, "\n")
  end,
}

B.file_exists = {
  description = "Tell whether a file or directory exists, and what it is. " .. PATHS,
  parameters = S.object({ path = S.string("Path to check.") }, { "path" }),
  read_only = true,
  run = function(ctx, a)
    local st, msg, code = ctx.sb:stat(a.path)
    if st then
      return st.type == "file" and fmt("%s exists: a file of %d bytes.", a.path, st.size)
          or fmt("%s exists: a %s.", a.path, st.type)
    end
    if code == "ENOENT" or code == "ENOTDIR" or code == "EACCES" then return fmt("%s does not exist.", a.path) end
    return fail("Checking " .. a.path, msg, code)
  end,
}

B.delete_file = {
  description = "Delete a file, or a directory (with recursive=true when it is not empty). " .. PATHS ..
    " The sandbox root itself cannot be deleted.",
  parameters = S.object({
    path = S.string("File or directory to delete."),
    recursive = S.boolean("Delete a directory with everything in it (default false)."),
  }, { "path" }),
  destructive = true,
  run = function(ctx, a)
    local ok, msg, code = ctx.sb:remove(a.path, { recursive = a.recursive or false })
    if not ok then return fail("Deleting " .. a.path, msg, code) end
    ctx.versions[key(ctx.sb, a.path)] = nil
    return fmt("Deleted %s.", a.path)
  end,
}

B.create_directory = {
  description = "Create a directory, and its missing parents. " .. PATHS ..
    " An existing directory is fine.",
  parameters = S.object({ path = S.string("Directory to create.") }, { "path" }),
  run = function(ctx, a)
    local ok, msg, code = ctx.sb:mkdir(a.path)
    if not ok then return fail("Creating " .. a.path, msg, code) end
    return fmt("Directory %s is there.", a.path)
  end,
}

B.move_file = {
  description = "Move or rename a file or directory. " .. PATHS .. " The destination's directory must " ..
    "exist; an existing destination is refused unless overwrite is true.",
  parameters = S.object({
    source = S.string("What to move."),
    destination = S.string("Where to put it (the new path, not a directory to move into)."),
    overwrite = S.boolean("Replace an existing destination (default false)."),
  }, { "source", "destination" }),
  destructive = true,
  run = function(ctx, a)
    local ok, msg, code = ctx.sb:rename(a.source, a.destination, { overwrite = a.overwrite or false })
    if not ok then
      if code == "EEXIST" then
        return nil, fmt("Moving %s failed: %s already exists; pass overwrite=true to replace it.", a.source, a.destination)
      end
      return fail("Moving " .. a.source, msg, code)
    end
    ctx.versions[key(ctx.sb, a.source)] = nil
    remember(ctx, a.destination)
    return fmt("Moved %s to %s.", a.source, a.destination)
  end,
}

-- ---- commands -------------------------------------------------------------

local function track(ctx, h)
  ctx.procs[h.id] = h
  return fmt("Started process %d (pid %d) in the background. Use process_output with id %d to read its " ..
    "output, and process_kill to stop it.", h.id, h.pid, h.id)
end

local function run_result(ctx, r, msg, code, timeout, what)
  if not r then return fail(what, msg, code) end
  if type(r) ~= "table" or r.exit_code == nil then return track(ctx, r) end
  return T.command(r, ctx.cfg.max_output, timeout)
end

local COMMAND_PARAMS = {
  cwd = S.string("Directory to run in, relative to the sandbox root (default: the root)."),
  timeout_seconds = S.number("Kill the command after this many seconds (default: the sandbox's).",
    { minimum = 0.1, maximum = 3600 }),
  background = S.boolean("Start it and return at once (for servers and long jobs); read its output " ..
    "with process_output."),
}

-- exec options for a tool's command: a foreground one lets the host's
-- on_wait in while it runs (progress, cancellation).
local function exec_opts(ctx, a, name)
  local o = { cwd = a.cwd, timeout = a.timeout_seconds, background = a.background }
  local hook = ctx.cfg.on_wait
  if hook and not a.background then
    o.on_wait = function(h, elapsed) return hook(h, { tool = name, elapsed = elapsed }) end
  end
  return o
end

-- The common command parameters plus a tool's own.
local function with(props)
  local t = {}
  for k, v in pairs(COMMAND_PARAMS) do t[k] = v end
  for k, v in pairs(props) do t[k] = v end
  return t
end

B.run_command = {
  description = "Run a program with arguments, without a shell: command is the argument vector, e.g. " ..
    "[\"ls\", \"-la\"] or [\"python3\", \"test.py\"]; there are no pipes, redirections or wildcards. The " ..
    "command runs inside the sandbox: it can read system directories and the sandbox, write only inside " ..
    "the sandbox, and its network is limited. Returns the exit code and output (long output keeps its " ..
    "start and end). A command that runs past its timeout is killed with everything it started.",
  parameters = S.object(with {
    command = S.array(S.string("one argument"), "Program and its arguments.", { minItems = 1 }),
  }, { "command" }),
  destructive = true,
  needs_exec = true,
  run = function(ctx, a)
    local argv = a.command
    local rest = {}
    for i = 2, #argv do rest[#rest + 1] = argv[i] end
    local r, msg, code = ctx.sb:exec(argv[1], rest, exec_opts(ctx, a, "run_command"))
    return run_result(ctx, r, msg, code, a.timeout_seconds or ctx.cfg.timeout, "Running " .. argv[1])
  end,
}

B.run_shell = {
  description = "Run a shell script with /bin/sh -c (pipes, redirections and globs work). Same sandbox, " ..
    "timeout and output rules as run_command; prefer run_command when no shell features are needed.",
  parameters = S.object(with { script = S.string("The shell script.") }, { "script" }),
  destructive = true,
  needs_exec = true,
  needs_shell = true,
  run = function(ctx, a)
    local o = exec_opts(ctx, a, "run_shell")
    o.allow_shell = true
    local r, msg, code = ctx.sb:exec_shell(a.script, o)
    return run_result(ctx, r, msg, code, a.timeout_seconds or ctx.cfg.timeout, "Running the script")
  end,
}

local function proc(ctx, id)
  local h = ctx.procs[id]
  if h then return h end
  local ids = {}
  for k in pairs(ctx.procs) do ids[#ids + 1] = k end
  table.sort(ids)
  return nil, fmt("There is no process %d. %s", id,
    #ids > 0 and "Known processes: " .. concat(ids, ", ") .. "." or "No process was started with background=true.")
end

B.process_output = {
  description = "Read what a background process printed since the last read, and whether it is still " ..
    "running (with its exit code once it ended). wait_seconds waits that long for new output.",
  parameters = S.object({
    id = S.integer("The process id that run_command or run_shell returned."),
    wait_seconds = S.number("Wait up to this long for output (default 0, at most 30).", { minimum = 0, maximum = 30 }),
  }, { "id" }),
  read_only = true,
  needs_exec = true,
  run = function(ctx, a)
    local h, err = proc(ctx, a.id)
    if not h then return nil, err end
    local wait = a.wait_seconds or 0
    local out = h:read("stdout", wait)
    -- stdout ended: stderr's end is a moment away (one event later), and then the exit
    local errs = h:read("stderr", out == nil and math.max(wait, 0.2) or 0)
    if out == nil and errs == nil and h:running() then h:wait(math.max(wait, 1)) end
    out, errs = out or "", errs or ""
    local parts = {}
    if h:running() then
      parts[1] = fmt("Process %d is running.", a.id)
    else
      local r = h:wait()
      parts[1] = r.signal and fmt("Process %d was killed by %s.", a.id, r.signal)
          or fmt("Process %d exited with code %d.", a.id, r.exit_code)
    end
    if out ~= "" then parts[#parts + 1] = "stdout:\n" .. T.cap(out, ctx.cfg.max_output) end
    if errs ~= "" then parts[#parts + 1] = "stderr:\n" .. T.cap(errs, ctx.cfg.max_output) end
    if out == "" and errs == "" then parts[#parts + 1] = "(no new output)" end
    return concat(parts, "\n")
  end,
}

B.process_kill = {
  description = "Stop a background process and everything it started (SIGTERM, then SIGKILL).",
  parameters = S.object({ id = S.integer("The process id.") }, { "id" }),
  destructive = true,
  needs_exec = true,
  run = function(ctx, a)
    local h, err = proc(ctx, a.id)
    if not h then return nil, err end
    if not h:running() then return fmt("Process %d had already ended.", a.id) end
    h:kill()
    local r = h:wait(10)
    return r and fmt("Stopped process %d (%s).", a.id, r.signal or ("exit code " .. r.exit_code))
      or fmt("Asked process %d to stop.", a.id)
  end,
}

B.process_list = {
  description = "List the background processes started in this session, with their status.",
  parameters = S.object({}),
  read_only = true,
  needs_exec = true,
  run = function(ctx)
    local ids = {}
    for id in pairs(ctx.procs) do ids[#ids + 1] = id end
    table.sort(ids)
    if #ids == 0 then return "No background processes were started." end
    local out = {}
    for _, id in ipairs(ids) do
      local h = ctx.procs[id]
      local status
      if h:running() then
        status = "running"
      else
        local r = h:wait()
        status = r.signal and ("killed by " .. r.signal) or ("exited with code " .. r.exit_code)
      end
      out[#out + 1] = fmt("%d\tpid %d\t%s", id, h.pid, status)
    end
    return concat(out, "\n")
  end,
}

B.http_get = {
  description = "Fetch a URL with an HTTP GET (http and https only) and return the status, the content "
    .. "type and the body as text. Only the hosts this sandbox allows can be reached; redirects are "
    .. "followed and checked again. A refused host is final: do not retry it, use another source. "
    .. "Long bodies are cut at max_bytes; binary bodies are not shown.",
  parameters = S.object({
    url = S.string("Absolute http:// or https:// URL."),
    max_bytes = S.integer("Most body bytes to return (default 100000, at most 1000000)."),
  }, { "url" }),
  read_only = true,
  needs_net = true,
  run = function(ctx, a)
    local max = math.max(1, math.min(a.max_bytes or 100000, 1000000))
    local r, msg, code = ctx.sb:http_get(a.url, { max_bytes = max, timeout = 30 })
    if not r then return fail("Fetching " .. a.url, msg, code) end
    local head = fmt("HTTP %d from %s (%s, %d bytes%s%s)", r.status, r.url,
      r.headers["content-type"] or "no content type", #r.body,
      r.truncated and ", cut at max_bytes" or "",
      r.redirects > 0 and fmt(", after %d redirect%s", r.redirects, r.redirects > 1 and "s" or "") or "")
    if T.is_binary(r.body) then return head .. "\nThe body is binary and is not shown." end
    return head .. "\n\n" .. r.body
  end,
}

B.ORDER = { "read_file", "write_file", "edit_file", "list_files", "find_files", "search_code",
  "file_exists", "delete_file", "create_directory", "move_file", "run_command", "run_shell",
  "process_output", "process_kill", "process_list", "http_get" }

return B
