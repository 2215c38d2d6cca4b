-- Search as agents expect it (SPEC §12): the options of grep and glob
-- (checked strictly, with defaults once), file types, context. The engine
-- is C (csrc/search/): PCRE2 with the JIT, ignore files, worker threads.
local options = require "sandbox.options"

local M = {}

local type, pairs, concat, sort, fmt = type, pairs, table.concat, table.sort, string.format
local C = options.checkers

--- File types for `type = "lua"` (ripgrep's names for the common ones).
M.TYPES = {
  c = { "c", "h" }, cpp = { "cpp", "cc", "cxx", "hpp", "hh", "hxx", "h" }, css = { "css", "scss" },
  go = { "go" }, html = { "html", "htm" }, java = { "java" }, js = { "js", "jsx", "mjs", "cjs" },
  json = { "json" }, lua = { "lua" }, md = { "md", "markdown" }, py = { "py", "pyi" },
  rb = { "rb" }, rust = { "rs" }, sh = { "sh", "bash", "zsh" }, sql = { "sql" }, toml = { "toml" },
  ts = { "ts", "tsx", "mts", "cts" }, txt = { "txt" }, yaml = { "yaml", "yml" }, zig = { "zig" },
}

local function type_names()
  local names = {}
  for k in pairs(M.TYPES) do names[#names + 1] = k end
  sort(names)
  return concat(names, ", ")
end

local function file_type(v)
  if type(v) ~= "string" then return nil, "must be a file type name such as \"lua\"" end
  if not M.TYPES[v] then
    return nil, fmt("'%s' is not a known file type%s (known: %s)", v, options.suggest(v, M.TYPES), type_names())
  end
  return v
end

local function lines(v)
  if not options.is_integer(v) or v < 0 or v > 100 then return nil, "must be an integer from 0 to 100" end
  return v
end

local function results(v)
  if not options.is_integer(v) or v < 1 or v > 1000000 then return nil, "must be an integer from 1 to 1000000" end
  return v
end

local WALK = {
  max_results = { check = results, default = 1000 },
  ignored = { check = C.boolean, default = false }, -- true: ignore files and hidden entries too
  hidden = { check = C.boolean, default = false },
}

local GREP = options.schema(WALK, {
  path = { check = C.string },
  glob = { check = C.string },
  type = { check = file_type },
  literal = { check = C.boolean, default = false },
  ignore_case = { check = C.boolean, default = false },
  mode = { check = options.one_of("content", "lines", "files", "count"), default = "content" },
  context = { check = lines },
  before = { check = lines },
  after = { check = lines },
  multiline = { check = C.boolean, default = false },
  threads = { check = function(v)
    if not options.is_integer(v) or v < 0 or v > 64 then return nil, "must be an integer from 0 (every CPU) to 64" end
    return v
  end, default = 0 },
})

local GLOB = options.schema(WALK, {
  sort = { check = options.one_of("path", "mtime"), default = "path" },
})

--- The glob on base names that a file type stands for.
function M.type_glob(name)
  local exts = M.TYPES[name]
  return #exts == 1 and "*." .. exts[1] or "*.{" .. concat(exts, ",") .. "}"
end

-- grep's options, checked and normalised for C.
local function grep_opts(opts)
  local o = options.check("grep", opts, GREP)
  o.before = o.before or o.context or 0
  o.after = o.after or o.context or 0
  o.context = nil
  if o.type then o.type_glob, o.type = M.type_glob(o.type), nil end
  return o
end

--- grep without waiting (lua/search_job.c): a job whose result() is false
--- while it runs, then what sb:grep returns; or nil, msg, code at once.
--- Local backends only (a RemoteSandbox's reads share this process's
--- connection).
function M.grep_start(sb, pattern, opts)
  return require("sandbox.core").grep_start(sb, pattern, grep_opts(opts))
end

--- glob without waiting, as grep_start.
function M.glob_start(sb, pattern, opts)
  return require("sandbox.core").glob_start(sb, pattern, options.check("glob", opts, GLOB))
end

-- The C methods, wrapped: options checked here, C reads normalised values.
function M.attach(methods)
  local cgrep, cglob = methods.grep, methods.glob
  function methods.grep(sb, pattern, opts)
    return cgrep(sb, pattern, grep_opts(opts))
  end
  function methods.glob(sb, pattern, opts)
    return cglob(sb, pattern, options.check("glob", opts, GLOB))
  end
end

M.grep_schema, M.glob_schema = GREP, GLOB

return M
