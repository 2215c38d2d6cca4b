-- Run fn(v) in a scope that closes v when it ends: Lua 5.4's <close> where
-- the language has it, else what a program on 5.1, LuaJIT or 5.3 writes
-- instead: v:dispose() when the scope ends, however it ends (the metatable
-- is hidden from scripts, so its __close cannot be called from here).
if _VERSION == "Lua 5.4" then
  return assert(load([[
    local v, fn = ...
    do
      local c <close> = v
      fn(c)
    end
  ]], "=scoped"))
end

return function(v, fn)
  local ok, err = pcall(fn, v)
  v:dispose()
  if not ok then error(err, 0) end
end
