-- Every exported function of the stdlib (each Lua function docs/API.md
-- documents) checks its arguments, as the C functions do (issue 23): called
-- with nothing, and with a value of a type no function takes (a coroutine),
-- it raises "bad argument #1 to '<its name>' (... expected, got ...)", never
-- "attempt to index a nil value" from its insides. A function whose first
-- argument is optional is called with the coroutine only.
--
-- The functions whose first argument may be any value by design are listed
-- below with why: called with nothing and with the coroutine they answer, or
-- raise "bad argument #k" for a later argument; never "attempt to ...".
-- NIL_FIRST lists those whose first argument may be nil (but not a
-- coroutine).
local apidoc = require 'kluabench.apidoc'
local help = require 'kluabench.apidoc.help'

local ANY_VALUE = {
  -- predicates: true or false for anything
  ['stopping.is_criterion'] = 'predicate', ['reader.is_bundle'] = 'predicate', ['show.is_measurement'] = 'predicate',
  ['record.is_shared'] = 'predicate', ['measure.is_protocol'] = 'predicate',
  -- views, encodings and look-ups of any value
  ['show.value'] = 'view', ['show.result'] = 'view', ['show.print'] = 'prints any values', ['check.shown'] = 'view',
  ['record.json_safe'] = 'encoding (nil for what JSON cannot carry)',
  ['record.quantile_of'] = 'nil for what is not the field of a quantile',
  ['plot.xml_text'] = 'view', ['compare.percent'] = "'' for what is not a number",
  ['help.find_value'] = 'looks any value up', ['help'] = 'documents any value', ['help.help'] = 'documents any value', ['help.text'] = 'documents any value',
  ['result.duration_ns'] = 'nil for what is not a duration',
  ['ceilings.percent'] = 'nil when either is not a number (ceilings are optional)',
  ['record.throughput'] = 'nil without a number of bytes or flops',
  -- validators and readers of records as they were decoded (any JSON value): problems, or nil and why
  ['verify.check'] = 'validator', ['verify.problems'] = 'validator',
  ['reader.samples_of'] = 'reader', ['result.label_of'] = 'reader', ['record.label_of'] = 'reader',
  ['record.names_of'] = 'reader', ['plot.point_from_bundle'] = 'reader',
  ['compare.bundles_of'] = 'reader',
  ['record.measurement_fields'] = 'reader', ['ceilings.usable_copy'] = 'reader (a cache entry as read)',
  ['ceilings.usable_noise'] = 'reader (a cache entry as read)', ['ceilings.noise_of'] = 'reader (a cache entry as read)',
  -- parts of any type joined
  ['record.run_name'] = 'varargs',
}

local NIL_FIRST = {
  ['ceilings.floor_ms'] = 'bytes nil where only flops are known', ['ceilings.throughput'] = 'the same',
  ['ceilings.cached_throughput'] = 'the same', ['progress.format_duration'] = 'nil gives "?"',
  ['clocks.locked_state'] = 'nil when NVML gave no info',
}

-- name, the function, whether its first argument is optional
local function exported()
  local out = {}
  for _, e in ipairs(apidoc.entries) do
    if e.kind == 'function' then
      local f = help.resolve(e)
      if type(f) == 'function' and debug.getinfo(f, 'S').what == 'Lua' then
        local params = e.signature:match('%((.-)%)') or ''
        local optional = params:match('^%s*%[') ~= nil or params:match('^%s*$') ~= nil
        if params:match('^%s*$') == nil then out[#out + 1] = { name = e.name, f = f, optional = optional } end
      end
    end
  end
  return out
end

-- Calls f(v) with os.exit turned into an error and what it prints thrown away: ok, message.
local function call(f, ...)
  local exit, out, stdout, print_ = os.exit, io.output(), io.stdout, print
  local null = assert(io.open('/dev/null', 'w'))
  os.exit = function(code) error('os.exit(' .. tostring(code) .. ')', 0) end ---@diagnostic disable-line
  io.output(null)
  io.stdout, print = null, function() end ---@diagnostic disable-line
  local ok, err = pcall(f, ...)
  os.exit, io.stdout, print = exit, stdout, print_ ---@diagnostic disable-line
  io.output(out)
  null:close()
  return ok, tostring(err)
end

describe('the stdlib functions docs/API.md documents', function()
  local list = exported()

  it('are there to check (a sanity check of the enumeration)', function()
    assert(#list > 250, #list)
  end)

  it('raise bad argument #1 naming themselves for nothing and for a wrong type', function()
    local wrong = {}
    local thread = coroutine.create(function() end)
    for _, fn in ipairs(list) do
      if not ANY_VALUE[fn.name] then
        local short = fn.name:match('([%w_]+)$')
        for _, case in ipairs { { 'nothing', nil }, { 'a coroutine', thread } } do
          if not ((fn.optional or NIL_FIRST[fn.name]) and case[2] == nil) then
            local ok, err = call(fn.f, case[2])
            if ok or not err:find("bad argument #1 to '", 1, true) or not err:find(short, 1, true)
                or err:find('attempt to', 1, true) then
              wrong[#wrong + 1] = string.format('%s(%s): %s', fn.name, case[1], ok and 'no error' or err)
            end
          end
        end
      end
    end
    assert(#wrong == 0, #wrong .. ' functions do not check their first argument:\n' .. table.concat(wrong, '\n'))
  end)

  it('whose first argument may be any value answer nothing and a coroutine, or name a later argument', function()
    local wrong, seen = {}, {}
    for _, fn in ipairs(list) do
      if ANY_VALUE[fn.name] then
        seen[fn.name] = true
        for _, v in ipairs { false, coroutine.create(function() end) } do
          local ok, err = call(fn.f, v or nil)
          if not ok and (not err:match("bad argument #[2-9] to '") or err:find('attempt to', 1, true)) then
            wrong[#wrong + 1] = fn.name .. ': ' .. err
          end
        end
      end
    end
    assert(#wrong == 0, table.concat(wrong, '\n'))
    -- the lists name only functions that exist
    for name in pairs(ANY_VALUE) do assert(seen[name], name .. ' is listed but not documented') end
    for _, fn in ipairs(list) do NIL_FIRST[fn.name] = nil end
    assert.same({}, NIL_FIRST)
  end)
end)
