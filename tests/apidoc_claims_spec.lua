-- The API reference's examples that claim a result (`print(x) --> result`)
-- print that result on the cpu backend: docs/API.md shows them as facts.
local kb = require 'kluabench'
local apidoc = require 'kluabench.apidoc'

-- Claims that depend on the build or the machine, or show a value cut short.
local NOT_EXACT = { ['kb.build_info'] = 'the build', ['kb.sha256'] = 'a prefix' }

-- true when `got` (what print wrote, without the newline) is what `claim` says:
-- the same text, or a longer number that rounds to the claim (0.975 for
-- 0.97500210485178).
local function holds(got, claim)
  if got == claim then return true end
  local g, c = tonumber(got), tonumber(claim)
  local digits = #(claim:match('^%-?%d+%.(%d+)$') or '')
  if g and c and digits > 0 and #(got:match('%.(%d+)$') or '') > digits then
    return string.format('%.' .. digits .. 'f', g) == claim
  end
  return false
end

local function environment()
  local e = { kb = kb }
  for prefix, modname in pairs(apidoc.modules) do e[prefix] = require(modname) end
  return setmetatable(e, { __index = _G })
end

describe('apidoc examples with a claimed result', function()
  it('print what they claim', function()
    local checked, wrong = 0, {}
    for _, e in ipairs(apidoc.entries) do
      local expr, claim = (e.example or ''):match('^print%((.*)%) %-%-> ([^\n]+)$')
      if expr and not NOT_EXACT[e.name] and not e.example:find('\n', 1, true) then
        local env = environment()
        local printed = {}
        env.print = function(...)
          local parts = {}
          for i = 1, select('#', ...) do parts[i] = tostring((select(i, ...))) end
          printed[#printed + 1] = table.concat(parts, '\t')
        end
        local f = assert(load('print(' .. expr .. ')', '=' .. e.name, 't', env))
        local ok, err = pcall(f)
        local got = ok and table.concat(printed, '\n') or ('error: ' .. tostring(err))
        if not holds(got, claim) then wrong[#wrong + 1] = string.format('%s: claims %s, prints %s', e.name, claim, got) end
        checked = checked + 1
      end
    end
    assert.same({}, wrong)
    assert.is_true(checked >= 20, 'only ' .. checked .. ' claims found')
  end)
end)
