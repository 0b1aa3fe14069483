-- SHA-256 (FIPS 180-2 known answers), file hashing and kb.digest.
local kb = require "kluabench"
local json = require "kluabench.util.json"

-- Expected hashes: FIPS 180-2 appendix B, and `sha256sum` for the others.
local EMPTY = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
local ABC = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
local TWO_BLOCKS = "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
local MILLION_A = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"
-- printf 'b%.0s' $(seq 200000) | sha256sum: 200000 bytes, more than three 64 KiB chunks
local B200K = "31731ec46c3318e622490d1102d6a5f2d0b33995b35ede8cdbbb76252ee6d87b"

local function write_temp(bytes)
  local path = os.tmpname()
  local f = assert(io.open(path, "wb"))
  assert(f:write(bytes))
  assert(f:close())
  return path
end

describe("kb.sha256", function()
  it("matches the FIPS 180-2 vectors", function()
    assert.are.equal(EMPTY, kb.sha256(""))
    assert.are.equal(ABC, kb.sha256("abc"))
    assert.are.equal(TWO_BLOCKS, kb.sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"))
    assert.are.equal(MILLION_A, kb.sha256(string.rep("a", 1000000)))
  end)

  it("hashes every byte, embedded zeros included", function()
    assert.are_not.equal(kb.sha256("a\0b"), kb.sha256("a\0c"))
    assert.are_not.equal(kb.sha256("a"), kb.sha256("a\0"))
    assert.are.equal(B200K, kb.sha256(string.rep("b", 200000)))
  end)

  it("returns 64 lowercase hex digits", function()
    assert.is_truthy(kb.sha256("x"):match("^[0-9a-f]+$"))
    assert.are.equal(64, #kb.sha256("x"))
  end)

  it("rejects what is not a string", function()
    assert.has_error(function() kb.sha256() end)
    assert.has_error(function() kb.sha256(12) end)
    assert.has_error(function() kb.sha256({}) end)
    local ok, err = pcall(kb.sha256, nil)
    assert.is_false(ok)
    assert.matches("string expected", err)
  end)
end)

describe("kb.sha256_file", function()
  it("hashes a file like kb.sha256 hashes its bytes", function()
    local path = write_temp("abc")
    assert.are.equal(ABC, kb.sha256_file(path))
    os.remove(path)
  end)

  it("streams files larger than one chunk", function()
    local path = write_temp(string.rep("b", 200000))
    assert.are.equal(B200K, kb.sha256_file(path))
    os.remove(path)
    path = write_temp(string.rep("a", 1000000))
    assert.are.equal(MILLION_A, kb.sha256_file(path))
    os.remove(path)
  end)

  it("hashes an empty file and one of exactly 64 KiB", function()
    local path = write_temp("")
    assert.are.equal(EMPTY, kb.sha256_file(path))
    os.remove(path)
    local bytes = string.rep("\255\0", 32768)
    path = write_temp(bytes)
    assert.are.equal(kb.sha256(bytes), kb.sha256_file(path))
    os.remove(path)
  end)

  it("returns nil and a message for a missing file", function()
    local path = os.tmpname()
    os.remove(path)
    local hex, err = kb.sha256_file(path)
    assert.is_nil(hex)
    assert.are.equal(path .. ": No such file or directory", err)
  end)

  it("returns nil and a message for a directory", function()
    local hex, err = kb.sha256_file("/")
    assert.is_nil(hex)
    assert.are.equal("/: Is a directory", err)
  end)

  it("rejects a missing path argument", function()
    assert.has_error(function() kb.sha256_file() end)
  end)
end)

describe("kb.digest", function()
  it("is sha256: and the hash of the canonical JSON", function()
    -- printf '%s' '{"a":1}' | sha256sum
    assert.are.equal("sha256:015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862",
      kb.digest({ a = 1 }))
    -- printf '%s' '{"spec":{"a":null,"b":[1,2.5,"x"]}}' | sha256sum
    assert.are.equal("sha256:1d695691ef543e52e9c217dcabb5b49621992942295a4501b5f74bd17c7ee9a0",
      kb.digest({ spec = { b = { 1, 2.5, "x" }, a = kb.jcs.null } }))
    -- printf '%s' '[]' | sha256sum
    assert.are.equal("sha256:4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945",
      kb.digest(kb.jcs.array {}))
  end)

  it("agrees with kb.sha256 of kb.jcs.encode for any value", function()
    local v = { z = { 1, 2, 3 }, a = "é", m = { x = true, y = 1e21 } }
    assert.are.equal("sha256:" .. kb.sha256(kb.jcs.encode(v)), kb.digest(v))
  end)

  it("does not depend on key insertion order or spacing", function()
    local a, b = {}, {}
    a.x, a.y, a.z = 1, 2, 3
    b.z, b.y, b.x = 3, 2, 1
    assert.are.equal(kb.digest(a), kb.digest(b))
    assert.are.equal(kb.digest(a), kb.digest(json.decode(' { "z" : 3 , "x" : 1.0, "y": 2e0 } ')))
  end)

  it("raises the encoder's error for what JSON cannot hold", function()
    local ok, err = pcall(kb.digest, { f = print })
    assert.is_false(ok)
    assert.matches("value at $.f is a function", err, 1, true)
    assert.has_error(function() kb.digest(0 / 0) end)
  end)
end)
