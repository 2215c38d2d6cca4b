-- Run by spec/c/alloc_cap fail:N: one scripted mix of operations, each in
-- pcall. Whichever allocation fails, the process must not abort, the tree
-- must stay consistent and closing the state must return every byte.
-- LuaJIT's trace compiler does not survive an allocator that refuses in
-- the middle of recording (segfaults inside LuaJIT, seen in CI runs):
-- what is tested is the sandbox's C core, so the interpreter runs it.
if jit then jit.off() end
package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
package.cpath = (os.getenv("SANDBOX_BUILD") or "./build") .. "/?.so;" .. package.cpath
local sandbox = require "sandbox"
local LIMIT = 4096
local sb = sandbox.virtual { max_total_bytes = LIMIT, audit = function() end }
local payload = string.rep("p", 100)
local names = {}
for i = 1, 40 do names[i] = ("dir%d/sub/file%d.txt"):format(i % 3, i) end
local function try(f, ...) return pcall(f, sb, ...) end
-- every allocation of the mix is inside a pcall'd operation, and the whole
-- mix in one more (LuaJIT grows its stack for a pcall before the call is
-- protected, so a refusal there reaches this level)
local function mix()
  for i = 1, 40 do try(sb.write_file, names[i], payload) end
  try(sb.write_file, names[1], payload .. "more")
  try(sb.mkdir, "a/b/c/d")
  try(sb.rename, "dir1", "renamed-dir1")
  try(sb.rename, "dir2/sub/file2.txt", "a/b/moved.txt")
  try(sb.readdir, "dir0/sub")
  try(sb.glob, "**/*.txt")
  try(sb.grep, "p+", { glob = "*.txt" })
  try(sb.grep, "P", { literal = true, ignore_case = true })
  try(sb.snapshot, { directories = true })
  try(sb.stat, "a/b")
  try(sb.exists, "nope")
  try(sb.remove, "dir0", { recursive = true })
end
arm()
pcall(mix)
arm(false)
-- consistency: remove everything, then the whole byte budget is free again
for _, e in ipairs(assert(sb:readdir("."))) do assert(sb:remove(e.name, { recursive = true })) end
assert(#sb:readdir(".") == 0)
assert(sb:write_file("full", string.rep("x", LIMIT)), "byte accounting leaked")
assert(select(3, sb:write_file("one-more", "x")) == "ENOSPC")
sb:dispose()
print("consistent")
