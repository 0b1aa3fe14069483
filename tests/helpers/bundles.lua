-- Record bundles of today's format made for a test from a few knobs, through record.from_result,
-- so that every document is what the harness writes and every digest holds (a test that wants a
-- broken bundle breaks it afterwards). Its evidence entry is attached (kluabench.record.evidence):
-- writer.append writes it beside the records.
--
--   bundles.make{samples = {1.0, 1.1, ...}}            -- ms; the summary is theirs
--   bundles.make{median_ms = 2, n = 0}                 -- a run without raw samples
--   knobs: kernel ('llama4_rope'), mode ('forward'), provider ('fused'), hidden (512), seq (2048),
--   q_heads (32), kv_heads (8), dtype ('bf16'), session {index, count}, status, reasons, device
--   (a product name: the environment says it, backend cuda), protocol ('do_bench', or a protocol
--   value), time (seconds since the epoch, default a new second per bundle), execution, bytes,
--   flops, throughput (record.from_result's: the harness's figures, false for none), noise (the
--   between-session figure in force that the evidence names: {sd, scope, ...}).
local kb = require 'kluabench'
local record = require 'kluabench.record'
local names = require 'kluabench.record.names'
local env = require 'kluabench.record.env'
local stats = require 'kluabench.stats'

local M = {}

local made = 0

-- The environment of a device of another name (a GPU, as the H200's records say it).
local function environment(device)
  local e = env.capture()
  if device then
    e.spec.hardware = { vendor = 'nvidia', product = device, architecture = 'sm_90' }
    e.metadata.name = names.dns_name('kluabench', names.gpu_slug(device))
  end
  return e
end

function M.make(o)
  o = o or {}
  made = made + 1
  local samples = o.samples or {}
  local result = { samples = samples, used = o.used or {}, backend = o.device and 'cuda' or nil,
    timer = o.device and 'cuda_events' or nil }
  local protocol = type(o.protocol) == 'table' and o.protocol or kb.do_bench.do_bench_protocol()
  if #samples > 0 then
    result.summary = stats.describe(samples, protocol.params.quantiles)
  elseif o.median_ms then
    -- a run whose samples are not kept: its median only (keep_samples = false below)
    result.samples = { o.median_ms }
    result.summary = stats.describe({ o.median_ms }, protocol.params.quantiles)
  end
  local b = record.from_result {
    kernel = o.kernel or 'llama4_rope', mode = o.mode or 'forward', provider = o.provider or 'fused',
    parameters = { hidden = o.hidden or 512, seq = o.seq or 2048, q_heads = o.q_heads or 32, kv_heads = o.kv_heads or 8 },
    dtype = o.dtype or 'bf16', result = result, protocol = protocol, environment = environment(o.device),
    session = o.session and { index = o.session[1], count = o.session[2] } or nil,
    status = o.status, reasons = o.reasons, execution = o.execution, noise = o.noise,
    keep_samples = o.median_ms == nil, bytes = o.bytes, flops = o.flops, throughput = o.throughput,
    time = names.utc(1700000000 + (o.time or made)),
  }
  return b
end

-- n bundles, each a session of one sweep (index i of n), samples from samples(i).
function M.sessions(n, samples, o)
  local out = {}
  for i = 1, n do
    local oi = {}
    for k, v in pairs(o or {}) do oi[k] = v end
    oi.samples, oi.session = samples(i), { i, n }
    out[i] = M.make(oi)
  end
  return out
end

return M
