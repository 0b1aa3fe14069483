--- Liger-Kernel interop: its benchmark CSV read into kernelindex bundles the
-- way kernelindex's own Liger importer builds them, the workloads kluabench
-- shares with Liger's benchmarks, and our results written in Liger's CSV.
--
-- A row of benchmark/data/all_benchmark_data.csv is one point: the
-- quantiles 0.5/0.2/0.8 of triton.testing.do_bench (metric_name "speed", ms)
-- or of Liger's peak-memory probe (metric_name "memory", MB). For the
-- kernels kluabench reproduces (llama4_rope and rope) a speed row gives the
-- documents and digests that kernelindex's importer gives
-- (apps/web/src/server/import/liger/normalize.ts and reconcile.ts in
-- github.com/SamMausberg/KernelIndex): the same OperationSpec, WorkloadCase,
-- ImplementationRevision, BenchmarkProtocol, ExecutionEnvironment and
-- BenchmarkRun, byte for byte after JCS. Rows that importer skips are
-- skipped with a reason (M.SKIP), or with opts.keep kept as documents of
-- our own labelled not_reproduced. Input is data: the JSON in
-- extra_benchmark_config_str is parsed by output.decode, never run.
local names = require 'kluabench.record.names'
local output = require 'kluabench.util.json'
local csv = require 'kluabench.liger.csv'
local kernels = require 'kluabench.kernels'
local files = require 'kluabench.util.files'
local operation = require 'kluabench.record.operation'
local env = require 'kluabench.record.env'

local M = {}
local args = require 'kluabench.util.args'
local printable = require('kluabench.util.args').printable
local result = require 'kluabench.result'
local writer = require 'kluabench.record.writer'
local whole_file = require 'kluabench.record.whole_file'
local record = require 'kluabench.record'
local core = require 'kluabench.core'

--- The header of Liger's CSV, in its order.
M.HEADER = { 'kernel_name', 'kernel_provider', 'kernel_operation_mode', 'metric_name',
  'metric_unit', 'x_name', 'x_label', 'x_value', 'y_value_50', 'y_value_20', 'y_value_80',
  'extra_benchmark_config_str', 'gpu_name', 'timestamp', 'liger_version' }

--- Liger's quantiles, in the order of the y_value columns.
M.QUANTILES = require('kluabench.measure.do_bench').QUANTILES
local Y_COLUMNS = { 'y_value_50', 'y_value_20', 'y_value_80' }

M.REPOSITORY = 'https://github.com/linkedin/Liger-Kernel'
M.HARNESS = { name = 'Liger-Kernel benchmark scripts', repository = M.REPOSITORY }
M.SOURCE = 'liger-kernel-bench'
--- The Liger-Kernel commit whose benchmark scripts the OperationSpecs cite (metadata only): the
-- latest commit touching benchmark/data/all_benchmark_data.csv when kernelindex's schemas were
-- copied (2026-08-10). import-liger --liger-commit names another.
M.COMMIT = '2120862ba532c9449e72d603ba6324310ae756e7'

--- What a Liger mode timed, in words, as kernelindex's importer says it (its MODES).
M.TIMED = {
  forward = 'the module forward pass',
  backward = 'the backward pass of the module output given a random upstream gradient',
  full = 'the forward pass plus the backward pass',
}

--- Liger's spelling of our parameter names (for writing its CSV).
M.LIGER_PARAM = { hidden = 'hidden_size', seq = 'seq_len', q_heads = 'num_q_heads',
  kv_heads = 'num_kv_heads' }
--- Liger's x axis names and labels of our parameters.
M.X_AXIS = kernels.KERNELS.llama4_rope.kernelindex.liger_x
M.TORCH_DTYPE = { bf16 = 'torch.bfloat16', f16 = 'torch.float16', f32 = 'torch.float32',
  f64 = 'torch.float64' }
--- Our names of Liger's parameter spellings, its config keys and x axis names (hidden_size and H
-- -> hidden, seq_len and T -> seq, ...): M.LIGER_PARAM and M.X_AXIS read backwards.
M.PARAM_ALIASES = {}
for ours, liger_name in pairs(M.LIGER_PARAM) do M.PARAM_ALIASES[liger_name] = ours end
for ours, axis in pairs(M.X_AXIS) do M.PARAM_ALIASES[axis[1]] = ours end
-- the spellings of Liger-Kernel 0.8's benchmarks (transformers' config names, and the batch)
M.PARAM_ALIASES.num_attention_heads, M.PARAM_ALIASES.num_key_value_heads = 'q_heads', 'kv_heads'
M.PARAM_ALIASES.bsz = 'batch'

--- Our name for a parameter of Liger's (`hidden_size` -> `hidden`, `T` -> `seq`); unknown names pass
-- through.
--
-- @signature liger.param_name(name) -> name
-- @example
--   print(liger.param_name("seq_len")) --> seq
function M.param_name(name)
  args.check('liger.param_name', 1, name, 'string', 'parameter name')
  return M.PARAM_ALIASES[name] or name
end
-- Order of keys in extra_benchmark_config_str that we write.
local CONFIG_ORDER = { dtype = 1, hidden_size = 2, seq_len = 3, num_q_heads = 4, num_kv_heads = 5 }

---------------------------------------------------------------------------
-- Reading
---------------------------------------------------------------------------

--- Parses Liger CSV text; a row with the wrong number of fields has `error` instead of columns.
--
-- Returns a list of rows (tables keyed by column name, with `line` = the row's line in the text,
-- and `error` instead of the columns when the row has the wrong number of fields), or nil and "line
-- N: why" when the text is not CSV or the header lacks a column. Columns may come in any order; all
-- of M.HEADER must be present.
--
-- @signature liger.parse(text) -> rows | nil, message
-- @example
--   local text = table.concat(liger.HEADER, ",") .. "\n"
--     .. "llama4_rope,liger,forward,speed,ms,H,hidden size,512,0.05,0.0485,0.052,"
--     .. '"{""dtype"": ""torch.bfloat16"", ""seq_len"": 2048, ""num_q_heads"": 32, ""num_kv_heads"": 8}",'
--     .. "NVIDIA H100 80GB HBM3,2025-08-07 21:42:00,0.6.1\n"
--   local rows = assert(liger.parse(text))
--   print(#rows, rows[1].kernel_name) --> 1  llama4_rope
function M.parse(text)
  local records, lines = csv.parse_csv(text)
  if not records then return nil, lines end
  if #records == 0 then return nil, 'line 1: empty file (no header)' end
  local header = records[1]
  local index = {}
  for i, name in ipairs(header) do index[name] = i end
  for _, name in ipairs(M.HEADER) do
    if not index[name] then
      return nil, string.format('line %d: header lacks column %q', lines[1], name)
    end
  end
  local rows = {}
  for r = 2, #records do
    local rec = records[r]
    if not (#rec == 1 and rec[1] == '') then -- blank line
      local row = { line = lines[r] }
      if #rec ~= #header then
        -- kept, so that one bad row is reported and the others still import
        row.error = string.format('%d fields, the header has %d', #rec, #header)
      else
        for name, i in pairs(index) do row[name] = rec[i] end
      end
      rows[#rows + 1] = row
    end
  end
  return rows
end

--- Reads and parses a Liger CSV file; each row is keyed by column name, with its line.
--
-- @signature liger.read(path) -> rows | nil, message
-- @example
--   local path = os.tmpname()
--   local f = assert(io.open(path, "w"))
--   f:write(table.concat(liger.HEADER, ","), "\n",
--     "llama4_rope,liger,forward,speed,ms,H,hidden size,512,0.05,0.0485,0.052,"
--     .. '"{""dtype"": ""torch.bfloat16"", ""seq_len"": 2048, ""num_q_heads"": 32, ""num_kv_heads"": 8}",'
--     .. "NVIDIA H100 80GB HBM3,2025-08-07 21:42:00,0.6.1\n")
--   f:close()
--   local rows = assert(liger.read(path))
--   os.remove(path)
function M.read(path)
  local text, err = files.read_text(path)
  if not text then return nil, err end
  local rows, perr = M.parse(text)
  if not rows then return nil, path .. ':' .. perr:gsub('^line ', '') end
  return rows
end

--- The JSON object of extra_benchmark_config_str (parsed as data, never run).
--
-- The table in extra_benchmark_config_str ("" -> empty), or nil, message.
--
-- @signature liger.parse_config(s) -> table | nil, message
-- @example
--   local c = liger.parse_config('{"seq_len": 2048}')
function M.parse_config(s)
  args.check('liger.parse_config', 1, s, 'string', 'extra_benchmark_config text')
  if s == nil or s:match('^%s*$') then return {} end
  local v, err = output.decode(s)
  if v == nil then return nil, 'extra_benchmark_config_str: ' .. err end
  if type(v) ~= 'table' or output.table_kind(v) ~= 'object' then
    return nil, 'extra_benchmark_config_str is not a JSON object'
  end
  return v
end

-- Why a value read from the file cannot go into a record (JSON numbers are
-- finite, and integers beyond +-2^53 are not exact), or nil when it can.
local function unrecordable(v)
  if type(v) == 'number' then
    if v ~= v or v == math.huge or v == -math.huge then return 'is not finite' end
    if math.type(v) == 'integer' and (v > 2 ^ 53 or v < -2 ^ 53) then return 'is beyond +-2^53' end
  elseif type(v) == 'table' then
    for _, x in pairs(v) do
      local why = unrecordable(x)
      if why then return why end
    end
  end
  return nil
end

-- The number a decimal numeral spells ("12", "-0.5", "1e-3"), or nil:
-- Lua's tonumber also reads hexadecimal ("0x10") and surrounding spaces,
-- which Liger's files never hold and which would make a silently wrong record.
local function decimal(s)
  if type(s) ~= 'string' then return nil end
  local mant, exp = s:match('^([+-]?[%d.]+)([eE]?[+-]?%d*)$')
  if not mant or not mant:match('%d') or select(2, mant:gsub('%.', '')) > 1 then return nil end
  if exp ~= '' and not exp:match('^[eE][+-]?%d+$') then return nil end
  return tonumber(s)
end

local function quoted(s) return "'" .. printable(s, 60) .. "'" end

local function number_field(row, col)
  local v = decimal(row[col])
  if not v then return nil, string.format('%s is not a decimal number (%s)', col, quoted(row[col])) end
  local why = unrecordable(v)
  if why then return nil, string.format('%s %s (%s)', col, why, quoted(row[col])) end
  return v
end

---------------------------------------------------------------------------
-- What kernelindex's importer declares (kernels.ts, normalize.ts)
---------------------------------------------------------------------------

M.DTYPES = { ['torch.bfloat16'] = 'bf16', ['torch.float16'] = 'fp16', ['torch.float32'] = 'fp32' }

--- The two spellings of the head counts in extra_benchmark_config_str: Liger's benchmarks of 2025
-- wrote num_q_heads and num_kv_heads; from Liger-Kernel 0.8 (its model-config sweeps) they write
-- transformers' names, num_attention_heads and num_key_value_heads, and the sweep's batch, bsz.
M.HEAD_SPELLINGS = { q_heads = { 'num_q_heads', 'num_attention_heads' },
  kv_heads = { 'num_kv_heads', 'num_key_value_heads' } }

-- A config's value of an axis under either spelling; false when both are there and differ.
local function either(config, names_of)
  local v
  for _, name in ipairs(names_of) do
    local w = config[name]
    if w ~= nil then
      if v ~= nil and v ~= w then return false end
      v = w
    end
  end
  return v
end

-- A CSV row's binding: its config and x as the parameters of kernelindex's workload. Either
-- spelling of the head counts binds the same axes. bsz, where the config has it, is the batch:
-- kernelindex's RoPE workloads are of batch 1 (tensors [1, seq, heads, head_dim]), so the kernel's
-- binder takes a batch of 1 and no other (a row of another batch binds no workload: skipped as an
-- unknown config, named, as kernelindex's importer skips what its binder refuses).
local function csv_binding(ki)
  return function(x, x_name, config)
    local dtype = M.DTYPES[config.dtype]
    if not dtype then return nil end
    local q_heads, kv_heads = either(config, M.HEAD_SPELLINGS.q_heads), either(config, M.HEAD_SPELLINGS.kv_heads)
    if q_heads == false or kv_heads == false then return nil end
    return ki.bind({ q_heads = q_heads, kv_heads = kv_heads, batch = config.bsz,
      seq = x_name == 'T' and x or config.seq_len, hidden = x_name == 'H' and x or config.hidden_size }, dtype)
  end
end

--- The Liger kernels kluabench reproduces, by our kernel name: the Liger benchmark's name
-- (csv_name), title, kernelindex's operation description (op) and bind(x, x_name, config), from the
-- kernel registry (kluabench.kernels' `kernelindex` entries).
M.KERNELS = {}
for name, k in pairs(kernels.KERNELS) do
  if k.kernelindex then
    M.KERNELS[name] = { csv_name = k.kernelindex.liger_name, title = k.kernelindex.operation.title,
      op = k.kernelindex.operation, bind = csv_binding(k.kernelindex) }
  end
end

M.IMPORTED_KERNELS = {
  qwen2vl_mrope = { title = 'Qwen2-VL multimodal rotary position embedding' },
  rms_norm = { title = 'RMS normalization' },
  layer_norm = { title = 'Layer normalization' },
  group_norm = { title = 'Group normalization' },
  swiglu = { title = 'SwiGLU' },
  geglu = { title = 'GeGLU' },
  cross_entropy = { title = 'Cross entropy' },
  fused_linear_cross_entropy = { title = 'Fused linear cross entropy' },
  embedding = { title = 'Embedding' },
  kl_div = { title = 'KL divergence' },
  jsd = { title = 'Jensen-Shannon divergence' },
}
kernels.register('liger', { binding = false, kernels = M.IMPORTED_KERNELS })

--- The Liger kernels kernelindex's importer curates and kluabench does not reproduce (their rows
-- are skipped as 'not_reproduced'); every other kernel is one the importer skips too. The list is
-- its curation (kernels.ts, kernels-extra.ts, kernels-losses.ts) at the commit the schemas were
-- copied from.
M.NOT_REPRODUCED = {
  cross_entropy = true, embedding = true, fused_add_rms_norm = true, fused_linear_cross_entropy = true,
  fused_linear_jsd = true, fused_moe = true, fused_neighborhood_attention = true, geglu = true, group_norm = true,
  jsd = true, kl_div = true, kto_loss = true, layer_norm = true, megatron_cross_entropy = true,
  megatron_rms_norm = true, megatron_swiglu = true, relu_squared = true, rms_norm = true, softmax = true,
  sparsemax = true, swiglu = true, tvd = true,
}

--- The GPUs kernelindex's importer knows (its HARDWARE): CSV gpu_name -> hardware.
M.HARDWARE = {
  ['NVIDIA A100-SXM4-80GB'] = { vendor = 'nvidia', product = 'NVIDIA A100', architecture = 'sm_80', formFactor = 'SXM4-80GB' },
  ['NVIDIA H100 80GB HBM3'] = { vendor = 'nvidia', product = 'NVIDIA H100', architecture = 'sm_90', formFactor = '80GB HBM3' },
  ['NVIDIA H100 PCIe'] = { vendor = 'nvidia', product = 'NVIDIA H100', architecture = 'sm_90', formFactor = 'PCIe' },
  ['NVIDIA B200'] = { vendor = 'nvidia', product = 'NVIDIA B200', architecture = 'sm_100' },
  ['NVIDIA GeForce RTX 3090'] = { vendor = 'nvidia', product = 'NVIDIA GeForce RTX 3090', architecture = 'sm_86' },
  ['NVIDIA GeForce RTX 4090'] = { vendor = 'nvidia', product = 'NVIDIA GeForce RTX 4090', architecture = 'sm_89' },
}

--- The software projects providers belong to (the importer's PROJECTS): slug -> {name, repository, id}.
M.PROJECTS = {
  ['liger-kernel'] = { name = 'Liger-Kernel', repository = M.REPOSITORY, id = 'linkedin/Liger-Kernel' },
  pytorch = { name = 'PyTorch', repository = 'https://github.com/pytorch/pytorch', id = 'pytorch/pytorch' },
  ['megatron-lm'] = { name = 'NVIDIA Megatron-LM', repository = 'https://github.com/NVIDIA/Megatron-LM',
    id = 'NVIDIA/Megatron-LM' },
  deepspeed = { name = 'DeepSpeed', repository = 'https://github.com/deepspeedai/DeepSpeed', id = 'deepspeedai/DeepSpeed' },
  transformers = { name = 'Hugging Face Transformers', repository = 'https://github.com/huggingface/transformers',
    id = 'huggingface/transformers' },
}

local function liger_provider(title, description)
  return { project = 'liger-kernel', title = title, language = 'triton', description = description,
    declared = 'BSD-2-Clause', concluded = 'BSD-2-Clause', pip = 'liger-kernel' }
end

--- Liger's providers (the importer's PROVIDERS): CSV kernel_provider -> {project, title, language,
-- description, declared, concluded, pip, role}.
M.PROVIDERS = {
  liger = liger_provider('Liger', 'Liger-Kernel Triton implementation.'),
  liger_fused_add_rms_norm = liger_provider('Liger fused', 'Liger-Kernel fused add + RMSNorm Triton implementation.'),
  liger_rms_norm = liger_provider('Liger unfused',
    'Residual add in PyTorch followed by the Liger RMSNorm Triton kernel (unfused baseline).'),
  huggingface = { project = 'transformers', title = 'Transformers', language = 'python',
    description = 'Hugging Face Transformers reference module.', declared = 'Apache-2.0', role = 'baseline' },
  torch = { project = 'pytorch', title = 'PyTorch', language = 'python', description = 'PyTorch reference module.',
    declared = 'BSD-3-Clause', role = 'baseline' },
  torch_compile = { project = 'pytorch', title = 'torch.compile', language = 'python',
    description = 'PyTorch reference module compiled with torch.compile.', declared = 'BSD-3-Clause' },
  liger_in_place = liger_provider('Liger in-place', 'Liger-Kernel Triton implementation, in-place variant.'),
  liger_tiled = liger_provider('Liger tiled',
    'Liger-Kernel MLP under seq-sharded tiled execution (same computation, chunked over the sequence).'),
  megatron = { project = 'megatron-lm', title = 'Megatron', language = 'python',
    description = 'Megatron-Core module for the benchmarked operation.', declared = 'BSD-3-Clause' },
  ['megatron-fused'] = { project = 'megatron-lm', title = 'Megatron fused', language = 'python',
    description = 'Megatron-Core fused_vocab_parallel_cross_entropy (fused kernel path).', declared = 'BSD-3-Clause' },
  ['megatron-unfused'] = { project = 'megatron-lm', title = 'Megatron unfused', language = 'python',
    description = 'Megatron-Core vocab_parallel_cross_entropy (unfused reference path).', declared = 'BSD-3-Clause',
    role = 'baseline' },
  deepspeed_tiled = { project = 'deepspeed', title = 'DeepSpeed tiled', language = 'python',
    description = 'DeepSpeed TiledMLP seq-sharded execution.', declared = 'Apache-2.0' },
}

local API = 'kernelindex.dev/v1alpha1'
-- A document; its metadata's texts bounded as the schemas bound them (a CSV's
-- columns can be of any length; metadata is not digested, so no digest moves).
local function doc(kind, metadata, spec)
  if metadata.title then metadata.title = names.clip(metadata.title, 200) end
  if metadata.description then metadata.description = names.clip(metadata.description, 2000) end
  for k, v in pairs(metadata.labels or {}) do metadata.labels[k] = names.clip(v, 200) end
  return { apiVersion = API, kind = kind, metadata = metadata, spec = spec }
end
local function digest(d) return record.digest(d) end

--- kernelindex's OperationSpec of a reproduced Liger kernel (its benchmark script at commit, default
-- the one kernelindex's importer read).
--
-- @signature liger.operation_document(kernel [, commit]) -> document
-- @example
--   print(liger.operation_document("llama4_rope").metadata.name) --> liger-llama4-rope
function M.operation_document(kernel, commit)
  local k = M.KERNELS[kernel]
  if not k then error("bad argument #1 to 'operation_document' (not a reproduced Liger kernel: " .. tostring(kernel) .. ')', 2) end
  local op = {}
  for key, v in pairs(k.op) do op[key] = v end
  if commit then
    op.source_url = string.format('%s/blob/%s/benchmark/scripts/benchmark_%s.py', M.REPOSITORY, commit, k.csv_name)
  end
  return operation.document(op)
end

--- The WorkloadCase of a binding of a reproduced Liger kernel.
--
-- @signature liger.workload_document(kernel, binding [, operation_digest]) -> document
-- @example
--   local w = liger.workload_document("llama4_rope", {axes = {seq = 2048, hidden = 512, q_heads = 32, kv_heads = 8}, dtype = "bf16"})
function M.workload_document(kernel, binding, operation_digest)
  local k = M.KERNELS[kernel]
  if not k then error("bad argument #1 to 'workload_document' (not a reproduced Liger kernel: " .. tostring(kernel) .. ')', 2) end
  return operation.workload(k.op, operation_digest or digest(M.operation_document(kernel)), binding)
end

--- The SoftwareProject of a project slug of M.PROJECTS.
--
-- @signature liger.project_document(slug) -> document
-- @example
--   print(liger.project_document("liger-kernel").spec.name)
function M.project_document(slug)
  local p = M.PROJECTS[slug]
  if not p then error("bad argument #1 to 'project_document' (unknown project " .. tostring(slug) .. ')', 2) end
  return doc('SoftwareProject', { name = slug },
    { name = p.name, kind = 'library', repository = p.repository, host = { kind = 'github', id = p.id } })
end

--- The ImplementationRevision of a Liger benchmark provider for a kernel; nil for an unknown provider.
--
-- @signature liger.implementation_document(kernel, provider [, operation_digest]) -> document | nil
-- @example
--   print(record.digest(liger.implementation_document("llama4_rope", "huggingface")))
function M.implementation_document(kernel, provider, operation_digest)
  args.check('liger.implementation_document', 1, kernel, 'string', 'kernel name')
  args.check('liger.implementation_document', 2, provider, 'string', 'provider')
  local entry = M.PROVIDERS[provider]
  if not entry then return nil end
  local csv_name = M.KERNELS[kernel] and M.KERNELS[kernel].csv_name or kernel
  local title = M.KERNELS[kernel] and M.KERNELS[kernel].title or kernel
  return doc('ImplementationRevision', {
    name = names.kebab('liger-bench-' .. csv_name .. '-' .. provider),
    title = title .. ' · ' .. entry.title,
    description = entry.description,
    labels = entry.role and { role = entry.role } or nil,
    sourceRefs = { { url = M.REPOSITORY } },
  }, {
    projectRevision = output.object(),
    operation = { specDigest = operation_digest or digest(M.operation_document(kernel)) },
    callable = { language = entry.language },
    support = { hardwareArchitectures = output.array(), dtypes = output.array() },
    buildVariants = entry.pip and { { name = 'pip', install = { kind = 'pip', package = entry.pip } } } or nil,
    licensing = { declared = entry.declared, concluded = entry.concluded },
  })
end

--- The BenchmarkProtocol of Liger's harness for one timed pass (the importer's ligerProtocol).
--
-- @signature liger.protocol_document(mode) -> document
-- @example
--   print(record.digest(liger.protocol_document("backward")))
function M.protocol_document(mode)
  args.check('liger.protocol_document', 1, mode, 'string', 'mode')
  return doc('BenchmarkProtocol', {
    name = names.kebab('liger-bench-do-bench-' .. mode),
    title = 'Liger benchmark harness · ' .. mode .. ' pass',
  }, {
    harness = { name = M.HARNESS.name, repository = M.HARNESS.repository },
    measurement = { timer = 'cuda_events', primaryStatistic = 'median' },
    comparability = {
      family = 'liger_kernel_bench',
      notes = 'Timed: ' .. (M.TIMED[mode] or mode) .. ', via triton.testing.do_bench with quantiles 0.5/0.2/0.8 '
        .. "(median with p20/p80 spread). The upstream CSV records no CUDA, driver, or torch version; the Liger "
        .. "release rides each run's labels. Comparable only within one kernel, workload, timed pass, and GPU.",
    },
  })
end

-- Our own protocol of Liger's memory probe (kernelindex's importer skips
-- memory rows: these documents are kluabench's, labelled not_reproduced).
local function memory_protocol_document(mode)
  return doc('BenchmarkProtocol', {
    name = names.kebab('liger-bench-memory-' .. mode),
    title = 'Liger benchmark harness · peak memory, ' .. mode .. ' pass',
    labels = { not_reproduced = 'kernelindex imports speed rows only' },
  }, {
    harness = { name = M.HARNESS.name, repository = M.HARNESS.repository },
    measurement = { timer = 'torch_cuda_max_memory_allocated', primaryStatistic = 'median' },
    comparability = {
      family = 'liger_kernel_bench_memory',
      notes = 'Measured: the peak GPU memory allocated (torch.cuda.max_memory_allocated, MB) while running '
        .. (M.TIMED[mode] or mode) .. ', repeated, with quantiles 0.5/0.2/0.8 (median with p20/p80 spread). '
        .. 'Comparable only within one kernel, workload, pass, and GPU.',
    },
  })
end

--- The ExecutionEnvironment of a Liger CSV gpu_name (the importer's ligerEnvironment); nil for a
-- GPU the importer does not know, unless opts.guess (then from the name, labelled not_reproduced).
--
-- @signature liger.environment_document(gpu_name [, opts]) -> document | nil
-- @example
--   print(record.digest(liger.environment_document("NVIDIA H100 80GB HBM3")))
function M.environment_document(gpu, opts)
  args.check('liger.environment_document', 1, gpu, 'string', 'GPU name')
  args.check('liger.environment_document', 2, opts, 'table|nil', 'table of options')
  local hw = M.HARDWARE[gpu]
  local labels
  if not hw then
    if not (opts and opts.guess) then return nil end
    local vendor, product, ff = env.split_gpu_name(gpu)
    local arch = env.arch_of_gpu_name(gpu)
    if not vendor or product == '' or not arch then return nil end
    hw = { vendor = vendor, product = product, architecture = arch, formFactor = ff }
    labels = { not_reproduced = 'a GPU kernelindex\'s importer does not know' }
  end
  local copy = {}
  for k, v in pairs(hw) do copy[k] = v end
  return doc('ExecutionEnvironment', {
    name = names.kebab('liger-bench-' .. gpu),
    title = 'Liger benchmark host · ' .. gpu:gsub('^NVIDIA ', ''),
    labels = labels,
  }, { hardware = copy, software = output.object() })
end

---------------------------------------------------------------------------
-- Row -> bundle
---------------------------------------------------------------------------

--- Why rows are skipped, by reason code (import-liger counts them).
M.SKIP = {
  memory_row = 'memory rows (kernelindex imports speed rows only; import-liger keeps them as our own unless '
    .. '--speed-only)',
  not_reproduced = 'kernels kernelindex curates that kluabench does not reproduce',
  uncurated_kernel = 'kernels kernelindex does not curate',
  unknown_mode = 'operation modes other than forward, backward and full',
  unknown_config = 'configs that do not bind the kernel\'s axes',
  unknown_provider = 'providers kernelindex does not know',
  unknown_gpu = 'GPUs kernelindex does not know (--keep keeps them as our own)',
  invalid = 'rows with a value that is not a number, a time or UTF-8',
  duplicate_row = 'rows repeating a run already imported (the same kernel, mode, provider, GPU, workload and '
    .. 'time: the externalId kernelindex\'s importer imports once)',
}

--- A run's metadata.name from its parts: kernelindex's kebab case, whole when it fits in 100
-- characters; when not, cut, with 12 hex digits of the SHA-256 of the whole kebab at its end. The
-- name keeps what tells runs apart: kernelindex's importer cuts at 100, which drops the run's time
-- (two runs of one point on two dates had one name, and import-liger --out one file).
--
-- @signature liger.run_name(text) -> name
-- @example
--   print(liger.run_name("liger-rope-forward-liger-NVIDIA H100 80GB HBM3")) --> liger-rope-forward-liger-nvidia-h100-80gb-hbm3
--   print(#liger.run_name(string.rep("a-", 80) .. "2025-08-07 21:42:05")) --> 100
function M.run_name(text)
  args.check('liger.run_name', 1, text, 'string', 'name text')
  local full = text:lower():gsub('[^a-z0-9]+', '-'):gsub('^%-+', ''):gsub('%-+$', '')
  if #full <= names.MAX_NAME then return full end
  local tail = '-' .. core.sha256(full):sub(1, 12)
  return (full:sub(1, names.MAX_NAME - #tail):gsub('%-+$', '')) .. tail
end

-- The run of a speed row (the importer's runFromRow; its name keeps the run's time, liger.run_name).
local function speed_run(row, k, binding, digests, values)
  local ms50, ms20, ms80 = values[1], values[2], values[3]
  local key = operation.case_key(binding)
  local external = table.concat({ k.csv_name, row.kernel_operation_mode, row.kernel_provider, names.kebab(row.gpu_name),
    key, names.kebab(row.timestamp) }, '/')
  local ns = function(ms) return record.round(ms * 1e6) end
  return doc('BenchmarkRun', {
    name = M.run_name(string.format('liger-%s-%s-%s-%s-%s-%s', k.csv_name, row.kernel_operation_mode,
      row.kernel_provider, row.gpu_name, key, row.timestamp)),
    title = k.title .. ' · ' .. row.kernel_provider .. ' · ' .. row.kernel_operation_mode,
    labels = { liger_version = row.liger_version },
  }, {
    implementationDigest = digests.implementation,
    workloadDigest = digests.workload,
    protocolDigest = digests.protocol,
    environmentDigest = digests.environment,
    status = 'passed',
    timing = { primaryStatistic = 'median', latencyNs = { median = ns(ms50) } },
    measurements = {
      { metric = 'latency', unit = 'ns', statistic = 'p20', value = ns(ms20) },
      { metric = 'latency', unit = 'ns', statistic = 'p80', value = ns(ms80) },
    },
    sourceNative = {
      source = M.SOURCE,
      benchmark = k.csv_name .. '/' .. row.kernel_operation_mode,
      externalId = external,
      metrics = { ms_50 = ms50, ms_20 = ms20, ms_80 = ms80 },
    },
    observedAt = names.iso8601(digests.time),
  })
end

-- The run of a memory row: our own (not reproduced), the three quantiles as
-- measurements in MB.
local function memory_run(row, k, binding, digests, values)
  local key = operation.case_key(binding)
  local unit = names.kebab(row.metric_unit):gsub('-', '_')
  if not unit:match('^[a-z]') then unit = 'mb' end
  local ms = {}
  for i, q in ipairs { 'median', 'p20', 'p80' } do
    ms[i] = { metric = 'memory', unit = unit, statistic = q, value = values[i] }
  end
  return doc('BenchmarkRun', {
    name = M.run_name(string.format('liger-%s-memory-%s-%s-%s-%s-%s', k.csv_name, row.kernel_operation_mode,
      row.kernel_provider, row.gpu_name, key, row.timestamp)),
    title = k.title .. ' · ' .. row.kernel_provider .. ' · ' .. row.kernel_operation_mode .. ' · memory',
    labels = { liger_version = row.liger_version, not_reproduced = 'kernelindex imports speed rows only' },
  }, {
    implementationDigest = digests.implementation,
    workloadDigest = digests.workload,
    protocolDigest = digests.protocol,
    environmentDigest = digests.environment,
    status = 'passed',
    measurements = ms,
    sourceNative = {
      source = M.SOURCE,
      benchmark = k.csv_name .. '/' .. row.kernel_operation_mode .. '/memory',
      externalId = table.concat({ k.csv_name, row.kernel_operation_mode, row.kernel_provider,
        names.kebab(row.gpu_name), key, names.kebab(row.timestamp), 'memory' }, '/'),
      metrics = { mb_50 = values[1], mb_20 = values[2], mb_80 = values[3] },
    },
    observedAt = names.iso8601(digests.time),
  })
end

local function kernel_of_csv(name)
  for kernel, k in pairs(M.KERNELS) do
    if k.csv_name == name then return kernel, k end
  end
  return nil
end

--- The bundle of one parsed row, as kernelindex's importer builds it; or nil, reason (a key of
-- M.SKIP), message.
--
-- opts: memory (keep memory rows, as runs of our own labelled not_reproduced: kernelindex's importer
-- skips them), keep (memory rows, and rows of GPUs the importer does not know, likewise), commit
-- (the Liger commit the OperationSpec cites). Speed rows are the importer's whatever the options.
--
-- @signature liger.row_to_bundle(row [, opts]) -> bundle | nil, reason, message
-- @example
--   local text = table.concat(liger.HEADER, ",") .. "\n"
--     .. "llama4_rope,liger,forward,speed,ms,H,hidden size,512,0.05,0.0485,0.052,"
--     .. '"{""dtype"": ""torch.bfloat16"", ""seq_len"": 2048, ""num_q_heads"": 32, ""num_kv_heads"": 8}",'
--     .. "NVIDIA H100 80GB HBM3,2025-08-07 21:42:00,0.6.1\n"
--   for _, row in ipairs(assert(liger.parse(text))) do local b, why = liger.row_to_bundle(row) end
function M.row_to_bundle(row, opts)
  args.check('liger.row_to_bundle', 1, row, 'table', 'Liger CSV row')
  args.check('liger.row_to_bundle', 2, opts, 'table|nil', 'table of options')
  opts = opts or {}
  local function skip(reason, fmt, ...) return nil, reason, string.format(fmt, ...) end
  if row.error then return skip('invalid', '%s', row.error) end
  for _, col in ipairs(M.HEADER) do
    if row[col] == nil then return skip('invalid', 'row lacks column %s', col) end
    -- records are JSON, whose strings are UTF-8 (found by tests/fuzz/fuzz_csv.c)
    if not utf8.len(row[col]) then return skip('invalid', '%s is not valid UTF-8', col) end
  end
  local memory = row.metric_name ~= 'speed'
  if memory and not ((opts.keep or opts.memory) and row.metric_name == 'memory') then
    return skip('memory_row', '%s row (kernelindex imports speed rows only)', row.metric_name)
  end
  local kernel, k = kernel_of_csv(row.kernel_name)
  if not k then
    if M.NOT_REPRODUCED[row.kernel_name] then
      return skip('not_reproduced', 'kernel %s: kluabench does not reproduce its importer', quoted(row.kernel_name))
    end
    return skip('uncurated_kernel', 'kernel %s is not curated by kernelindex\'s importer', quoted(row.kernel_name))
  end
  local mode = row.kernel_operation_mode
  if not M.TIMED[mode] then return skip('unknown_mode', 'mode %s', quoted(mode)) end
  if not M.PROVIDERS[row.kernel_provider] then
    return skip('unknown_provider', 'provider %s', quoted(row.kernel_provider))
  end
  local config, cerr = M.parse_config(row.extra_benchmark_config_str)
  if not config then return skip('unknown_config', '%s', cerr) end
  -- Liger 0.8's model-config sweep: x is a model of Liger's registry (llama_3_8b), whose axes the
  -- row does not hold
  if row.x_name == 'model_config' then
    return skip('unknown_config', "x 'model_config' = %s names a model of Liger's registry, not the axes of %s",
      quoted(row.x_value), kernel)
  end
  -- an x_value that is no number is a broken row (kernelindex's importer would skip it as an
  -- unknown config, or read "0x200" as 512): refused, named, like a y value that is no number
  local x = decimal(row.x_value)
  if x == nil then return skip('invalid', 'x_value is not a decimal number (%s)', quoted(row.x_value)) end
  if unrecordable(x) then return skip('invalid', 'x_value %s (%s)', unrecordable(x), quoted(row.x_value)) end
  local binding = x == math.floor(x) and x > 0 and k.bind(math.tointeger(x), row.x_name, config) or nil
  if not binding then
    return skip('unknown_config', 'x %s = %s with config %s does not bind the axes of %s', quoted(row.x_name),
      quoted(row.x_value), quoted(row.extra_benchmark_config_str), kernel)
  end
  local environment = M.environment_document(row.gpu_name, { guess = opts.keep })
  if not environment then return skip('unknown_gpu', 'GPU %s', quoted(row.gpu_name)) end
  local time, terr = names.parse_time(row.timestamp)
  if not time then return skip('invalid', 'timestamp: %s', terr) end
  local values = {}
  for i, col in ipairs(Y_COLUMNS) do
    local v, err = number_field(row, col)
    if not v then return skip('invalid', '%s', err) end
    if v < 0 or (v == 0 and not memory) then
      return skip('invalid', '%s is %s (%s): a %s must be %s', col, v < 0 and 'negative' or 'zero', quoted(row[col]),
        memory and 'memory figure' or 'time', memory and 'zero or more' or 'positive')
    end
    if not memory and v * 1e6 >= 2 ^ 53 then
      -- the schema's latencies are integers of ns up to 2^53 (104 days)
      return skip('invalid', '%s is %s ms (%s): beyond 2^53 ns, the longest latency a run can hold', col,
        string.format('%.6g', v), quoted(row[col]))
    end
    values[i] = v + 0.0
  end
  local op = M.operation_document(kernel, opts.commit)
  local od = digest(op)
  local workload = M.workload_document(kernel, binding, od)
  local implementation = M.implementation_document(kernel, row.kernel_provider, od)
  local protocol = memory and memory_protocol_document(mode) or M.protocol_document(mode)
  local digests = { operation = od, workload = digest(workload), implementation = digest(implementation),
    protocol = digest(protocol), environment = digest(environment), time = time }
  local run = (memory and memory_run or speed_run)(row, k, binding, digests, values)
  if environment.metadata.labels then
    run.metadata.labels.not_reproduced = environment.metadata.labels.not_reproduced
  end
  return {
    run = run, protocol = protocol, environment = environment, workload = workload,
    implementation = implementation, operation = op,
    project = M.project_document(M.PROVIDERS[row.kernel_provider].project),
  }
end

--- What is suspicious about a row that is still imported (kernelindex's importer imports it as it is),
-- or nil: p20 above p80.
--
-- @signature liger.row_warning(row) -> message | nil
-- @example
--   print(liger.row_warning({y_value_20 = "2", y_value_80 = "1"}))
function M.row_warning(row)
  args.check('liger.row_warning', 1, row, 'table', 'Liger CSV row')
  local p20, p80 = decimal(row.y_value_20), decimal(row.y_value_80)
  if p20 and p80 and p20 > p80 then
    return string.format('y_value_20 (%s) is above y_value_80 (%s): the quantiles look swapped; imported as they are, '
      .. "as kernelindex's importer does", quoted(row.y_value_20), quoted(row.y_value_80))
  end
  return nil
end

--- The binding of our parameters and dtype on kernelindex's workload of a reproduced Liger kernel,
-- or nil when the point is not one of it.
--
-- @signature liger.binding_of(kernel, params, dtype) -> binding | nil
-- @example
--   print(liger.binding_of("rope", {hidden = 512, seq = 2048, q_heads = 32, kv_heads = 8}, "bf16").dtype) --> bf16
function M.binding_of(kernel, params, dtype)
  args.check('liger.binding_of', 1, kernel, 'string', 'kernel name')
  args.check('liger.binding_of', 2, params, 'table', 'table of parameters')
  local k = kernels.KERNELS[kernel]
  return k and k.kernelindex and k.kernelindex.bind(params, dtype) or nil
end

---------------------------------------------------------------------------
-- Bundle -> row (our results in Liger's CSV)
---------------------------------------------------------------------------

-- extra_benchmark_config_str as Python's json.dumps writes it.
local function config_string(params, dtype, x_key)
  local keys, vals = {}, {}
  if dtype then
    keys[1], vals.dtype = 'dtype', M.TORCH_DTYPE[dtype] or dtype
  end
  for k, v in pairs(params) do
    if k ~= x_key then
      local lk = M.LIGER_PARAM[k] or k
      keys[#keys + 1] = lk
      vals[lk] = v
    end
  end
  table.sort(keys, function(a, b)
    local ra, rb = CONFIG_ORDER[a], CONFIG_ORDER[b]
    if ra and rb then return ra < rb end
    if ra or rb then return ra ~= nil end
    return a < b
  end)
  local parts = {}
  for i, k in ipairs(keys) do
    local v = vals[k]
    local s = type(v) == 'number' and csv.format_pyfloat(v) or output.encode_line(v)
    parts[i] = output.quote(k) .. ': ' .. s
  end
  return '{' .. table.concat(parts, ', ') .. '}'
end

--- The swept axis of a point of Liger's RoPE benchmarks when nothing says it (imported runs carry
-- no annotation): seq for the sequence sweep (hidden 8192, seq other than 2048), else hidden (the
-- hidden sweep at seq 2048, and the point both sweeps share). nil for other parameters.
--
-- @signature liger.default_x(params) -> "hidden" | "seq" | nil
-- @example
--   print(liger.default_x({hidden = 8192, seq = 4096})) --> seq
function M.default_x(params)
  args.check('liger.default_x', 1, params, 'table', 'table of parameters')
  if type(params) ~= 'table' or params.hidden == nil or params.seq == nil then return nil end
  if params.hidden == 8192 and params.seq ~= 2048 then return 'seq' end
  return 'hidden'
end

--- A CSV row of a bundle; the x axis from the run's evidence annotation (liger_x_name), opts.x,
-- else liger.default_x.
--
-- A row (table keyed by M.HEADER) of a bundle, or nil and a message.
--
-- @signature liger.bundle_to_row(bundle [, opts]) -> row | nil, message
-- @example
--   local x = kb.randn({4096}, "f32", 1)
--   local r = kb.do_bench.do_bench_protocol{rep_ms = 5}:run(function() x:add_(1) end)
--   local bundle = record.from_result{kernel = "add", mode = "forward", provider = "add_", parameters = {n = 4096},
--     dtype = "f32", result = r}
--   local row = liger.bundle_to_row(bundle, {x = "n"})
function M.bundle_to_row(bundle, opts)
  args.check('liger.bundle_to_row', 1, bundle, 'table', 'bundle')
  args.check('liger.bundle_to_row', 2, opts, 'table|nil', 'table of options')
  opts = opts or {}
  local p = result.session(bundle)
  if not p.kernel or not p.mode or not p.provider then
    return nil, 'bundle lacks the run\'s sourceNative benchmark and externalId'
  end
  local ann = type(p.evidence.annotations) == 'table' and p.evidence.annotations or {}
  local params = p.params
  local x_name = type(ann.liger_x_name) == 'string' and ann.liger_x_name or nil
  local x_key = x_name and M.param_name(x_name) or opts.x or M.default_x(params)
  if not x_key then x_key = params.hidden and 'hidden' or (params.seq and 'seq') or next(params) end
  if not x_name then x_name = M.X_AXIS[x_key] and M.X_AXIS[x_key][1] or x_key end
  local x_label = ann.liger_x_label or (M.X_AXIS[x_key] and M.X_AXIS[x_key][2]) or x_key
  local metric, unit, y
  local metrics = p.source_metrics or {}
  if p.metric == 'memory' then
    metric, unit = 'memory', (p.memory_unit == 'mb' and 'MB') or p.memory_unit or 'MB'
    y = { p.memory_median, p.memory_p20, p.memory_p80 }
  else
    metric, unit = 'speed', 'ms'
    y = { metrics.ms_50 or (p.median_ns and p.median_ns / 1e6), metrics.ms_20 or (p.p20_ns and p.p20_ns / 1e6),
      metrics.ms_80 or (p.p80_ns and p.p80_ns / 1e6) }
  end
  for i = 1, 3 do
    if type(y[i]) ~= 'number' then return nil, 'run lacks the ' .. M.QUANTILES[i] .. ' quantile' end
  end
  local time = p.observed_at and names.parse_time(p.observed_at)
  local labels = p.labels
  return {
    kernel_name = p.kernel,
    kernel_provider = p.provider,
    kernel_operation_mode = p.mode,
    metric_name = metric,
    metric_unit = unit,
    x_name = x_name,
    x_label = x_label,
    x_value = params[x_key],
    y_value_50 = y[1] + 0.0,
    y_value_20 = y[2] + 0.0,
    y_value_80 = y[3] + 0.0,
    extra_benchmark_config_str = ann.liger_extra_benchmark_config or config_string(params, p.dtype, x_key),
    gpu_name = ann.liger_gpu_name or p.device or '',
    timestamp = time and names.liger_time(time) or '',
    liger_version = labels.liger_version or labels.kluabench_version or '',
  }
end

--- CSV text, header and one line per row.
--
-- @signature liger.to_csv(rows) -> text
-- @example
--   local x = kb.randn({4096}, "f32", 1)
--   local r = kb.do_bench.do_bench_protocol{rep_ms = 5}:run(function() x:add_(1) end)
--   local bundle = record.from_result{kernel = "add", mode = "forward", provider = "add_", dtype = "f32", result = r}
--   io.write(liger.to_csv({liger.bundle_to_row(bundle)}))
function M.to_csv(rows)
  args.check('liger.to_csv', 1, rows, 'table', 'list of Liger CSV rows')
  local out = { csv.csv_line(M.HEADER) }
  for _, row in ipairs(rows) do
    local fields = {}
    for i, k in ipairs(M.HEADER) do fields[i] = row[k] end
    out[#out + 1] = csv.csv_line(fields, #M.HEADER)
  end
  return table.concat(out)
end

--- The point of a chart (kluabench.charts.plot's fields: kernel, mode, provider, metric, unit, gpu,
-- dtype, params, y50/y20/y80, x_labels, and bytes and flops from the kernel registry's cost model)
-- of one parsed CSV row (see liger.parse), or nil and a message.
--
-- @signature liger.plot_point(row) -> point | nil, message
-- @example
--   local rows = assert(liger.parse("kernel_name,kernel_provider,kernel_operation_mode,metric_name,metric_unit,x_name,x_label,x_value,y_value_50,y_value_20,y_value_80,extra_benchmark_config_str,gpu_name,timestamp,liger_version\nrope,liger,forward,speed,ms,T,seq,2048,0.1,0.09,0.11,{},H100,,\n"))
--   print(liger.plot_point(rows[1]).params.seq) --> 2048
function M.plot_point(row)
  args.check('liger.plot_point', 1, row, 'table', 'Liger CSV row')
  if row.error then return nil, row.error end
  local config, err = M.parse_config(row.extra_benchmark_config_str)
  if not config then return nil, err end
  local p = {
    kernel = row.kernel_name, mode = row.kernel_operation_mode, provider = row.kernel_provider,
    metric = row.metric_name, unit = row.metric_unit, gpu = row.gpu_name ~= '' and row.gpu_name or nil,
    params = {},
    y50 = tonumber(row.y_value_50), y20 = tonumber(row.y_value_20), y80 = tonumber(row.y_value_80),
  }
  if not p.y50 then return nil, 'y_value_50 is not a number' end
  for k, v in pairs(config) do
    if k == 'dtype' then p.dtype = names.dtype_name(tostring(v)) else p.params[M.param_name(k)] = v end
  end
  if type(row.x_name) ~= 'string' or row.x_name == '' then return nil, 'x_name is empty' end
  local x = M.param_name(row.x_name)
  p.params[x] = tonumber(row.x_value) or row.x_value
  if row.x_label and row.x_label ~= '' then p.x_labels = { [x] = row.x_label } end
  -- the CSV carries no cost: the kernel's cost model, as records get it
  local k = kernels.kernel(p.kernel)
  if k and k.cost then p.bytes, p.flops = k.cost(p.params, p.dtype, p.mode) end
  return p
end

--- Liger's CSV of a list of bundles, header included, and how many bundles it leaves out: runs
-- whose status is not passed (a failed or unchecked run has no time, and Liger's CSV has no column
-- to say why; the records keep them). What `--format liger-csv` writes.
--
-- @signature liger.csv_of_bundles(bundles) -> text, left_out | nil, message
-- @example
--   local x = kb.randn({4096}, "f32", 1)
--   local r = kb.do_bench.do_bench_protocol{rep_ms = 5}:run(function() x:add_(1) end)
--   local bundle = record.from_result{kernel = "add", mode = "forward", provider = "add_", dtype = "f32", result = r}
--   local text, left_out = assert(liger.csv_of_bundles({bundle}))
--   io.write(text)
function M.csv_of_bundles(bundles)
  args.check('liger.csv_of_bundles', 1, bundles, 'table', 'list of bundles')
  local rows, left_out = {}, 0
  for _, b in ipairs(bundles) do
    if result.session(b).status ~= 'passed' then
      left_out = left_out + 1
    else
      local row, err = M.bundle_to_row(b)
      if not row then return nil, err end
      rows[#rows + 1] = row
    end
  end
  local text, err = M.to_csv(rows)
  if not text then return nil, err end
  return text, left_out
end

--- Writes bundles as Liger's CSV to out atomically (the harness's `--format liger-csv`): out, notes (the bundles
-- left out, where the file went when another process wrote out since claim) | nil, message.
-- @signature liger.write_csv(bundles, out [, samples, claim]) -> out, notes | nil, message
-- @example
--   local x = kb.randn({4096}, "f32", 1)
--   local r = kb.do_bench.do_bench_protocol{rep_ms = 5}:run(function() x:add_(1) end)
--   local b = record.from_result{kernel = "add", mode = "forward", provider = "add_", dtype = "f32", result = r}
--   local path = os.tmpname()
--   print(liger.write_csv({b}, path))
--   os.remove(path)
function M.write_csv(bundles, out, _, claim)
  args.check('liger.write_csv', 1, bundles, 'table', 'list of bundles')
  args.check('liger.write_csv', 2, out, 'string', "output path ('-': stdout)")
  local text, left_out = M.csv_of_bundles(bundles)
  if not text then return nil, left_out end
  local notes = {}
  if left_out > 0 then
    notes[1] = string.format('%d bundle%s whose status is not passed %s not in the Liger CSV (it has no column to '
      .. 'say why; --format jsonl keeps every bundle)', left_out, left_out == 1 and '' or 's',
      left_out == 1 and 'is' or 'are')
  end
  if out == '-' then
    local ok, err = files.write_stdout(text)
    if not ok then return nil, err end
    return out, notes
  end
  -- nobody wrote it between the claim and the write: checked and written under one lock
  return whole_file.locked(out, function()
    if claim then
      local dest, _, why = whole_file.destination(claim, out)
      out = dest
      notes[#notes + 1] = why
    end
    local ok, err = files.write_atomic(out, text)
    if not ok then return nil, tostring(err) end
    return out, notes
  end)
end

return M
