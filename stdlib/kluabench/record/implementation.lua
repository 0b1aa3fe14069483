-- ImplementationRevision documents: what identifies the code a provider runs, for a built-in kernel
-- (builtin), a user kernel (user) or neither (script). docs/RECORDS.md (Implementations) gives the fields;
-- two different kernels never share one.
local json = require 'kluabench.util.json'
local names = require 'kluabench.record.names'
local operation = require 'kluabench.record.operation'
local args = require 'kluabench.util.args'
local core = require 'kluabench.core'
local kernels = require 'kluabench.kernels'

local M = {}

M.API_VERSION = 'kernelindex.dev/v1alpha1'


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

local function document(name, title, spec, labels)
  return { apiVersion = M.API_VERSION, kind = 'ImplementationRevision', spec = spec,
    metadata = { name = name, title = title and title:sub(1, 200) or nil, labels = labels } }
end

-- A repository URL as a record may carry it: https, ssh, git or scp-like, without credentials; nil for a path or
-- anything else (a local clone's origin names no place a reader can fetch).
local function repository_url(s)
  if type(s) ~= 'string' or #s > 2000 or s:find('[%c%s]') then return nil end
  local scheme = s:match('^(%a[%w+.-]*)://')
  if scheme then
    if not ({ https = true, http = true, ssh = true, git = true })[scheme:lower()] then return nil end
    return (s:gsub('^(%a[%w+.-]*://)[^/@]*@', '%1')) -- user:token@ never reaches a record
  end
  return s:match('^[%w._-]+@[%w.-]+:[%w._/~-]+$') and s or nil
end
M.repository_url = repository_url

-- What git knows of the code in dir: {repository, commit, dirty}, {} outside a git work tree or without git. Loads
-- util/command only here (layers.LAZY): a user's code needs it, the built-in providers carry their build's revision.
local revisions = {}
local function git_revision(dir)
  if revisions[dir] then return revisions[dir] end
  local command = require 'kluabench.util.command'
  local function git(...)
    local ok, r = pcall(command.capture, { 'git', '-C', dir, ... })
    if not (ok and r and r.how == 'exit' and r.code == 0) then return nil end
    return (r.out:gsub('%s+$', ''))
  end
  local rev, commit = {}, git('rev-parse', 'HEAD')
  if commit and #commit == 40 and commit:match('^%x+$') then
    rev.commit = commit:lower()
    rev.repository = repository_url(git('config', '--get', 'remote.origin.url'))
    rev.dirty = (git('status', '--porcelain', '--untracked-files=no') or '') ~= ''
  end
  revisions[dir] = rev
  return rev
end

-- projectRevision gains the repository (source: the user's --source URL, else git's) and the commit, labels the
-- dirty state: what kernelindex's Reproducible tier reads (docs/RECORDS.md).
local function with_revision(spec, rev, source)
  spec.projectRevision.repository = repository_url(source) or rev.repository
  spec.projectRevision.commit = rev.commit
  return rev.dirty and { git_dirty = 'true' } or nil
end

-- "sha256:<hex>" of a {path = "sha256:<hex>"} listing (JCS of it), or nil.
local function tree_digest(sources)
  if not sources or next(sources) == nil then return nil end
  local k = core
  return 'sha256:' .. k.sha256(k.jcs.encode(sources))
end

-- The dtypes of a declaration as kernelindex tokens, sorted (support.dtypes).
function M.dtype_tokens(dtypes)
  args.check('implementation.dtype_tokens', 1, dtypes, 'table|nil', 'list of dtypes')
  local out = {}
  for i, d in ipairs(dtypes or {}) do out[i] = operation.dtype_token(d) end
  return sorted_unique(out)
end

-- The ImplementationRevision of a built-in kernel (sources: {path = "sha256:<hex>"} of its files; layouts: the
-- tensor layouts it reads, as support.layouts: sorted, as kernelindex keeps its set-like lists).
function M.builtin(o)
  if type(o) ~= 'table' then error("bad argument #1 to 'implementation.builtin' (table expected)", 2) end
  check_digest('implementation.builtin', o.operation_digest)
  for _, f in ipairs { 'provider', 'kernel', 'backend', 'symbol' } do
    if type(o[f]) ~= 'string' or o[f] == '' then
      error(string.format("bad argument #1 to 'implementation.builtin' (field '%s' must be a string)", f), 2)
    end
  end
  if o.layouts ~= nil and type(o.layouts) ~= 'table' then
    error("bad argument #1 to 'implementation.builtin' (field 'layouts' must be a list of strings)", 2)
  end
  local k = core
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
    support = { hardwareArchitectures = sorted_unique(archs), dtypes = M.dtype_tokens(o.dtypes),
      layouts = o.layouts and sorted_unique(o.layouts) or nil },
    buildVariants = { { name = 'kluabench-make', install = { kind = 'source', command = command:sub(1, 1000) },
      requirements = next(requirements) and requirements or nil } },
    licensing = { declared = 'MIT', concluded = 'MIT' },
  }
  -- kluabench's own revision, as the build recorded it ("<sha>" or "<sha>-dirty")
  local sha, dirty = tostring(build.git_commit or ''):match('^(%x+)(.*)$')
  local labels = with_revision(spec, { repository = repository_url(os.getenv('KLUABENCH_REPOSITORY'))
      or repository_url(build.git_remote),
    commit = sha and #sha == 40 and sha:lower() or nil, dirty = dirty == '-dirty' }, o.source)
  return document(names.dns_name('kluabench', o.kernel, o.provider, o.backend),
    kernels.title(o.kernel) .. ' · ' .. o.provider .. ' (kluabench, ' .. o.backend .. ')', spec,
    labels)
end

-- A requirements key of the schema (^[a-z][a-z0-9_]*$) for a package name: "liger-kernel" -> "liger_kernel".
local function requirement_key(name)
  local k = tostring(name):lower():gsub('[^a-z0-9_]', '_')
  if not k:match('^[a-z]') then k = 'p_' .. k end
  return k
end

-- A Python function's parts (kb.python: pyfn:info()): the module's file, the function (or info.symbol, a library
-- function the provider calls) and, as requirements, Python's and the packages' versions.
local function python_parts(info)
  local py = info.python
  local file = py.path and basename(py.path) or tostring(py.module or 'module')
  local req = { python = tostring(py.version or 'unknown'):sub(1, 200) }
  for name, version in pairs(type(py.packages) == 'table' and py.packages or {}) do
    req[requirement_key(name)] = tostring(version):sub(1, 200)
  end
  return {
    source = { contentDigest = py.sha256, fileName = file,
      sizeBytes = math.type(py.bytes) == 'integer' and py.bytes > 0 and py.bytes or nil },
    callable = { language = 'python', path = file,
      symbol = tostring(info.symbol or ((py.module or info.module or '?') .. '.' .. tostring(info.name))):sub(1, 200),
      interface = 'kluabench_python' },
    build = { name = 'python', install = { kind = 'source' }, -- which interpreter ran is the environment's
      requirements = req },
  }
end

-- A user kernel's source, callable, build variant and arch, from its info() table.
local function user_parts(info)
  if type(info.python) == 'table' then return python_parts(info) end
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

-- The ImplementationRevision of a user kernel from its info (k:info(), mod:info(), pk:info(), tk:info(), a Python
-- function's pyfn:info(), or a list of them for a provider that launches several). A Python function's source is its
-- module's file, its symbol the function (or info.symbol), its requirements Python's and its packages' versions.
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
    projectRevision = o.project or json.object(), operation = { specDigest = o.operation_digest },
    callable = { language = first.callable.language, path = first.callable.path,
      symbol = table.concat(symbols, ','):sub(1, 200), interface = first.callable.interface },
    support = { hardwareArchitectures = sorted_unique(archs), dtypes = M.dtype_tokens(o.dtypes) },
    licensing = o.licensing or json.object(),
  }
  if #parts == 1 then spec.source = first.source else spec.projectRevision.treeDigest = tree_digest(listing) end
  if #variants > 0 then
    for i, v in ipairs(variants) do v.name = i == 1 and v.name or (v.name .. '-' .. i) end
    spec.buildVariants = variants
  end
  local script = o.script or (arg and arg[0]) or '.'
  local labels = with_revision(spec, git_revision(script:match('^(.*)/[^/]*$') or '.'), o.source)
  local kind = first.callable.language == 'python' and ('Python, ' .. first.callable.symbol) or 'user kernel'
  return document(names.dns_name('user', o.kernel, o.provider, (first.source.contentDigest:sub(8, 19))),
    tostring(o.kernel or 'user kernel') .. ' · ' .. o.provider .. ' (' .. kind .. ')', spec, labels)
end

-- The user code this process loaded as a tree_digest listing, or nil: kinds and digests only, so the
-- same code loaded from elsewhere or in another order gives the same digest.
local function loaded_code_listing(script_digest)
  local k = core
  local loaded = k.loaded_code()
  if #loaded == 0 then return nil end
  local code = {}
  for i, c in ipairs(loaded) do -- sorted by digest already
    code[i] = { kind = c.kind, contentDigest = c.sha256, imageDigest = c.image_sha256 }
  end
  return { script = script_digest, code = json.array(code) }
end

-- The ImplementationRevision of a provider the declaration does not describe: the script, the provider's
-- name and (unless loaded_code = false) the user code this process loaded.
function M.script(o)
  if type(o) ~= 'table' then error("bad argument #1 to 'implementation.script' (table expected)", 2) end
  check_digest('implementation.script', o.operation_digest)
  if o.loaded_code ~= nil and type(o.loaded_code) ~= 'boolean' then
    error("bad argument #1 to 'implementation.script' (field 'loaded_code' must be a boolean, got "
      .. type(o.loaded_code) .. ')', 2)
  end
  local script = o.script or (arg and arg[0]) or 'stdin'
  local k = core
  local ok, hex = pcall(k.sha256_file, script)
  local digest = ok and type(hex) == 'string' and ('sha256:' .. hex) or nil
  local spec = {
    projectRevision = json.object(), operation = { specDigest = o.operation_digest },
    callable = { language = 'lua', path = tostring(script):sub(-500), symbol = o.provider, interface = 'kluabench_suite' },
    support = { hardwareArchitectures = sorted_unique { o.arch }, dtypes = M.dtype_tokens(o.dtypes) },
    licensing = json.object(),
  }
  if digest then spec.source = { contentDigest = digest, fileName = basename(script) } end
  if o.loaded_code ~= false then spec.projectRevision.treeDigest = tree_digest(loaded_code_listing(digest)) end
  local labels = with_revision(spec, git_revision(tostring(script):match('^(.*)/[^/]*$') or '.'), o.source)
  return document(names.dns_name('script', basename(script), o.provider),
    tostring(o.kernel or basename(script)) .. ' · ' .. o.provider .. ' (declared in ' .. basename(script) .. ')', spec,
    labels)
end

return M
