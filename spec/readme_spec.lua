-- Every Lua block of the README and of docs/*.md runs as written from a
-- checkout, the way the README says (LUA_PATH and LUA_CPATH naming the
-- checkout); a block that cannot run as written carries, just above it, a
-- comment saying why.
local sh = require "support.sh"
local backends = require "support.backends"

-- the documents' commands are written for Linux, confined
local without_layers = require("support.host").without_layers("the README's and docs' blocks (their commands run confined)")
if without_layers then
  describe("the documents' code blocks", function() pending(without_layers) end)
  return
end

local DOCS = { "README.md" }
for _, f in ipairs(sh.lines("ls docs/*.md")) do DOCS[#DOCS + 1] = f end

-- {lang, code, line, skip = the reason in a "not run" comment above it}
local function blocks(text)
  local out, n, prev, cur = {}, 0, "", nil
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    n = n + 1
    if cur then
      if line:match("^```%s*$") then
        out[#out + 1] = cur
        cur = nil
      else
        cur.code[#cur.code + 1] = line
      end
    else
      local lang = line:match("^```(%w*)%s*$")
      if lang then
        cur = { lang = lang, code = {}, line = n, skip = prev:match("^<!%-%- not run[^:]*: (.-) %-%->$") }
      elseif line:match("%S") then
        prev = line
      end
    end
  end
  return out
end

local LUA = sh.lua() -- the suite's Lua (with ASan's runtime in make asan)

local function run(file, env)
  return sh.run(("cd %s && %s LUA_PATH='lua/?.lua;lua/?/init.lua;;' LUA_CPATH='%s/?.so;;' %s %s 2>&1"):format(
    sh.quote(os.getenv("PWD") or "."), env or "", sh.build, LUA, sh.quote(file)))
end

local function write(dir, name, text)
  local path = dir .. "/" .. name
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
  return path
end

for _, doc in ipairs(DOCS) do
describe(doc .. "'s code blocks", function()
  local all = blocks(assert(sh.read_file(doc)))
  local lua_blocks = 0

  it("are fenced with a language, or are output (no language), and every Lua block is whole", function()
    for _, b in ipairs(all) do
      assert.is_true(b.lang == "" or ({ lua = 1, sh = 1, json = 1, toml = 1, c = 1 })[b.lang] ~= nil,
        doc .. ":" .. b.line .. ": fence language " .. b.lang)
      if b.lang == "lua" then lua_blocks = lua_blocks + 1 end
    end
    if doc == "README.md" or doc == "docs/API.md" then assert.is_true(lua_blocks >= 2, "Lua blocks found: " .. lua_blocks) end
  end)

  for _, b in ipairs(all) do
    if b.lang == "lua" or b.lang == "sh" then
      local where = ("%s:%d (%s)"):format(doc, b.line, b.lang)
      if b.skip then
        it(where .. " says why it is not run as written: " .. b.skip, function()
          assert.is_true(#b.skip > 10)
          if b.lang == "lua" and b.skip:match("test peer") then
            -- run as written, the engine's address given by the spec (the
            -- block takes its key from E2B_API_KEY, as E2B's SDKs do)
            local peer = require("support.e2b_peer").start("readme-key-0123456789")
            finally(peer.stop)
            local dir = backends.tmpdir("readme")
            local file = write(dir, "block.lua", ([[
local sandbox = require "sandbox"
local remote = sandbox.remote
sandbox.remote = function(o) o.api_url, o.envd_url = %q, %q return remote(o) end
]]):format(peer.api, peer.envd) .. table.concat(b.code, "\n") .. "\n")
            local ok, out = run(file, "E2B_API_KEY=readme-key-0123456789")
            assert(ok, out)
            assert.matches("42", out)
          end
        end)
      elseif b.lang == "lua" then
        it(where .. " runs as written", function()
          local dir = backends.tmpdir("readme")
          local ok, out = run(write(dir, "block.lua", table.concat(b.code, "\n") .. "\n"))
          assert(ok, out)
        end)
      else
        it(where .. " is run elsewhere, or says so", function()
          error(where .. ": a shell block with no 'not run' comment above it")
        end)
      end
    end
  end
end)
end
