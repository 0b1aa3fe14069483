-- One JSON nesting cap for the whole program: the engine's kb.jcs.encode
-- (KB_JSON_MAX_DEPTH in engine/core/kb.h), its safetensors header reader
-- (lua-cjson, engine/core/tensor_io.c) and the stdlib's reader and writer
-- (util/json.lua, MAX_DEPTH) accept and refuse the same depths.
local kb = require 'kluabench'
local json = require 'kluabench.util.json'

local function arrays(n) return string.rep('[', n) .. string.rep(']', n) end
local function objects(n) return string.rep('{"a":', n - 1) .. '{}' .. string.rep('}', n - 1) end

local function lua_nested(n)
  local root = {}
  local t = root
  for _ = 2, n do
    t[1] = {}
    t = t[1]
  end
  return root
end

describe('JSON nesting cap', function()
  it('is one value on the C and Lua sides', function()
    assert.is_number(kb.jcs.MAX_DEPTH)
    assert.equal(kb.jcs.MAX_DEPTH, json.MAX_DEPTH)
  end)

  it('lets the reader accept MAX_DEPTH levels and refuse one more', function()
    local max = json.MAX_DEPTH
    for _, make in ipairs { arrays, objects } do
      local ok_text, deep_text = make(max), make(max + 1)
      assert.equal(ok_text, kb.jcs.encode(assert(json.decode(ok_text))))
      local v, err = json.decode(deep_text)
      assert.is_nil(v)
      assert.matches('nesting deeper than ' .. max .. ' levels', err, 1, true)
    end
  end)

  it("lets the safetensors header reader accept MAX_DEPTH levels and refuse one more", function()
    local max = json.MAX_DEPTH
    local path = os.tmpname()
    finally(function() os.remove(path) end)
    local function load(header)
      local f = assert(io.open(path, 'wb'))
      f:write(string.pack('<I8', #header), header)
      f:close()
      return select(2, kb.load_safetensors(path))
    end
    -- the header itself is one level: MAX_DEPTH - 1 more inside __metadata__ is as deep as it goes
    local inner = string.rep('{"a":', max - 2) .. '{}' .. string.rep('}', max - 2)
    assert.matches('__metadata__ must map strings to strings', load('{"__metadata__":' .. inner .. '}'), 1, true)
    local deeper = '{"a":' .. inner .. '}'
    assert.matches('not valid JSON (Found too many nested data structures (' .. (max + 1) .. ')',
      load('{"__metadata__":' .. deeper .. '}'), 1, true)
  end)

  it('lets both writers write MAX_DEPTH levels and refuse one more', function()
    local max = json.MAX_DEPTH
    local t = lua_nested(max)
    assert.is_string(kb.jcs.encode(t))
    assert.equal(kb.jcs.encode(t), json.encode_line(t))
    local deep = lua_nested(max + 1)
    assert.is_false(pcall(kb.jcs.encode, deep))
    local v, err = json.encode_line(deep)
    assert.is_nil(v)
    assert.matches('deeper than ' .. max .. ' levels', err, 1, true)
  end)
end)
