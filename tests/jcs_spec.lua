-- kb.jcs: RFC 8785 canonical JSON (encode, markers). The canonical form of a
-- JSON text is kb.jcs.encode(json.decode(text)): lua-cjson (through the
-- stdlib's json.decode) reads, kb.jcs writes; canon() below is that.
local kb = require "kluabench"
local json = require "kluabench.util.json"
local jcs = kb.jcs

local DATA = (debug.getinfo(1, "S").source:match("^@(.*)[/\\]") or ".") .. "/fixtures/jcs/"

-- The double whose IEEE 754 bits are the 16 hex digits h.
local function from_bits(h)
  return (string.unpack(">d", (h:gsub("..", function(c) return string.char(tonumber(c, 16)) end))))
end

-- The error message of f(...), failing the test when f succeeds.
local function error_of(f, ...)
  local ok, err = pcall(f, ...)
  assert(not ok, "expected an error")
  return tostring(err)
end

-- The canonical form of a JSON text; raises with json.decode's message when it is not JSON.
local function canon(text)
  local v, err = json.decode(text)
  if v == nil then error("json.decode: " .. tostring(err), 0) end
  return jcs.encode(v)
end

local function nested(depth, open, close)
  return string.rep(open, depth) .. string.rep(close, depth)
end

describe("canonical form of a JSON text: kb.jcs.encode(json.decode(text))", function()
  it("writes the RFC 8785 section 3.2.2 kind of structure byte for byte", function()
    -- Expected output worked out by hand from RFC 8785: members sorted,
    -- whitespace gone, numbers in ES6 form, minimal string escapes.
    local input = [[
{
  "string": "\u20ac\u0024\u000F\u000aB'\u0043\u0022\u005c\\\"\/\u007f\u2028",
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001,
              -0.0, 1e-7, 123456789e12],
  "literals": [null, true, false],
  "nested": { "b": [ ], "a": { } }
}
]]
    local expected = [[{"literals":[null,true,false],"nested":{"a":{},"b":[]},]]
      .. [["numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27,0,1e-7,123456789000000000000],]]
      .. [["string":"€$\u000f\nB'C\"\\\\\"/]] .. "\127\u{2028}" .. [["}]]
    assert.are.equal(expected, canon(input))
  end)

  it("sorts keys by UTF-16 code units, not by UTF-8 bytes or code points", function()
    local input = [[{"\u20ac":"euro","\r":"cr","\ufb33":"dalet","1":"one","\ud83d\ude00":"grin",
      "\u0080":"ctl","\u00f6":"o","\ue000":"private","\uffff":"last","\ud800\udc00":"linear b"}]]
    -- U+10000 and U+1F600 are surrogate pairs (0xD800.., 0xD83D..), so they
    -- sort before U+E000, U+FB33 and U+FFFF although UTF-8 puts them after.
    local expected = '{"\\r":"cr","1":"one","\u{80}":"ctl","ö":"o","€":"euro",'
      .. '"\u{10000}":"linear b","😀":"grin","\u{e000}":"private","\u{fb33}":"dalet","\u{ffff}":"last"}'
    assert.are.equal(expected, canon(input))
  end)

  it("sorts prefixes first and compares later characters", function()
    assert.are.equal('{"":0,"a":1,"aa":2,"ab":3,"b":4,"ba":5}',
      canon('{"ba":5,"b":4,"ab":3,"aa":2,"a":1,"":0}'))
    assert.are.equal('{"A":1,"Z":2,"a":3,"z":4}', canon('{"z":4,"a":3,"Z":2,"A":1}'))
    assert.are.equal('{"a\\u0000":1,"a\\u0001":2,"a\\u001f":3,"a ":4}',
      canon('{"a ":4,"a\\u001f":3,"a\\u0001":2,"a\\u0000":1}'))
  end)

  it("sorts nested objects and keeps array order", function()
    assert.are.equal('[{"a":[3,2,1],"b":{"c":0,"d":0}},{"x":0,"y":0}]',
      canon('[ {"b":{"d":0,"c":0}, "a":[3,2,1]}, {"y":0,"x":0} ]'))
  end)

  it("escapes only what RFC 8785 escapes", function()
    local escapes = { [8] = "\\b", [9] = "\\t", [10] = "\\n", [12] = "\\f", [13] = "\\r" }
    for c = 0, 31 do
      local want = escapes[c] or string.format("\\u%04x", c)
      assert.are.equal('"' .. want .. '"', canon(string.format('"\\u%04X"', c)))
    end
    assert.are.equal([["\"\\/"]], canon([["\"\\\/"]]))
    assert.are.equal('"\127"', canon('"\\u007f"'))
    assert.are.equal('"é€😀\u{2028}\u{2029}\u{ffff}\u{10ffff}"',
      canon('"\\u00e9\\u20AC\\uD83D\\uDE00\\u2028\\u2029\\uffff\\udbff\\udfff"'))
    assert.are.equal('"é€😀"', canon('"é€😀"'))
    assert.are.equal('"<>&\'"', canon('"\\u003c\\u003e\\u0026\\u0027"'))
  end)

  it("removes whitespace and keeps literals", function()
    assert.are.equal("[true,false,null]", canon(" \t\r\n[ true ,\tfalse\n,null\r] \n"))
    assert.are.equal("true", canon("true"))
    assert.are.equal("null", canon(" null "))
    assert.are.equal('""', canon('""'))
    assert.are.equal("{}", canon(" { } "))
    assert.are.equal("[]", canon("[\n]"))
  end)

  it("matches an independent implementation on generated documents", function()
    local n = 0
    local f = assert(io.open(DATA .. "canonical.txt"))
    while true do
      local input, expected = f:read("l"), f:read("l")
      if not input then break end
      assert.are.equal(expected, canon(input))
      assert.are.equal(expected, canon(expected))
      n = n + 1
    end
    f:close()
    assert.is_true(n >= 50)
  end)
end)

describe("kb.jcs number serialization", function()
  -- Expected: ECMAScript Number.prototype.toString (checked with node).
  local cases = {
    { 0, "0" }, { -0.0, "0" }, { 1.0, "1" }, { -1.0, "-1" }, { 100.0, "100" },
    { 0.5, "0.5" }, { -1.5, "-1.5" }, { 0.1, "0.1" }, { 0.1 + 0.2, "0.30000000000000004" },
    { 1 / 3, "0.3333333333333333" }, { 2 / 3, "0.6666666666666666" },
    { 123.456, "123.456" }, { 4.35, "4.35" },
    { 2.0 ^ 53, "9007199254740992" }, { 2.0 ^ 63, "9223372036854776000" },
    { 2.0 ^ 64, "18446744073709552000" }, { 12345678901234567890.0, "12345678901234567000" },
    { 1e15 + 0.3, "1000000000000000.2" }, { 4503599627370497.5, "4503599627370498" },
    { 1e20, "100000000000000000000" }, { 1e21, "1e+21" }, { 1e23, "1e+23" },
    { 1e100, "1e+100" }, { 1.5e300, "1.5e+300" },
    { 1.7976931348623157e308, "1.7976931348623157e+308" },
    { -1.7976931348623157e308, "-1.7976931348623157e+308" },
    { 1e-6, "0.000001" }, { 0.0000015, "0.0000015" }, { 0.000001234, "0.000001234" },
    { 1e-5, "0.00001" }, { 1e-7, "1e-7" }, { -1e-7, "-1e-7" }, { 1.5e-7, "1.5e-7" },
    { 1234.5e-10, "1.2345e-7" }, { 123e-20, "1.23e-18" },
    { 2.2250738585072014e-308, "2.2250738585072014e-308" },
    { 5e-324, "5e-324" }, { -5e-324, "-5e-324" }, { 1.5e-323, "1.5e-323" },
  }

  -- IEEE 754 bit patterns, the RFC 8785 appendix B kind of boundary cases.
  local bits = {
    { "0000000000000000", "0" }, { "8000000000000000", "0" },
    { "0000000000000001", "5e-324" }, { "8000000000000001", "-5e-324" },
    { "7fefffffffffffff", "1.7976931348623157e+308" },
    { "ffefffffffffffff", "-1.7976931348623157e+308" },
    { "4340000000000000", "9007199254740992" }, { "c340000000000000", "-9007199254740992" },
    { "4430000000000000", "295147905179352830000" },
    { "44b52d02c7e14af5", "9.999999999999997e+22" }, { "44b52d02c7e14af6", "1e+23" },
    { "44b52d02c7e14af7", "1.0000000000000001e+23" },
    { "444b1ae4d6e2ef4e", "999999999999999700000" }, { "444b1ae4d6e2ef4f", "999999999999999900000" },
    { "444b1ae4d6e2ef50", "1e+21" },
    { "3eb0c6f7a0b5ed8c", "9.999999999999997e-7" }, { "3eb0c6f7a0b5ed8d", "0.000001" },
    { "41b3de4355555553", "333333333.3333332" }, { "41b3de4355555554", "333333333.33333325" },
    { "41b3de4355555555", "333333333.3333333" }, { "41b3de4355555556", "333333333.3333334" },
    { "41b3de4355555557", "333333333.33333343" },
    { "becbf647612f3696", "-0.0000033333333333333333" },
    { "43143ff3c1cb0959", "1424953923781206.2" },
    -- at powers of two the correctly rounded 16 digits do not read back,
    -- but the shortest digits on the other side of the value do
    { "5790000000000000", "6.156563468186638e+113" },
  }

  it("encodes floats in ES6 form", function()
    for _, c in ipairs(cases) do
      assert.are.equal(c[2], jcs.encode(c[1]), string.format("%.17g", c[1]))
    end
  end)

  it("encodes bit patterns in ES6 form", function()
    for _, c in ipairs(bits) do
      assert.are.equal(c[2], jcs.encode(from_bits(c[1])), c[1])
    end
  end)

  it("canonicalizes number literals to the same form", function()
    for _, c in ipairs(cases) do
      local literal = string.format("%.17g", c[1])
      assert.are.equal(c[2], canon(literal), literal)
      assert.are.equal(c[2], canon(c[2]), c[2])
    end
    for _, c in ipairs(bits) do
      assert.are.equal(c[2], canon(string.format("%.17g", from_bits(c[1]))), c[1])
    end
  end)

  it("rounds literals to the nearest double", function()
    assert.are.equal("9007199254740992", canon("9007199254740993"))
    assert.are.equal("-9007199254740992", canon("-9007199254740993"))
    assert.are.equal("333333333.3333333", canon("333333333.33333329"))
    assert.are.equal("1e+21", canon("999999999999999999999"))
    assert.are.equal("123456789012345680000", canon("123456789012345678901"))
    assert.are.equal("1e+308", canon("1e308"))
    assert.are.equal("0.1", canon("0." .. string.rep("0", 50) .. "1e50"))
    assert.are.equal("1", canon("0." .. string.rep("9", 400)))
    assert.are.equal("0", canon("1e-400"))  -- underflow is 0, not an error
    assert.are.equal("0", canon("-0"))
    assert.are.equal("0", canon("-0.0e-5"))
    assert.are.equal("100", canon("1E2"))
    assert.are.equal("100", canon("1e+2"))
    assert.are.equal("0.01", canon("1E-2"))
    assert.are.equal("2.5", canon("25e-1"))
  end)

  it("encodes Lua integers exactly up to 2^53", function()
    assert.are.equal("0", jcs.encode(0))
    assert.are.equal("-17", jcs.encode(-17))
    assert.are.equal("9007199254740992", jcs.encode(9007199254740992))
    assert.are.equal("-9007199254740992", jcs.encode(-9007199254740992))
    assert.are.equal("1000000000000000", jcs.encode(10 ^ 15 // 1))
  end)

  it("does not depend on the C locale's decimal point", function()
    -- lua-cjson reads numbers with the decimal point it saw when it was loaded (the C locale's,
    -- as kluabench never changes it): decode first, then write under the comma locale
    local v = json.decode("[1.5, 1e-6, 0.00000015, 333333333.33333329]")
    local old = os.setlocale(nil, "numeric")
    local found
    for _, name in ipairs({ "de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "fr_FR.utf8", "de_DE" }) do
      found = found or os.setlocale(name, "numeric")
    end
    if not found then return end -- no comma locale installed here
    finally(function() os.setlocale(old, "numeric") end)
    assert.are.equal("[1.5,0.000001,1.5e-7,333333333.3333333]", jcs.encode(v))
    assert.are.equal("2.5", jcs.encode(2.5))
  end)

  it("matches an independent implementation on 1000 doubles", function()
    local n = 0
    for line in io.lines(DATA .. "numbers.txt") do
      local h, want = line:match("^(%x+) (%S+)$")
      local x = from_bits(h)
      assert.are.equal(want, jcs.encode(x), h)
      if x ~= 0 then assert.are.equal("-" .. want, jcs.encode(-x), h) end
      assert.are.equal(want, canon(string.format("%.17g", x)), h)
      n = n + 1
    end
    assert.is_true(n >= 1000)
  end)
end)

describe("text that has no canonical form", function()
  -- json.decode (lua-cjson) refuses what is not JSON: nil and "line L, column C: why".
  local refused = {
    -- structure
    { "", "line 1, column 1: " },
    { "  \n", "line 2, column 1: " },
    { "{", "Expected object key string" },
    { "[", "Expected value" },
    { "[1", "Expected comma or array end" },
    { '{"a"', "Expected colon" },
    { '{"a" 1}', "line 1, column 6: Expected colon" },
    { '{"a":1 "b":2}', "Expected comma or object end" },
    { "[1 2]", "line 1, column 4: Expected comma or array end" },
    { "[1,2,,3]", "line 1, column 6: Expected value" },
    { "[1,]", "Expected value" },
    { '{"a":1,}', "Expected object key string" },
    { "{a:1}", "Expected object key string" },
    { "{1:1}", "Expected object key string" },
    { "['a']", "Expected value" },
    { "[1}", "Expected comma or array end" },
    { '{"a":1]', "Expected comma or object end" },
    { "1 2", "line 1, column 3: Expected the end" },
    { "{}x", "Expected the end" },
    { "[]]", "Expected the end" },
    { "null0", "Expected the end" },
    { "[1,\f2]", "Expected value" },
    { "[1,\v2]", "Expected value" },
    { "[1,\u{a0}2]", "Expected value" },
    { "\0", "NUL byte" },
    { "[1]\0", "line 1, column 4: a NUL byte" },
    { '{"a":1}\0{"b":2}', "a NUL byte" },
    -- literals
    { "tru", "Expected value" },
    { "nul", "Expected value" },
    { "fals", "Expected value" },
    { "True", "Expected value" },
    { "undefined", "Expected value" },
    { "NaN", "Expected value" },
    { "[NaN]", "line 1, column 2: Expected value" },
    { "Infinity", "Expected value" },
    { "-Infinity", "invalid number" },
    -- numbers
    { "01", "invalid number" },
    { "-01", "invalid number" },
    { "00", "invalid number" },
    { "-", "invalid number" },
    { "-a", "invalid number" },
    { "+1", "Expected value" },
    { ".5", "Expected value" },
    { "1e", "Expected the end" },
    { "1e+", "Expected the end" },
    { "1E-x", "Expected the end" },
    { "0x10", "invalid number" },
    { "1.5.3", "Expected the end" },
    -- strings
    { '"abc', "unexpected end of string" },
    { '"abc\\', "invalid escape code" },
    { '"\\x"', "invalid escape code" },
    { '"\\U0041"', "invalid escape code" },
    { '"\\\'"', "invalid escape code" },
    { '"\\u12"', "invalid unicode escape code" },
    { '"\\u12G4"', "invalid unicode escape code" },
    { '"\\u"', "invalid unicode escape code" },
    { '"\\ud800"', "invalid unicode escape code" },
    { '"\\uD800x"', "invalid unicode escape code" },
    { '"\\ud800\\u0041"', "invalid unicode escape code" },
    { '"\\ud800\\ud800"', "invalid unicode escape code" },
    { '"\\udc00"', "invalid unicode escape code" },
    { '"\\ude00\\ud83d"', "invalid unicode escape code" },
    { '"\0"', "UTF-16" },
  }

  for _, c in ipairs(refused) do
    local input, want = c[1], c[2]
    it(string.format("json.decode refuses %q", input:sub(1, 40)), function()
      local v, err = json.decode(input)
      assert.is_nil(v)
      assert.matches("^line %d+, column %d+: ", err)
      assert.matches(want, err, 1, true)
      assert.matches(want, error_of(canon, input), 1, true)
    end)
  end

  -- What json.decode reads but JSON cannot carry, or carries only as valid UTF-8: kb.jcs.encode
  -- refuses it, naming where it is.
  local unwritable = {
    { "1e400", "value at $ is inf (not representable in JSON)" },
    { "-1e400", "value at $ is -inf" },
    { "[1.8e308]", "value at $[1] is inf" },
    { "1" .. string.rep("0", 400), "is inf" },
    { '"\255"', "value at $ is a string that is not valid UTF-8 (byte 1)" },
    { '"\128"', "not valid UTF-8 (byte 1)" },
    { '"\192\175"', "not valid UTF-8" },            -- overlong '/'
    { '"\224\128\175"', "not valid UTF-8" },        -- overlong
    { '"\237\160\128"', "not valid UTF-8" },        -- encoded surrogate
    { '"\244\144\128\128"', "not valid UTF-8" },    -- above U+10FFFF
    { '"\248\136\128\128\128"', "not valid UTF-8" },
    { '"\226\130"', "not valid UTF-8" },            -- truncated
    { '"ok\226\130x"', "not valid UTF-8 (byte 3)" },
    { '{"\255":1}', "has a key that is not valid UTF-8" },
  }

  for _, c in ipairs(unwritable) do
    local input, want = c[1], c[2]
    it(string.format("kb.jcs.encode refuses what json.decode reads from %q", input:sub(1, 40)), function()
      assert.is_not_nil(json.decode(input))
      local err = error_of(canon, input)
      assert.matches("kb.jcs.encode: ", err, 1, true)
      assert.matches(want, err, 1, true)
    end)
  end

  it("json.decode rejects what is not a string", function()
    assert.matches("string expected, got number", error_of(json.decode, 5))
    assert.matches("string expected, got nil", error_of(json.decode))
    assert.matches("string expected, got table", error_of(json.decode, {}))
  end)
end)

describe("kb.jcs nesting", function()
  it("accepts 1000 levels and rejects 1001", function()
    assert.are.equal(1000, jcs.MAX_DEPTH)
    assert.are.equal(jcs.MAX_DEPTH, json.MAX_DEPTH)
    assert.are.equal(nested(1000, "[", "]"), canon(nested(1000, "[", "]")))
    assert.are.equal(string.rep('{"a":', 999) .. "{}" .. string.rep("}", 999),
      canon(string.rep('{"a":', 999) .. "{}" .. string.rep("}", 999)))
    local v, err = json.decode(nested(1001, "[", "]"))
    assert.is_nil(v)
    assert.matches("nesting deeper than 1000 levels", err, 1, true)
  end)

  it("json.decode rejects 10^5-deep input with an error, not a crash", function()
    for _, text in ipairs({ nested(100000, "[", "]"), string.rep('{"a":', 100000) .. "1" .. string.rep("}", 100000),
      string.rep("[", 100000) }) do
      local v, err = json.decode(text)
      assert.is_nil(v)
      assert.matches("nesting deeper than 1000 levels", err, 1, true)
    end
  end)

  it("rejects 10^5-deep Lua values in encode", function()
    local root = {}
    local t = root
    for _ = 1, 100000 do
      t.a = {}
      t = t.a
    end
    assert.matches("kb.jcs.encode: value at $.a.a.a", error_of(jcs.encode, root), 1, true)
    assert.matches("is nested deeper than 1000 levels", error_of(jcs.encode, root), 1, true)
  end)

  it("encodes 1000 levels of Lua tables", function()
    local root = {}
    local t = root
    for _ = 2, 1000 do
      t[1] = {}
      t = t[1]
    end
    assert.are.equal(string.rep("[", 999) .. "{}" .. string.rep("]", 999), jcs.encode(root))
    t[1] = {}
    assert.matches("nested deeper than 1000 levels", error_of(jcs.encode, root))
  end)
end)

describe("kb.jcs.encode", function()
  it("encodes scalars", function()
    assert.are.equal("null", jcs.encode(nil))
    assert.are.equal("null", jcs.encode())
    assert.are.equal("null", jcs.encode(jcs.null))
    assert.are.equal("true", jcs.encode(true))
    assert.are.equal("false", jcs.encode(false))
    assert.are.equal("42", jcs.encode(42))
    assert.are.equal("42", jcs.encode(42.0))
    assert.are.equal("-2.5", jcs.encode(-2.5))
    assert.are.equal('"hi"', jcs.encode("hi"))
    assert.are.equal('""', jcs.encode(""))
    assert.are.equal('"a\\"b\\\\c\\n\\u0000é"', jcs.encode('a"b\\c\n\0é'))
  end)

  it("treats cjson.null as null", function()
    local ok, cjson = pcall(require, "cjson")
    if ok then
      assert.are.equal("null", jcs.encode(cjson.null))
      assert.are.equal("[null]", jcs.encode({ cjson.null }))
    end
  end)

  it("encodes sequences as arrays and string-keyed tables as sorted objects", function()
    assert.are.equal("[1,2,3]", jcs.encode({ 1, 2, 3 }))
    assert.are.equal('[1,"two",[3],{"four":4}]', jcs.encode({ 1, "two", { 3 }, { four = 4 } }))
    assert.are.equal("[1,null,3]", jcs.encode({ 1, jcs.null, 3 }))
    assert.are.equal('{"a":1,"b":[true],"c":{"d":null}}',
      jcs.encode({ c = { d = jcs.null }, b = { true }, a = 1 }))
    assert.are.equal('{"1":"one","2":"two"}', jcs.encode({ ["1"] = "one", ["2"] = "two" }))
    assert.are.equal('{"\\r":1,"😀":3,"\u{e000}":2}',
      jcs.encode({ ["\u{e000}"] = 2, ["😀"] = 3, ["\r"] = 1 }))
  end)

  it("encodes the empty table as {} unless marked", function()
    assert.are.equal("{}", jcs.encode({}))
    assert.are.equal("[]", jcs.encode(jcs.array {}))
    assert.are.equal("{}", jcs.encode(jcs.object {}))
    assert.are.equal("[]", jcs.encode(jcs.array()))
    assert.are.equal("{}", jcs.encode(jcs.object()))
    assert.are.equal('{"a":[],"b":{}}', jcs.encode({ a = jcs.array {}, b = {} }))
  end)

  it("markers are metatables and return the table", function()
    local t = {}
    assert.are.equal(t, jcs.array(t))
    assert.is_true(jcs.is_array(t))
    assert.is_not_nil(getmetatable(t))
    assert.are.equal(t, jcs.object(t))
    assert.is_false(jcs.is_array(t))
    assert.is_false(jcs.is_array({}))
    assert.is_false(jcs.is_array({ 1, 2 }))
    assert.is_false(jcs.is_array("x"))
    assert.is_false(jcs.is_array())
    assert.are.equal("[1,2]", jcs.encode(jcs.array { 1, 2 }))
    assert.are.equal('{"k":"v"}', jcs.encode(jcs.object { k = "v" }))
  end)

  it("refuses to replace a foreign metatable or mark a non-table", function()
    assert.matches("already has a metatable", error_of(jcs.array, setmetatable({}, {})))
    assert.matches("already has a metatable", error_of(jcs.object, setmetatable({}, {})))
    assert.matches("table expected, got number", error_of(jcs.array, 5))
  end)

  it("ignores other metatables when encoding", function()
    local t = setmetatable({ a = 1 }, { __index = function() return 2 end, __pairs = error })
    assert.are.equal('{"a":1}', jcs.encode(t))
  end)

  it("allows one table at several places (not a cycle)", function()
    local shared = { 1 }
    assert.are.equal('{"a":[1],"b":[1]}', jcs.encode({ a = shared, b = shared }))
    assert.are.equal("[[1],[1]]", jcs.encode({ shared, shared }))
  end)

  it("errors name the path of the bad value", function()
    local function f() end
    local cases = {
      { { spec = { metrics = { 1, 2, f } } }, "kb.jcs.encode: value at $.spec.metrics[3] is a function" },
      { f, "kb.jcs.encode: value at $ is a function" },
      { { ["a b"] = { co = coroutine.create(f) } }, 'value at $["a b"].co is a thread' },
      { { x = io.stdout }, "value at $.x is a userdata" },
      { { { { 0 / 0 } } }, "value at $[1][1][1] is NaN" },
      { { v = math.huge }, "value at $.v is inf" },
      { { v = -math.huge }, "value at $.v is -inf" },
      { { n = 9007199254740993 }, "value at $.n is the integer 9007199254740993, beyond +-2^53" },
      { { n = -9007199254740993 }, "beyond +-2^53" },
      { math.maxinteger, "not exactly representable" },
      { math.mininteger, "not exactly representable" },
      { { s = "\255" }, "value at $.s is a string that is not valid UTF-8 (byte 1)" },
      { { s = "ok\237\160\128" }, "not valid UTF-8 (byte 3)" },
      { { ["\255"] = 1 }, "has a key that is not valid UTF-8" },
      { { a = 1, [1] = 2 }, "value at $ is a table that mixes integer and string keys" },
      { { 1, nil, 3 }, "is a sparse array (its integer keys are not exactly 1..n)" },
      { { [2] = 1 }, "is a sparse array" },
      { { [0] = 1, 2 }, "is a sparse array" },
      { { [-1] = 1 }, "is a sparse array" },
      { { [1.5] = 1 }, "is a table with the non-integer number key 1.5" },
      { { [true] = 1 }, "is a table with a key of type boolean (object keys must be strings)" },
      { { [{}] = 1 }, "a key of type table" },
      { { list = jcs.array { x = 1 } }, "value at $.list is marked as an array but its keys are not exactly 1..n" },
      { jcs.array { 1, [3] = 3 }, "marked as an array" },
      { jcs.object { 1 }, "is marked as an object but has integer keys" },
    }
    for _, c in ipairs(cases) do
      assert.matches(c[2], error_of(jcs.encode, c[1]), 1, true)
    end
  end)

  it("detects cycles", function()
    local t = { list = {} }
    t.list[1] = t
    assert.matches("value at $.list[1] is a table that contains itself (a cycle)",
      error_of(jcs.encode, t), 1, true)
    local u = {}
    u.self = u
    assert.matches("value at $.self is a table that contains itself", error_of(jcs.encode, u), 1, true)
    -- a failed encode leaves nothing behind: the same tables encode later
    t.list[1] = 1
    assert.are.equal('{"list":[1]}', jcs.encode(t))
  end)

  it("uses the NULL light userdata as null, like cjson", function()
    assert.are.equal("userdata", type(jcs.null))
    assert.are.equal(jcs.null, json.decode("null"))
    local ok, cjson = pcall(require, "cjson")
    if ok then assert.are.equal(cjson.null, jcs.null) end
  end)
end)

describe("json.decode feeding kb.jcs.encode", function()
  it("reads integral numbers as integers and the rest as the nearest double", function()
    assert.are.equal("integer", math.type(json.decode("1")))
    assert.are.equal("integer", math.type(json.decode("-0")))
    assert.are.equal("integer", math.type(json.decode("1.0")))
    assert.are.equal("integer", math.type(json.decode("1e2")))
    assert.are.equal(100, json.decode("1e2"))
    assert.are.equal(-9007199254740991, json.decode("-9007199254740991"))
    assert.are.equal("float", math.type(json.decode("9007199254740993")))
    assert.are.equal(9007199254740992.0, json.decode("9007199254740993"))
    assert.are.equal(0.1, json.decode("0.1"))
    assert.are.equal(1e21, json.decode("1000000000000000000000"))
    assert.are.equal(true, json.decode("true"))
    assert.are.equal(false, json.decode(" false "))
    assert.are.equal(jcs.null, json.decode("null"))
    assert.are.equal("é😀\0/", json.decode('"\\u00e9\\ud83d\\ude00\\u0000\\/"'))
    assert.are.equal('"é😀\\u0000/"', canon('"\\u00e9\\ud83d\\ude00\\u0000\\/"'))
  end)

  it("reads arrays without holes, and [] as a marked array", function()
    local a = json.decode("[1, null, 3, null]")
    assert.are.equal(4, #a)
    assert.are.equal(jcs.null, a[2])
    assert.are.equal("[1,null,3,null]", jcs.encode(a))
    assert.is_true(jcs.is_array(json.decode("[]")))
    assert.are.equal("[]", canon("[]"))
    assert.are.equal('{"a":[],"b":{},"c":[[]]}', canon('{"c": [ [ ] ], "b": {}, "a": []}'))
  end)

  it("reads objects to string-keyed tables", function()
    local o = json.decode('{"b": {"c": [true]}, "a": 1, "1": "one"}')
    assert.is_false(jcs.is_array(o))
    assert.are.equal(1, o.a)
    assert.are.equal(true, o.b.c[1])
    assert.are.equal("one", o["1"])
    assert.is_nil(o[1])
    assert.are.equal('{"1":"one","a":1,"b":{"c":[true]}}', jcs.encode(o))
    assert.are.equal("{}", canon("{}"))
  end)

  it("round-trips: the canonical form is a fixed point", function()
    local texts = {
      '{"b":[1,2,{"c":null}],"a":"x"}', "[[],{},[{}],{\"\":[]}]", '"\\u001f\\u00e9"',
      "[0,-0,0.0,-0.0,1e-7,1E21,9007199254740993,123456789012345678901234567890]",
      '{"\\ud800\\udc00":1,"\\ue000":2,"\\u00ff":3}', '[true,false,null,"null"]',
      "-1.5e-300", '{"n":{"n":{"n":{"n":[1,[2,[3]]]}}}}',
    }
    local f = assert(io.open(DATA .. "canonical.txt"))
    for line in f:lines() do texts[#texts + 1] = line end
    f:close()
    for _, s in ipairs(texts) do
      local c = canon(s)
      assert.are.equal(c, canon(c))
    end
  end)

  it("round-trips generated Lua values", function()
    math.randomseed(8785)
    local keys = { "a", "b", "", "é", "😀", "\u{e000}", "\n", "1", "z" }
    local function gen(d)
      local r = math.random(d > 3 and 4 or 6)
      if r == 1 then return math.random(-2 ^ 53, 2 ^ 53) end
      if r == 2 then return (math.random() - 0.5) * 10.0 ^ math.random(-300, 300) end
      if r == 3 then return keys[math.random(#keys)] .. tostring(math.random(9)) end
      if r == 4 then return ({ true, false, jcs.null })[math.random(3)] end
      local t = {}
      if r == 5 then
        for i = 1, math.random(0, 4) do t[i] = gen(d + 1) end
        return jcs.array(t)
      end
      for _ = 1, math.random(0, 4) do t[keys[math.random(#keys)]] = gen(d + 1) end
      return t
    end
    for _ = 1, 300 do
      local v = gen(0)
      local s = jcs.encode(v)
      assert.are.equal(s, canon(s))
    end
  end)
end)
