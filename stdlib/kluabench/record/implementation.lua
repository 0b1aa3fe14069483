--- ImplementationRevision documents: what identifies the code a provider
-- runs, in kernelindex's fields (implementation-revision.v1alpha1).
--
-- Three kinds of code, three builders:
--   builtin{...}  a kernel built into kluabench (kernels/*.cu and its CPU
--                 twin): the SHA-256 of its source files as the revision's
--                 treeDigest, its entry point as callable.symbol, the build's
--                 compile options as a build variant, the targets as
--                 support.hardwareArchitectures
--   user{...}     a user kernel (NVRTC source, cubin/PTX/fatbin, Triton, a
--                 plugin), from its info() table: the SHA-256 of the source or
--                 binary as source.contentDigest, the NVRTC options and arch
--   script{...}   neither declared: the benchmark script itself (its SHA-256),
--                 the provider's name, so that two scripts or two providers
--                 never share a digest, and the user code the process loaded
--                 (kb.loaded_code), so that changing a kernel the script
--                 compiles or loads changes the digest
-- Every one names its OperationSpec by digest (operation.specDigest). Two
-- different kernels never share a revision: the source digest, the symbol,
-- the options or the arch differ.
local json = require 'kluabench.util.json'
local names = require 'kluabench.record.names'
local operation = require 'kluabench.record.operation'

local M = {}
local args = require 'kluabench.util.args'

M.API_VERSION = 'kernelindex.dev/v1alpha1'

local function core() return require 'kluabench.core' end

local function sorted_unique(list)
  local seen, out = {}, {}
  for _, v in ipairs(list or {}) do
    if type(v) == 'string' and v ~= '' and not seen[v] then seen[v], out[#out + 1] = true, v end
  end
  table.sort(out)
  return json.array(out)
end

local function basename(path) return (tostring(path):match('([^/]+)$')) end

local function check_digest(fname, d)
  if type(d) ~= 'string' or not d:match('^sha256:%x+$') then
    error(string.format("bad argument #1 to '%s' (field 'operation_digest' must be \"sha256:...\")", fname), 3)
  end
end

local function document(name, title, spec, extra_meta)
  local meta = { name = name, title = title and title:sub(1, 200) or nil }
  for k, v in pairs(extra_meta or {}) do meta[k] = v end
  return { apiVersion = M.API_VERSION, kind = 'ImplementationRevision', metadata = meta, spec = spec }
end

-- "sha256:<hex>" of a {path = "sha256:<hex>"} listing (JCS of it), or nil.
local function tree_digest(sources)
  if not sources or next(sources) == nil then return nil end
  local k = core()
  return 'sha256:' .. k.sha256(k.jcs.encode(sources))
end

--- The dtypes of a declaration as kernelindex tokens, sorted (support.dtypes).
--
-- @signature implementation.dtype_tokens(dtypes) -> list
-- @example
--   print(table.concat(implementation.dtype_tokens({"f32", "bf16"}), ","))
function M.dtype_tokens(dtypes)
  args.check('implementation.dtype_tokens', 1, dtypes, 'table|nil', 'list of dtypes')
  local out = {}
  for i, d in ipairs(dtypes or {}) do out[i] = operation.dtype_token(d) end
  return sorted_unique(out)
end

--- The ImplementationRevision of a built-in kernel.
--
-- o: operation_digest, provider, kernel (the record's kernel name), backend ("cuda" | "cpu"),
-- symbol (the entry point), path (its source file), language ("cuda" | "c"), sources ({path =
-- "sha256:<hex>"}: the files of the kernel, default record.kernel_sources(kernel)), dtypes
-- (kluabench names), build (kb.build_info()), version (kb.version).
--
-- @signature implementation.builtin{operation_digest, provider, kernel, backend, symbol, path, ...} -> document
-- @example
--   local _, op = record.workload{kernel = "llama4_rope", dtype = "bf16", parameters = {hidden = 512, seq = 64, q_heads = 8, kv_heads = 8}}
--   local d = implementation.builtin{operation_digest = record.digest(op), provider = "fused",
--     kernel = "llama4_rope", backend = "cpu", symbol = "kb_rope_fused_cpu", path = "kernels/rope_cpu.c",
--     language = "c", dtypes = {"bf16", "f32"}}
--   print(d.spec.callable.symbol)
function M.builtin(o)
  if type(o) ~= 'table' then error("bad argument #1 to 'implementation.builtin' (table expected)", 2) end
  check_digest('implementation.builtin', o.operation_digest)
  for _, f in ipairs { 'provider', 'kernel', 'backend', 'symbol' } do
    if type(o[f]) ~= 'string' or o[f] == '' then
      error(string.format("bad argument #1 to 'implementation.builtin' (field '%s' must be a string)", f), 2)
    end
  end
  local k = core()
  local build = o.build or (type(k.build_info) == 'function' and k.build_info()) or {}
  local version = o.version or k.version
  local cuda = o.backend == 'cuda'
  local archs = {}
  if cuda then
    for t in tostring(build.targets or ''):gmatch('%S+') do archs[#archs + 1] = t end
  else
    archs[1] = o.arch or (k.device_info and k.device_info('cpu').arch) or nil
  end
  local flags = cuda and build.nvflags or build.cflags
  local command = 'make' .. (flags and flags ~= '' and (' (' .. (cuda and 'nvcc ' or 'cc ') .. flags:gsub('%s+$', '') .. ')') or '')
  local requirements = {}
  if cuda and type(build.nvcc) == 'string' and build.nvcc ~= '' then requirements.nvcc = build.nvcc:sub(1, 200) end
  if type(build.compiler) == 'string' and build.compiler ~= '' then requirements.cc = build.compiler:sub(1, 200) end
  local sources = o.sources -- record.kernel_sources of the kernel: what the binary was built from
  local spec = {
    projectRevision = { version = version and tostring(version) or nil, treeDigest = tree_digest(sources) },
    operation = { specDigest = o.operation_digest },
    callable = { language = o.language or (cuda and 'cuda' or 'c'), path = o.path, symbol = o.symbol,
      interface = 'kluabench' },
    support = { hardwareArchitectures = sorted_unique(archs), dtypes = M.dtype_tokens(o.dtypes) },
    buildVariants = { { name = 'kluabench-make', install = { kind = 'source', command = command:sub(1, 1000) },
      requirements = next(requirements) and requirements or nil } },
    licensing = { declared = 'MIT', concluded = 'MIT' },
  }
  return document(names.dns_name('kluabench', o.kernel, o.provider, o.backend),
    require('kluabench.kernels').title(o.kernel) .. ' · ' .. o.provider .. ' (kluabench, ' .. o.backend .. ')',
    spec)
end

-- One user kernel's identity: source {contentDigest, fileName}, callable,
-- build variant and arch, from its info() table.
local function user_parts(info)
  local mod = info.module or info
  if info.plugin then
    local p = info.plugin
    return {
      source = { contentDigest = p.sha256, fileName = p.path and basename(p.path) or p.name },
      callable = { language = info.cuda and 'cuda' or 'c', path = p.path and basename(p.path) or nil,
        symbol = info.name, interface = 'kluabench_plugin' },
      build = { name = 'plugin', install = { kind = 'source' },
        requirements = { abi_version = tostring(p.abi_version), plugin = tostring(p.name) .. ' '
          .. tostring(p.version or '') } },
    }
  end
  local digest = mod.source_sha256 or mod.sha256
  local file = mod.name or (mod.path and basename(mod.path)) or ('module.' .. tostring(mod.format or 'bin'))
  local parts = {
    source = { contentDigest = digest, fileName = file, sizeBytes = mod.source_sha256 and mod.source_bytes or mod.bytes },
    callable = { language = info.triton and 'triton' or 'cuda', path = file, symbol = info.symbol or info.name,
      interface = mod.source_sha256 and 'kluabench_nvrtc' or 'kluabench_module' },
    arch = mod.arch,
  }
  local req = {}
  if mod.source_sha256 then
    local opts = type(mod.options) == 'table' and table.concat(mod.options, ' ') or tostring(mod.options or '')
    if type(mod.names) == 'table' and next(mod.names) then
      local ns = {}
      for k in pairs(mod.names) do ns[#ns + 1] = k end
      table.sort(ns)
      req.name_expressions = table.concat(ns, ' '):sub(1, 200)
    end
    if mod.nvrtc_version then req.nvrtc = tostring(mod.nvrtc_version) end
    if mod.arch then req.arch = tostring(mod.arch) end
    parts.build = { name = 'nvrtc', install = { kind = 'source', command = ('nvrtc ' .. opts):sub(1, 1000) },
      requirements = next(req) and req or nil }
  elseif info.triton then
    local t = info.triton
    for _, f in ipairs { 'num_warps', 'num_stages', 'shared', 'hash' } do
      if t[f] ~= nil then req[f] = tostring(t[f]):sub(1, 200) end
    end
    parts.build = { name = 'triton', install = { kind = 'source' }, requirements = next(req) and req or nil }
  end
  return parts
end

--- The ImplementationRevision of a user kernel (info: k:info(), mod:info(), pk:info() or
-- tk:info(), or a list of them when the provider launches several).
--
-- o: operation_digest, provider, info, kernel (the benchmark's kernel name), arch (the device's,
-- when the info has none), dtypes, licensing ({declared, concluded}), project (a repository
-- {repository = "https://...", commit, version}).
--
-- @signature implementation.user{operation_digest, provider, info [, arch, dtypes, licensing]} -> document
-- @example
--   local i = implementation.user{operation_digest = "sha256:" .. string.rep("0", 64), provider = "mine",
--     kernel = "scale", info = {name = "scale", symbol = "scale", module = {format = "cubin",
--     sha256 = "sha256:" .. string.rep("1", 64), arch = "sm_90"}}}
--   print(i.spec.source.contentDigest)
function M.user(o)
  if type(o) ~= 'table' or type(o.info) ~= 'table' then
    error("bad argument #1 to 'implementation.user' (table with an info table expected)", 2)
  end
  check_digest('implementation.user', o.operation_digest)
  if type(o.provider) ~= 'string' then
    error("bad argument #1 to 'implementation.user' (field 'provider' must be a string)", 2)
  end
  local infos = o.info[1] and o.info or { o.info }
  local parts, archs, symbols, variants, listing = {}, {}, {}, {}, {}
  for i, info in ipairs(infos) do
    local p = user_parts(info)
    if type(p.source.contentDigest) ~= 'string' or not p.source.contentDigest:match('^sha256:%x+$') then
      error(string.format("bad argument #1 to 'implementation.user' (info %d has no sha256 of its source or binary)", i), 2)
    end
    parts[i] = p
    archs[#archs + 1] = p.arch or o.arch
    symbols[#symbols + 1] = p.callable.symbol
    if p.build then variants[#variants + 1] = p.build end
    listing[p.source.fileName .. '#' .. tostring(p.callable.symbol)] = p.source.contentDigest
  end
  local first = parts[1]
  local spec = {
    projectRevision = o.project or json.object(),
    operation = { specDigest = o.operation_digest },
    callable = { language = first.callable.language, path = first.callable.path,
      symbol = table.concat(symbols, ','):sub(1, 200), interface = first.callable.interface },
    support = { hardwareArchitectures = sorted_unique(archs), dtypes = M.dtype_tokens(o.dtypes) },
    licensing = o.licensing or json.object(),
  }
  if #parts == 1 then
    spec.source = first.source
  else
    spec.projectRevision.treeDigest = tree_digest(listing)
  end
  if #variants > 0 then
    for i, v in ipairs(variants) do v.name = i == 1 and v.name or (v.name .. '-' .. i) end
    spec.buildVariants = variants
  end
  return document(names.dns_name('user', o.kernel, o.provider, (first.source.contentDigest:sub(8, 19))),
    tostring(o.kernel or 'user kernel') .. ' · ' .. o.provider .. ' (user kernel)', spec)
end

-- The user code this process loaded (kb.loaded_code) as a listing for tree_digest, or nil when there
-- is none. Only what identifies the content (kind and digests): a name or path is that of the first
-- load, and the same code loaded from elsewhere or in another order must give the same digest.
local function loaded_code_listing(script_digest)
  local k = core()
  local loaded = k.loaded_code()
  if #loaded == 0 then return nil end
  local code = {}
  for i, c in ipairs(loaded) do -- sorted by digest already
    code[i] = { kind = c.kind, contentDigest = c.sha256, imageDigest = c.image_sha256 }
  end
  return { script = script_digest, code = json.array(code) }
end

--- The ImplementationRevision of a provider whose code the declaration does not describe: the
-- benchmark script (its SHA-256), the provider's name and the user code loaded in this process.
--
-- o: operation_digest, provider, script (path; default arg[0]), kernel, arch, dtypes, loaded_code
-- (false: leave out the code this process loaded, for a document of a run made elsewhere).
--
-- Every module `kb.cuda.compile` or `kb.cuda.load` made (Triton's kernels too) and every plugin
-- `kb.plugin.load` opened (`kb.loaded_code()`) is part of its identity: when there is any,
-- spec.projectRevision.treeDigest is the SHA-256 of the script's digest and that code's kinds and
-- digests, sorted, so that a change in any of them changes the document's digest and the same code
-- loaded twice or in another order does not. Without any the document is the script's alone.
--
-- @signature implementation.script{operation_digest, provider [, script, kernel, arch, loaded_code]} -> document
-- @example
--   local i = implementation.script{operation_digest = "sha256:" .. string.rep("0", 64), provider = "copy_",
--     script = "examples/copy_benchmark.lua"}
--   print(i.spec.callable.symbol)
function M.script(o)
  if type(o) ~= 'table' then error("bad argument #1 to 'implementation.script' (table expected)", 2) end
  check_digest('implementation.script', o.operation_digest)
  if o.loaded_code ~= nil and type(o.loaded_code) ~= 'boolean' then
    error("bad argument #1 to 'implementation.script' (field 'loaded_code' must be a boolean, got "
      .. type(o.loaded_code) .. ')', 2)
  end
  local script = o.script or (arg and arg[0]) or 'stdin'
  local k = core()
  local ok, hex = pcall(k.sha256_file, script)
  local digest = ok and type(hex) == 'string' and ('sha256:' .. hex) or nil
  local spec = {
    projectRevision = json.object(),
    operation = { specDigest = o.operation_digest },
    callable = { language = 'lua', path = tostring(script):sub(-500), symbol = o.provider, interface = 'kluabench_suite' },
    support = { hardwareArchitectures = sorted_unique { o.arch }, dtypes = M.dtype_tokens(o.dtypes) },
    licensing = json.object(),
  }
  if digest then spec.source = { contentDigest = digest, fileName = basename(script) } end
  if o.loaded_code ~= false then spec.projectRevision.treeDigest = tree_digest(loaded_code_listing(digest)) end
  return document(names.dns_name('script', basename(script), o.provider),
    tostring(o.kernel or basename(script)) .. ' · ' .. o.provider .. ' (declared in ' .. basename(script) .. ')',
    spec)
end

return M
