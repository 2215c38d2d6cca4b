-- The http_get tool (SPEC §7): checked arguments in, the text for the model out.
local S = require "sandbox.tools.schema"
local T = require "sandbox.tools.text"
local C = require "sandbox.tools.common"
local net = require "sandbox.net"
local fmt = string.format

local function opts(a) return { max_bytes = math.max(1, math.min(a.max_bytes or 100000, 1000000)), timeout = 30 } end

-- The model's text for http_get's answer.
local function render(a, r, msg, code)
  if not r then return C.fail("Fetching " .. a.url, msg, code) end
  local head = fmt("HTTP %d from %s (%s, %d bytes%s%s)", r.status, r.url,
    r.headers["content-type"] or "no content type", #r.body,
    r.truncated and ", cut at max_bytes" or "",
    r.redirects > 0 and fmt(", after %d redirect%s", r.redirects, r.redirects > 1 and "s" or "") or "")
  if T.is_binary(r.body) then return head .. "\nThe body is binary and is not shown." end
  return head .. "\n\n" .. r.body
end

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
    return render(a, ctx.sb:http_get(a.url, opts(a)))
  end,
  -- the request in a forked copy of the process, its answer taken on a later turn
  start = function(ctx, a, done)
    local now = false -- sb:http_get audits itself; a job's answer is audited here
    C.later(ctx, function() return net.http_start(ctx.sb, a.url, opts(a)) end,
      function() now = true return ctx.sb:http_get(a.url, opts(a)) end,
      function(r, msg, code)
        if now then return render(a, r, msg, code) end
        return render(a, net.audited(ctx.sb, a.url, r, msg, code))
      end, done)
  end,
}
