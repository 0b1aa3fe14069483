--- kluabench.kernels.triton: Triton's compiled kernels, loaded and launched without
-- Python. Triton writes, per compiled kernel, a cubin and a metadata JSON
-- (and the PTX) into its cache; bench/triton_cubin.sh copies them into a
-- folder. This module reads the metadata (name, num_warps, num_ctas, shared
-- memory, the scratch sizes), loads the cubin with kb.cuda.load and launches
-- it the way Triton's own launcher does: block = 32 * num_warps threads, the
-- metadata's dynamic shared memory, and the hidden parameters recent Triton
-- versions append to every kernel (a global scratch pointer, since 3.3, and
-- a profile scratch pointer, since 3.5), passed as NULL when no scratch is
-- needed or as a buffer of size * programs bytes when it is.
local kb = require 'kluabench.core'

local M = {}
local args = require 'kluabench.util.args'
local json = require 'kluabench.util.json'

-- The most bytes of metadata JSON read (Triton writes a few kilobytes);
-- cubins and PTX are read up to kb.read_file's default bound (512 MiB).
M.MAX_METADATA_BYTES = 16 * 1024 * 1024

-- A file's bytes, or nil and why not (kb.read_file: regular files only, a
-- FIFO is never waited on, the size is bounded before reading).
local function read(path, max)
  local text, err = kb.read_file(path, max)
  if not text then return nil, (err:gsub('^' .. path:gsub('%p', '%%%0') .. ': ', '')) end
  return text
end

-- v as a message shows it: its value, with its type when it is not the
-- type expected (a string in quotes, escaped).
local function shown(v, expected)
  local text
  if type(v) == 'string' then
    text = "'" .. args.printable(v, 60) .. "'"
  elseif type(v) == 'number' and v ~= v then
    text = 'NaN'
  elseif math.type(v) == 'float' and v == math.floor(v) and math.abs(v) < 2 ^ 53 then
    text = string.format('%d', v)
  else
    text = tostring(v)
  end
  if type(v) ~= expected then text = type(v) .. ' ' .. text end
  return text
end

-- A whole number in [lo, hi] (hi may be nil), as JSON decodes it.
local function whole(v, lo, hi)
  return type(v) == 'number' and v == math.floor(v) and v >= lo and (hi == nil or v <= hi) and v < 2 ^ 53
end

-- Checks the fields the launch depends on; raises naming the field (without a position: the public
-- functions add their caller's).
local function check_metadata(meta, file)
  local function bad(field, what) error(string.format("read_metadata: %s: '%s' must be %s, got %s", file, field, what,
    shown(meta[field], what:find('string', 1, true) and 'string' or 'number')), 0) end
  if type(meta.name) ~= 'string' or not meta.name:match('^[%a_$][%w_$]*$') then
    bad('name', 'a kernel name (a string)')
  end
  if not whole(meta.num_warps, 1, 32) then bad('num_warps', 'a whole number from 1 to 32') end
  if meta.num_ctas ~= nil and not whole(meta.num_ctas, 1) then bad('num_ctas', 'a whole number >= 1') end
  for _, f in ipairs { 'shared', 'global_scratch_size', 'profile_scratch_size' } do
    if meta[f] ~= nil and not whole(meta[f], 0) then bad(f, 'a whole number of bytes >= 0') end
  end
end

--- The parameters of a PTX entry as a signature ("ptr, i32, f32").
--
-- @signature triton.ptx_signature(ptx [, name]) -> signature, count
-- @example
--   print(triton.ptx_signature(".entry k(\n.param .u64 .ptr .global .align 1 k_param_0,\n.param .u32 k_param_1\n)"))
function M.ptx_signature(ptx, name)
  args.check('triton.ptx_signature', 1, ptx, 'string', 'PTX text')
  args.check('triton.ptx_signature', 2, name, 'string|nil', 'kernel name')
  local pat = name and ('%.entry%s+' .. name:gsub('%p', '%%%0') .. '%s*%((.-)%)') or '%.entry%s+[%w_$]+%s*%((.-)%)'
  local params = ptx:match(pat)
  if not params then return nil, 'no .entry ' .. tostring(name or '') .. ' in the PTX' end
  local map = { u8 = 'u8', s8 = 'i8', b8 = 'u8', u16 = 'u16', s16 = 'i16', b16 = 'u16', f16 = 'f16',
    u32 = 'i32', s32 = 'i32', b32 = 'i32', f32 = 'f32', u64 = 'i64', s64 = 'i64', b64 = 'i64', f64 = 'f64' }
  local out = {}
  for decl in params:gmatch('%.param[^,]+') do
    local ty = decl:match('%.param%s+%.(%w+)')
    out[#out + 1] = decl:find('.ptr', 1, true) and 'ptr' or map[ty] or ty
  end
  return table.concat(out, ', '), #out
end

-- read_metadata's work; raises without a position (read_metadata and load add their caller's).
local function metadata_of(path)
  local base = path:gsub('%.json$', ''):gsub('%.cubin$', '')
  local text, err = read(base .. '.json', M.MAX_METADATA_BYTES)
  if not text then error("read_metadata: cannot read " .. base .. ".json: " .. tostring(err), 0) end
  local meta, why = json.decode(text)
  if meta == nil then error("read_metadata: " .. base .. ".json is not JSON: " .. tostring(why), 0) end
  if type(meta) ~= 'table' or json.table_kind(meta) ~= 'object' then
    error("read_metadata: " .. base .. ".json is not a JSON object: not Triton metadata", 0)
  end
  for _, f in ipairs { 'name', 'num_warps' } do
    if meta[f] == nil then error("read_metadata: " .. base .. ".json has no '" .. f .. "': not Triton metadata", 0) end
  end
  check_metadata(meta, base .. '.json')
  -- the PTX is named when something is there; load reads it (and says why it cannot)
  local ptx = kb.stat(base .. '.ptx', true) and (base .. '.ptx') or nil
  return meta, base .. '.cubin', ptx
end

--- Triton's metadata JSON (name, num_warps, shared, scratch sizes, ...).
--
-- path: the .json, or the .cubin beside it. Returns metadata, the cubin's path, the PTX's path (or
-- nil).
--
-- @signature triton.read_metadata(path) -> metadata, cubin_path, ptx_path
-- @example
--   local dir = os.tmpname(); os.remove(dir); assert(kb.mkdir(dir))
--   local f = assert(io.open(dir .. "/rope_kernel.json", "w")) -- what Triton's cache holds beside the .cubin
--   f:write('{"name": "rope_kernel", "num_warps": 4, "shared": 0}'); f:close()
--   local meta, cubin = triton.read_metadata(dir .. "/rope_kernel.json")
--   print(meta.name, meta.num_warps) --> rope_kernel  4
--   kb.remove_tree(dir)
function M.read_metadata(path)
  if type(path) ~= 'string' then error("bad argument #1 to 'read_metadata' (path expected)", 2) end
  local ok, meta, cubin, ptx = pcall(metadata_of, path)
  if not ok then error(meta, 2) end -- at the caller's line, not this file's
  return meta, cubin, ptx
end

local TritonKernel = {}
TritonKernel.__index = TritonKernel

--- A Triton kernel from its cubin and metadata JSON; tk:launch(grid, args) launches it.
--
-- path: the .json or the .cubin beside it. signature: the compiled parameters without the hidden
-- scratch pointers (default: read from the .ptx beside it). The launch uses block = 32 * num_warps
-- and the metadata's shared memory and appends the global and profile scratch pointers recent
-- Triton versions add. tk.kernel is the kluabench.Kernel; tk:info() is for records.
--
-- @signature triton.load(path [, signature]) -> TritonKernel
-- @example
--   local tk = triton.load("add_kernel.json") -- Triton's tutorial add_kernel, copied from ~/.triton/cache
--   local n = 98432
--   local x, y, out = kb.randn({n}, "f32", 1), kb.randn({n}, "f32", 2), kb.empty({n}, "f32")
--   tk:launch((n + 1023) // 1024, {x, y, out, n}) -- BLOCK_SIZE 1024 is compiled in
function M.load(path, signature)
  args.check('triton.load', 1, path, 'string', 'path of the kernel\'s .json or .cubin')
  local ok, meta, cubin, ptx_path = pcall(metadata_of, path)
  if not ok then error(meta, 2) end -- at the caller's line, not this file's
  local hidden = {}
  if meta.global_scratch_size ~= nil then hidden[#hidden + 1] = 'global_scratch' end
  if meta.profile_scratch_size ~= nil then hidden[#hidden + 1] = 'profile_scratch' end
  local ptx, perr
  if ptx_path then
    ptx, perr = read(ptx_path)
    if not ptx then error("load: cannot read " .. ptx_path .. ': ' .. perr, 2) end
  end
  local full
  if signature then
    full = signature .. string.rep(', ptr', #hidden)
  elseif ptx then
    full = assert(M.ptx_signature(ptx, meta.name))
  else
    error("load: no signature given and no PTX beside " .. cubin .. " to read it from", 2)
  end
  if ptx then
    local want, n = M.ptx_signature(ptx, meta.name)
    if n and #kb.cuda.parse_signature(full) ~= n then
      error(string.format("load: the signature has %d parameters with the %d hidden ones, the PTX entry %s has %d: %s",
        #kb.cuda.parse_signature(full), #hidden, meta.name, n, want), 2)
    end
  end
  if (meta.num_ctas or 1) ~= 1 then
    error("load: " .. meta.name .. " uses num_ctas = " .. tostring(meta.num_ctas) .. ' (thread block clusters), '
      .. 'which kernel:launch does not support', 2)
  end
  local module = kb.cuda.load(cubin)
  local self = setmetatable({
    metadata = meta, module = module, kernel = module:kernel(meta.name, full), hidden = hidden,
    block = 32 * meta.num_warps, shared = meta.shared or 0, nvisible = #kb.cuda.parse_signature(full) - #hidden,
    scratch = {}, args = {}, opts = {},
  }, TritonKernel)
  self.opts.block, self.opts.shared, self.opts.args = self.block, self.shared, self.args
  return self
end

-- The scratch buffer `which` for a grid of `programs` (a tensor grown as
-- needed, or 0 for NULL when the kernel needs none).
function TritonKernel:scratch_ptr(which, programs)
  local size = self.metadata[which .. '_size'] or 0
  if size == 0 then return 0 end
  local bytes = size * programs
  local t = self.scratch[which]
  if not t or t:nbytes() < bytes then
    if t then t:free() end
    t = kb.empty({ (bytes + 3) // 4 }, 'f32')
    self.scratch[which] = t
  end
  return t
end

--- Launches on the engine's stream. grid: an integer or {x [, y [, z]]};
-- args: the visible parameters, in order (tensors, integers, numbers).
function TritonKernel:launch(grid, args)
  if #args ~= self.nvisible then
    error(string.format("bad argument #2 to 'launch' (%d arguments given, %s takes %d)", #args,
      self.metadata.name, self.nvisible), 2)
  end
  local a = self.args
  for i = 1, self.nvisible do a[i] = args[i] end
  local programs = type(grid) == 'table' and (grid[1] or 1) * (grid[2] or 1) * (grid[3] or 1) or grid
  for i, which in ipairs(self.hidden) do a[self.nvisible + i] = self:scratch_ptr(which, programs) end
  self.opts.grid = grid
  self.kernel:launch(self.opts)
end

--- What records need (record.user_implementation): kernel:info() with the
-- Triton metadata that decides the launch.
function TritonKernel:info()
  local i = self.kernel:info()
  i.triton = { name = self.metadata.name, num_warps = self.metadata.num_warps, num_stages = self.metadata.num_stages,
    shared = self.metadata.shared, hash = self.metadata.hash, hidden = self.hidden }
  return i
end

return M
