-- The http_get tool (SPEC §7): checked arguments in, the text for the model out.
local S = require "sandbox.tools.schema"
local T = require "sandbox.tools.text"
local C = require "sandbox.tools.common"
local fmt = string.format

return {
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
    if not r then return C.fail("Fetching " .. a.url, msg, code) end
    local head = fmt("HTTP %d from %s (%s, %d bytes%s%s)", r.status, r.url,
      r.headers["content-type"] or "no content type", #r.body,
      r.truncated and ", cut at max_bytes" or "",
      r.redirects > 0 and fmt(", after %d redirect%s", r.redirects, r.redirects > 1 and "s" or "") or "")
    if T.is_binary(r.body) then return head .. "\nThe body is binary and is not shown." end
    return head .. "\n\n" .. r.body
  end,
}
