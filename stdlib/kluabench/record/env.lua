-- The ExecutionEnvironment document (docs/RECORDS.md): what cannot be known is left out, never invented. Where the
-- process ran is metadata.labels (undigested: identical machines share one environment).
local names = require 'kluabench.record.names'
local args = require 'kluabench.util.args'
local core = require 'kluabench.core'
local json = require 'kluabench.util.json'

local M = {}

M.API_VERSION = 'kernelindex.dev/v1alpha1'

local VENDORS = { nvidia = 'nvidia', amd = 'amd', intel = 'intel', apple = 'apple',
  authenticamd = 'amd', genuineintel = 'intel' }
-- Product family words that belong to the product, not the form factor.
local FAMILY = { geforce = 'nvidia', rtx = 'nvidia', tesla = 'nvidia', quadro = 'nvidia',
  titan = 'nvidia', jetson = 'nvidia', instinct = 'amd', radeon = 'amd', pro = false }

local function trim(s) return (s:gsub('^%s+', ''):gsub('%s+$', '')) end

local function vendor_of_word(w) return VENDORS[w:lower():gsub('%(r%)', ''):gsub('%(tm%)', ''):gsub('[^%w]', '')] end

-- Splits a GPU name: "NVIDIA H100 80GB HBM3" -> "nvidia", "NVIDIA H100", "80GB HBM3".
function M.split_gpu_name(name)
  args.check('split_gpu_name', 1, name, 'string', 'string')
  local words = {}
  for w in name:gmatch('%S+') do words[#words + 1] = w end
  if #words == 0 then return nil, '', nil end
  local i, vendor, product = 1, vendor_of_word(words[1]), {}
  if vendor then product[1], i = words[1], 2 end
  while words[i] and FAMILY[words[i]:lower()] ~= nil do
    vendor = vendor or FAMILY[words[i]:lower()] or nil
    product[#product + 1] = words[i]
    i = i + 1
  end
  local form = {}
  if words[i] then
    local model, tail = words[i]:match('^([^-]+)%-(.+)$')
    product[#product + 1] = model or words[i]
    if tail then form[1] = tail end
    i = i + 1
  end
  for j = i, #words do form[#form + 1] = words[j] end
  -- the schema's bounds of hardware.product and hardware.formFactor
  local ff = #form > 0 and names.clip(table.concat(form, ' '), 100) or nil
  return vendor, names.clip(table.concat(product, ' '), 200), ff
end

-- Model token -> architecture, for names of devices not queried (Liger's CSV rows); first match wins.
local ARCH_BY_MODEL = {
  { '^G?H%d+', 'sm_90' },      -- H100, H200, H800, H20, GH200
  { '^A100$', 'sm_80' }, { '^A800$', 'sm_80' }, { '^A30$', 'sm_80' },
  { '^A%d+G?$', 'sm_86' },     -- A10, A10G, A16, A2, A40, RTX A6000
  { '^L%d+S?$', 'sm_89' },     -- L4, L40, L40S, L20
  { '^V100$', 'sm_70' }, { '^T4$', 'sm_75' },
  { '^G?B3%d%d$', 'sm_103' },  -- B300, GB300
  { '^G?B[12]%d%d$', 'sm_100' }, -- B100, B200, GB200
  { '^MI35%dX?$', 'gfx950' },
  { '^MI3%d%d[XA]?$', 'gfx942' }, { '^MI2%d%dX?$', 'gfx90a' }, { '^MI100$', 'gfx908' },
}

function M.arch_of_gpu_name(name)
  args.check('env.arch_of_gpu_name', 1, name, 'string', 'GPU name')
  local _, product = M.split_gpu_name(name)
  local model, lower = (product:match('(%S+)$') or ''):upper(), name:lower()
  if lower:find('%f[%a]ada%f[%A]') then return 'sm_89' end
  if lower:find('blackwell') then return 'sm_120' end
  if lower:find('rtx') then
    local series = tonumber(model:match('^(%d)%d%d%d?$') or '')
    if series then return ({ [2] = 'sm_75', [3] = 'sm_86', [4] = 'sm_89', [5] = 'sm_120' })[series] end
  end
  for _, e in ipairs(ARCH_BY_MODEL) do if model:match(e[1]) then return e[2] end end
  return nil
end

-- "13.0" from CUDA's integer encoding 13000.
function M.cuda_version(v)
  if type(v) == 'string' then return v ~= '' and v or nil end
  if type(v) ~= 'number' or v <= 0 then return nil end
  v = math.tointeger(v) or math.floor(v)
  return string.format('%d.%d', v // 1000, (v % 1000) // 10)
end

local function read_first_line(path)
  local f = io.open(path, 'r')
  if not f then return nil end
  local line = f:read('l')
  f:close()
  return line
end

-- The NVIDIA kernel driver release ("580.65.06"), from /proc/driver/nvidia/version.
function M.driver_release()
  local line = read_first_line('/proc/driver/nvidia/version')
  return line and line:match('Kernel Module%s+(%d+%.%d+[%.%d]*)') or nil
end

-- The kernel ("Linux 6.1.0-18-amd64") and distribution, from /proc and /etc/os-release; unknown nil.
function M.os_info()
  local t, ostype = {}, read_first_line('/proc/sys/kernel/ostype')
  local release = read_first_line('/proc/sys/kernel/osrelease')
  if ostype and release then t.kernel = ostype .. ' ' .. release end
  local f = io.open('/etc/os-release', 'r')
  if f then
    for line in f:lines() do
      local v = line:match('^PRETTY_NAME="?(.-)"?$')
      if v then t.distribution = v end
    end
    f:close()
  end
  -- (no shell fallback such as uname: where /proc says nothing, the kernel is unknown)
  return next(t) and t or nil
end

local function nonzero(v) return (type(v) == 'number' and v > 0) and v or nil end

-- The hardware table of a device_info table (the schema's fields only).
function M.hardware(info, backend)
  args.check('env.hardware', 1, info, 'table', 'device info (kb.device_info())')
  args.check('env.hardware', 2, backend, 'string', 'backend name')
  local hw, name = {}, trim(tostring(info.name or ''))
  if backend == 'cuda' then
    local vendor, product, ff = M.split_gpu_name(name)
    hw.vendor, hw.product, hw.formFactor = vendor or 'nvidia', product ~= '' and product or nil, ff
    hw.architecture = (info.arch and info.arch ~= '') and info.arch or M.arch_of_gpu_name(name)
  else
    local first = name:match('^(%S+)')
    hw.vendor = first and (vendor_of_word(first) or first:lower():gsub('[^%w]', '')) or nil
    hw.product = name ~= '' and name or nil
    hw.architecture = (info.arch and info.arch ~= '') and info.arch or nil
  end
  -- the schema's tokens are lowercase words: "x86_64" is one, "x86-64" is not
  if hw.architecture then hw.architecture = hw.architecture:lower():gsub('[^%w_]', '_') end
  if hw.vendor == '' or (hw.vendor and not hw.vendor:match('^[a-z]')) then hw.vendor = nil end
  hw.memoryBytes, hw.count = nonzero(info.memory_bytes), 1
  return hw
end

-- Device facts the schema has no field for (backend, smCount, l2Bytes, cores), for the evidence.
function M.device_facts(info, backend)
  args.check('env.device_facts', 1, info, 'table', 'device info (kb.device_info())')
  args.check('env.device_facts', 2, backend, 'string', 'backend name')
  return { backend = backend, smCount = nonzero(info.sm_count), l2Bytes = nonzero(info.l2_bytes),
    cores = nonzero(info.cores) }
end

-- The software table (kb: the engine module; opts.driver_release, opts.os: for tests and replays).
function M.software(info, backend, kb, opts)
  args.check('env.software', 1, info, 'table', 'device info (kb.device_info())')
  args.check('env.software', 2, backend, 'string', 'backend name')
  opts = opts or {}
  local sw, libraries = {}, { lua = _VERSION }
  if backend == 'cuda' then
    local release = opts.driver_release
    if release == nil then release = M.driver_release() end
    sw.driver, sw.cudaToolkit = release or nil, M.cuda_version(info.runtime_version)
    libraries.cuda_driver = M.cuda_version(info.driver_version)
  end
  local build = kb and type(kb.build_info) == 'function' and kb.build_info() or {}
  if type(build.compiler) == 'string' and build.compiler ~= '' then sw.compiler = build.compiler:sub(1, 200) end
  if kb and kb.version then sw.framework = { name = 'kluabench', version = tostring(kb.version) } end
  sw.libraries = libraries
  local os_ = opts.os
  if os_ == nil then os_ = M.os_info() end
  if os_ then sw.operatingSystem = os_.distribution; sw.kernel = os_.kernel end
  return sw
end

-- The device name without its vendor word: "H100 80GB HBM3".
function M.short_device_name(name)
  args.check('env.short_device_name', 1, name, 'string', 'device name')
  local first, rest = name:match('^(%S+)%s+(.+)$')
  if first and vendor_of_word(first) then return rest end
  return name
end

-- The Slurm variables recorded, and their names in the labels.
M.SLURM_VARS = {
  { 'SLURM_JOB_ID', 'slurm_job_id' }, { 'SLURM_ARRAY_JOB_ID', 'slurm_array_job_id' },
  { 'SLURM_ARRAY_TASK_ID', 'slurm_array_task_id' }, { 'SLURM_CLUSTER_NAME', 'slurm_cluster_name' },
  { 'SLURMD_NODENAME', 'slurm_node_name' },
}

-- Where this process runs (host_name, the Slurm ids), for the undigested labels; nil when unknown.
function M.placement(getenv, hostname)
  args.check('env.placement', 1, getenv, 'callable|nil', 'getenv function')
  args.check('env.placement', 2, hostname, 'string|nil', 'host name')
  getenv = getenv or os.getenv
  local t, host = {}, hostname
  if host == nil then host = read_first_line('/proc/sys/kernel/hostname') or getenv('HOSTNAME') end
  if type(host) == 'string' and host ~= '' then t.host_name = host:sub(1, 200) end
  for _, v in ipairs(M.SLURM_VARS) do
    local value = getenv(v[1])
    if type(value) == 'string' and value ~= '' then t[v[2]] = value:sub(1, 200) end
  end
  return next(t) and t or nil
end

-- The ExecutionEnvironment document of this process; opts (info, backend, kb, ...) for tests and replays.
function M.capture(opts)
  args.check('env.capture', 1, opts, 'table|nil', 'table of options')
  opts = opts or {}
  local kb = opts.kb
  if kb == nil and (opts.info == nil or opts.backend == nil) then kb = core end
  local backend = opts.backend or (kb and kb.backend and kb.backend()) or 'cpu'
  local info = opts.info or kb.device_info()
  if type(info) ~= 'table' then
    error("bad argument to 'capture' (device_info must be a table, got " .. type(info) .. ')', 2)
  end
  local name = trim(tostring(info.name or (backend == 'cpu' and 'cpu' or 'unknown device')))
  local spec = { hardware = M.hardware(info, backend), software = M.software(info, backend, kb, opts) }
  if backend == 'cuda' and opts.nvml ~= false then
    if M.clocks_locked(opts.nvml_info) then spec.settings = { clocksLocked = true } end
  end
  local short = backend == 'cuda' and M.short_device_name(name) or name
  local placement = opts.placement
  if placement == nil then placement = M.placement() end
  return {
    kind = 'ExecutionEnvironment', spec = spec, apiVersion = M.API_VERSION,
    metadata = { name = names.dns_name('kluabench', backend == 'cpu' and 'cpu' or nil, names.gpu_slug(name)),
      title = ('kluabench host · ' .. short .. (backend == 'cpu' and ' (cpu backend)' or '')):sub(1, 200),
      labels = placement or nil },
  }
end

-- True when NVML's application clocks differ from their defaults (someone set them); nil when unknown.
function M.clocks_locked(info)
  args.check('env.clocks_locked', 1, info, 'table|nil', 'kb.nvml.info() table')
  if info == nil then
    if not core.nvml.available() then return nil end
    local okq, i = pcall(core.nvml.info)
    info = okq and i or nil
  end
  if type(info) ~= 'table' then return nil end
  local function differs(a, b) return type(a) == 'number' and type(b) == 'number' and a ~= b end
  if differs(info.app_sm_mhz, info.default_app_sm_mhz) or differs(info.app_mem_mhz, info.default_app_mem_mhz) then
    return true
  end
  return nil
end

-- The full device name (product and form factor) of an environment document as read, or nil.
function M.device_name(doc)
  local hw = json.get(doc, 'spec', 'hardware')
  if type(hw) ~= 'table' or type(hw.product) ~= 'string' then return nil end
  return type(hw.formFactor) == 'string' and (hw.product .. ' ' .. hw.formFactor) or hw.product
end

-- The device_name of this process's default device, or nil without the engine.
function M.local_device_name()
  return M.device_name { spec = { hardware = M.hardware(core.device_info(), core.backend()) } }
end

return M
