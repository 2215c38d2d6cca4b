-- Base64 (RFC 4648, standard alphabet, padded): binary content in JSON
-- (MCP resource blobs, image content of tool results).
local M = {}

local byte, char, concat, floor = string.byte, string.char, table.concat, math.floor

local B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
local ENC, DEC = {}, {}
for i = 0, 63 do
  ENC[i] = B64:sub(i + 1, i + 1)
  DEC[byte(B64, i + 1)] = i
end

function M.encode(s)
  local out, n = {}, 0
  for i = 1, #s, 3 do
    local a, b, c = byte(s, i, i + 2)
    local v = a * 65536 + (b or 0) * 256 + (c or 0)
    local d1, d2, d3, d4 = floor(v / 262144) % 64, floor(v / 4096) % 64, floor(v / 64) % 64, v % 64
    n = n + 1
    out[n] = ENC[d1] .. ENC[d2] .. (b and ENC[d3] or "=") .. (c and ENC[d4] or "=")
  end
  return concat(out)
end

--- The bytes of a base64 text (whitespace ignored, as notebooks wrap it),
--- or nil when it is not base64.
function M.decode(s)
  s = s:gsub("%s+", "")
  if #s % 4 ~= 0 or s:find("[^%w+/=]") or s:find("=[^=]") or s:find("===$") then return nil end
  local out, n = {}, 0
  for i = 1, #s, 4 do
    local a, b, c, d = byte(s, i, i + 3)
    local v = DEC[a] * 262144 + DEC[b] * 4096 + (DEC[c] or 0) * 64 + (DEC[d] or 0)
    n = n + 1
    out[n] = char(floor(v / 65536), floor(v / 256) % 256, v % 256)
    if d == 61 then out[n] = out[n]:sub(1, c == 61 and 1 or 2) end
  end
  return concat(out)
end

return M
