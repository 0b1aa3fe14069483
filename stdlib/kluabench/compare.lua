--- Comparing two sets of results point by point: is NEW faster, slower, the
-- same as BASE, or can the samples not tell?
--
-- compare reads bundles only through the result model (kluabench.result):
-- result.session for each bundle, result.points for the sessions of one side
-- of a point and their aggregate, so that its numbers are the ones every other
-- view shows.
--
-- Points are matched by the run's workloadDigest, the mode (the timed pass)
-- and the provider, and paired by device: BASE's runs on a device with NEW's
-- on the same device. A point measured on one device in BASE and on another in
-- NEW is refused ("not compared") unless opts.across_devices
-- (--across-devices) says so; then every such row notes the pairing. Each
-- bundle of a point is one measurement session (the harness's --runs N gives
-- N); a side's estimate is result.points' median_ns, the mean of its
-- sessions' medians. For each match:
--   - the ratio new / base of those estimates (> 1: NEW is slower),
--   - its confidence interval from a hierarchical bootstrap: sessions
--     resampled, then samples within them (inference.hierarchical_ratio),
--     so that the run-to-run shift counts, not only the spread inside a run;
--   - with 3 or more sessions on both sides, the spread the sessions show
--     is the run-to-run noise (Student's t for its few degrees of freedom);
--     a side of fewer sessions cannot show it, and its interval is widened
--     by a between-session figure at the point's time scale (--between, the
--     cache's figure for the records' device and kernel that
--     scripts/run_noise.lua fills, else the conservative default of the
--     records' device and backend, record/noise.lua);
--   - the smallest change the interval could have called (detectable);
--   - the Mann-Whitney U test's two-sided p-value on the pooled samples
--     (reported, as a second opinion that does not depend on the median).
-- Verdict, with the interval [lo, hi] and the noise band `noise` (default
-- 1 %):
--   SAME    the whole interval lies within [1 - noise, 1 + noise]
--   SLOWER  lo > 1 + noise                FASTER  hi < 1 - noise
--   UNSURE  anything else ("no evidence either way (could detect >= x %)"),
--           or fewer than MIN_SAMPLES samples on a side.
-- A regression is a SLOWER point whose ratio exceeds 1 + threshold (default
-- 5 %); `kluabench compare` exits 1 when there is one.
local core = require 'kluabench.core'
local args = require 'kluabench.util.args'
local json = require 'kluabench.util.json'
local stats = require 'kluabench.stats'
local inference = require 'kluabench.stats.inference'
local results = require 'kluabench.table'
local record = require 'kluabench.record'
local reader = require 'kluabench.record.reader'
local verify = require 'kluabench.record.verify'
local noise = require 'kluabench.record.noise'
local ceilings = require 'kluabench.measure.ceilings'
local result = require 'kluabench.result'

local M = {}

-- True once SIGINT or SIGTERM stopped the command (kb.interrupted): an error
-- caught then is the interrupt itself.
local function interrupted() return core.interrupted() == true end

M.DEFAULTS = { threshold = 0.05, noise = 0.01, confidence = 0.95, resamples = 2000, seed = 1,
  familywise = true }

--- Fewer samples than this on either side of a point: UNSURE, never a
-- verdict (a median and its interval need a few samples to mean anything).
M.MIN_SAMPLES = 5

--- Sides with at least this many sessions on both sides: their own between-session spread decides,
-- and no stored figure enters (record/noise.lua).
M.OWN_SESSIONS = noise.OWN_SESSIONS

local function finite(x) return type(x) == 'number' and x == x and x > -math.huge and x < math.huge end

-- Text from a record made safe for a terminal: control characters as \xNN (args.printable), never cut.
local function printable(s) return s ~= nil and args.printable(s, #tostring(s)) or nil end

---------------------------------------------------------------------------
-- Reading bundles (kluabench.record.reader; each seen through result.session)
---------------------------------------------------------------------------

--- The bundles in a decoded value: a bundle, a list, or {bundles = [...]}.
--
-- nil, message otherwise.
--
-- @signature compare.bundles_of(v) -> bundles | nil, message
-- @example
--   local x = kb.randn({4096}, "f32", 1)
--   local r = kb.do_bench.do_bench_protocol{rep_ms = 5}:run(function() x:add_(1) end)
--   local bundle = record.from_result{kernel = "add", mode = "forward", provider = "add_", dtype = "f32", result = r}
--   local list = compare.bundles_of({bundles = {bundle}}) -- what a file's {"bundles": [...]} decodes to
--   print(#list) --> 1
function M.bundles_of(v)
  if reader.is_bundle(v) then return { v } end
  if type(v) == 'table' and type(v.bundles) == 'table' then v = v.bundles end
  if type(v) == 'table' and #v > 0 then
    for i, b in ipairs(v) do
      if not reader.is_bundle(b) then return nil, string.format('element %d is not a record bundle', i) end
    end
    return v
  end
  return nil, 'not a record bundle or a list of bundles'
end

-- Why a bundle cannot be compared, or nil: no workload digest to match its point on, raw samples
-- that are there but not finite positive numbers, or a workloadDigest that is not the digest of its
-- workload document (recomputed by verify.check: points are matched on it). s: its session.
local function comparable_problem(b, s)
  local wd = s.digests.workload
  if type(wd) ~= 'string' or not wd:match('^sha256:%x+$') then
    return 'no workload digest (run.spec.workloadDigest): the point cannot be matched, '
      .. 'so the bundle is refused rather than pooled with others'
  end
  -- a record without samples (an import) is compared by its median; one whose samples are there
  -- but broken is refused
  if not s.samples_ms and next(s.evidence) ~= nil and s.samples_why ~= 'no raw samples in the record' then
    return s.samples_why
  end
  for _, p in ipairs(verify.check(b)) do
    if p.field == 'workloadDigest' then
      if p.computed then
        return string.format('run.spec.workloadDigest %s is not the digest of its workload document (%s): the '
          .. 'bundle was edited or damaged since it was written (kluabench verify says more)', tostring(p.recorded),
          p.computed)
      end
      if tostring(p.error):match('^missing') then
        return 'no workload document to check run.spec.workloadDigest against (points are matched on it)'
      end
      return 'cannot check run.spec.workloadDigest: ' .. tostring(p.error)
    end
  end
  return nil
end

-- The bundles reader.parse gave, each checked for comparing: bundles, or nil and
-- "LABEL:LINE: point P (provider): why" for the first that does not hold.
local function checked(bundles, lines, label)
  for i, b in ipairs(bundles) do
    local s = result.session(b)
    local why = comparable_problem(b, s)
    if why then
      local point, provider = result.label_of(b, s)
      return nil, string.format('%s:%d: point %s (%s): %s', label, lines[i] or 1, point, provider, why)
    end
  end
  return bundles
end

--- Bundles from JSON or JSON Lines text (reader.parse), checked for comparing: each has a workload
-- digest ("sha256:..."), which is that of its workload document (recomputed: points are matched on
-- it), and raw samples, where it has them, that are finite positive numbers; the first bundle that
-- does not is refused, naming the line and the point.
--
-- Returns a list, or nil, "LABEL:LINE: why".
--
-- @signature compare.parse(text [, label]) -> bundles | nil, message
-- @example
--   local x = kb.randn({4096}, "f32", 1)
--   local r = kb.do_bench.do_bench_protocol{rep_ms = 5}:run(function() x:add_(1) end)
--   local bundle = record.from_result{kernel = "add", mode = "forward", provider = "add_", dtype = "f32", result = r}
--   local text = kb.jcs.encode(bundle) .. "\n" -- a results file's JSON Lines: one bundle a line
--   local bundles = compare.parse(text, "results.jsonl")
function M.parse(text, label)
  args.check('compare.parse', 1, text, 'string', 'JSON Lines text')
  label = label or 'input'
  local bundles, lines = reader.parse(text, label)
  if not bundles then return nil, lines end
  return checked(bundles, lines, label)
end

--- Bundles from a JSON or JSON Lines file, checked for comparing as compare.parse does.
--
-- nil, message on failure.
--
-- @signature compare.read(path) -> bundles | nil, message
-- @example
--   local x = kb.randn({4096}, "f32", 1)
--   local r = kb.do_bench.do_bench_protocol{rep_ms = 5}:run(function() x:add_(1) end)
--   local bundle = record.from_result{kernel = "add", mode = "forward", provider = "add_", dtype = "f32", result = r}
--   local dir = os.tmpname(); os.remove(dir); assert(kb.mkdir(dir))
--   assert(writer.append(dir .. "/results.jsonl", bundle))
--   local bundles = assert(compare.read(dir .. "/results.jsonl"))
--   kb.remove_tree(dir)
function M.read(path)
  local bundles, lines = reader.read(path)
  if not bundles then return nil, lines end
  return checked(bundles, lines, path)
end

--- The raw samples of a bundle in ms (its session's samples_ms, result.session), or nil and why.
--
-- @signature compare.samples_of(bundle) -> ms list | nil, why
-- @example
--   local x = kb.randn({4096}, "f32", 1)
--   local r = kb.do_bench.do_bench_protocol{rep_ms = 5}:run(function() x:add_(1) end)
--   local bundle = record.from_result{kernel = "add", mode = "forward", provider = "add_", dtype = "f32", result = r}
--   local xs = compare.samples_of(bundle)
--   print(#xs == #r.samples) --> true
function M.samples_of(bundle)
  args.check('compare.samples_of', 1, bundle, 'table', 'bundle')
  local s = result.session(bundle)
  if s.samples_ms then return s.samples_ms end
  return nil, s.samples_why or 'no raw samples in the record'
end

--- The recorded median in ms (the session's median_ns, result.session), or nil.
--
-- @signature compare.median_of(bundle) -> ms | nil
-- @example
--   local x = kb.randn({4096}, "f32", 1)
--   local r = kb.do_bench.do_bench_protocol{rep_ms = 5}:run(function() x:add_(1) end)
--   local bundle = record.from_result{kernel = "add", mode = "forward", provider = "add_", dtype = "f32", result = r}
--   print(compare.median_of(bundle))
function M.median_of(bundle)
  args.check('compare.median_of', 1, bundle, 'table', 'bundle')
  local ns = result.session(bundle).median_ns
  return (type(ns) == 'number' and ns > 0 and ns < math.huge) and ns / 1e6 or nil
end

-- key_of of a bundle's session.
local function key_of_session(b, s, match)
  local wd = s.digests.workload
  if type(wd) ~= 'string' then wd = '?' end
  local label, provider = result.label_of(b, s)
  local as = type(match) == 'table' and match[provider] or provider
  if as ~= provider then provider = as .. ' (' .. provider .. ')' end
  return wd .. '|' .. (s.mode or '?') .. '|' .. as .. (s.metric == 'memory' and '|memory' or ''), label, provider
end

--- The matching key ("workloadDigest|mode|provider", and "|memory" for a memory run:
-- kernelindex's workload holds no mode, the timed pass is the protocol's) and a label for people.
-- match: a table of provider renames ({liger = "fused"}: that provider is matched as this one).
-- Points of one key are then paired by device (compare.compare).
--
-- @signature compare.key_of(bundle [, match]) -> key, label, provider
-- @example
--   local x = kb.randn({4096}, "f32", 1)
--   local r = kb.do_bench.do_bench_protocol{rep_ms = 5}:run(function() x:add_(1) end)
--   local bundle = record.from_result{kernel = "add", mode = "forward", provider = "add_", dtype = "f32", result = r}
--   local key, label = compare.key_of(bundle)
function M.key_of(b, match)
  args.check('compare.key_of', 1, b, 'table', 'bundle')
  args.check('compare.key_of', 2, match, 'table|nil', 'provider renames')
  return key_of_session(b, result.session(b), match)
end

---------------------------------------------------------------------------
-- Statistics of one point
---------------------------------------------------------------------------

--- The verdict of an interval of new / base.
--
-- @signature compare.verdict(lo, hi [, noise]) -> "SAME" | "FASTER" | "SLOWER" | "UNSURE"
-- @example
--   print(compare.verdict(1.10, 1.20)) --> SLOWER
function M.verdict(lo, hi, noise)
  args.check('compare.verdict', 1, lo, 'number', 'lower bound')
  args.check('compare.verdict', 2, hi, 'number', 'upper bound')
  args.check('compare.verdict', 3, noise, 'number|nil', 'noise band')
  noise = noise or M.DEFAULTS.noise
  if lo >= 1 - noise and hi <= 1 + noise then return 'SAME' end
  -- a change is called only when the whole interval lies beyond the noise
  -- band: an interval that starts inside it cannot tell a change of a few
  -- tenths of a percent (run-to-run drift) from none
  if lo > 1 + noise then return 'SLOWER' end
  if hi < 1 - noise then return 'FASTER' end
  return 'UNSURE'
end

local function total(sessions)
  local n = 0
  for _, s in ipairs(sessions) do n = n + #s end
  return n
end

local function pooled(sessions)
  local out = {}
  for _, s in ipairs(sessions) do table.move(s, 1, #s, #out + 1, out) end
  return out
end

-- The between-session figure at a point of ms: opts.between is a number (the
-- user's, exact), a function(ms) -> sd, source, df, scope, or nil: the
-- conservative default of a device of unknown kind (record/noise.lua's
-- UNKNOWN: compare_sessions is not told the device; compare.compare is, and
-- passes the figure of the records' device and backend).
local function between_at(between, ms)
  if type(between) == 'number' then return between, '--between', nil, 'between' end
  if type(between) == 'function' then return between(ms) end
  return (ceilings.noise_at(noise.UNKNOWN, ms)), noise.UNKNOWN.source, nil, 'default'
end

--- The smallest change an interval [lo, hi] around ratio could have called: the change whose
-- interval of the same relative width would lie wholly outside the noise band (+-noise), as a
-- fraction (0.074 = 7.4 %), the larger of the upward and the downward one.
--
-- @signature compare.detectable(ratio, lo, hi [, noise]) -> fraction
-- @example
--   print(string.format("%.3f", compare.detectable(1.0, 0.97, 1.03))) --> 0.041
function M.detectable(ratio, lo, hi, noise)
  args.check('compare.detectable', 1, ratio, 'number', 'ratio')
  args.check('compare.detectable', 2, lo, 'number', 'interval low end')
  args.check('compare.detectable', 3, hi, 'number', 'interval high end')
  args.check('compare.detectable', 4, noise, 'number|nil', 'noise band')
  noise = noise or M.DEFAULTS.noise
  return math.max((1 + noise) * ratio / lo - 1, 1 - (1 - noise) * ratio / hi)
end

--- Compares the sessions of one point: hierarchical bootstrap; the sessions' own spread decides when
-- both sides have compare.OWN_SESSIONS (3) or more, else a between-session figure widens the sides
-- that have fewer.
--
-- Fewer than compare.MIN_SAMPLES (5) samples on a side give UNSURE with `why` set. With at least 3
-- sessions a side the spread of the sessions (pooled over both sides) is the between-session noise,
-- with Student's t for its few degrees of freedom, and no stored figure enters. Otherwise each side
-- with fewer sessions gets the variance its sessions could not show, max(figure, the sessions'
-- pooled spread)^2 minus its own spread^2, over its session count; the figure is opts.between (a
-- number: exact; a function(ms) -> sd, source, df, scope) or, without one, record/noise.lua's
-- conservative default for a device of unknown kind (noise.UNKNOWN). opts: as compare.compare, and
-- points (how many points the comparison holds, for the family-wise confidence), base_median and
-- new_median (ms: each side's estimate where the caller has it, as compare.compare passes
-- result.points' median_ns, the mean of the recorded session medians; the ratio is theirs and the
-- bootstrap interval is moved to it, its width kept). Returns {ratio, lo, hi, detectable (the
-- smallest change the interval could call, compare.detectable), p, verdict, regression,
-- base_median, new_median, base_n, new_n, base_sessions, new_sessions, between, between_source,
-- between_df, between_scope, t_df, point_confidence, why, ...}.
--
-- @signature compare.compare_sessions(base_sessions, new_sessions [, opts]) -> table
-- @example
--   local c = compare.compare_sessions({{1, 1.1, 0.9, 1, 1.05}, {1, 1, 1.1, 0.95, 1}}, {{1.5, 1.6, 1.4, 1.55, 1.5}, {1.5, 1.5, 1.6, 1.45, 1.5}})
--   print(c.verdict)
function M.compare_sessions(base, new, opts)
  args.check('compare.compare_sessions', 1, base, 'table', 'list of sessions')
  args.check('compare.compare_sessions', 2, new, 'table', 'list of sessions')
  args.check('compare.compare_sessions', 3, opts, 'table|nil', 'table of options')
  opts = opts or {}
  args.check('compare.compare_sessions', 3, opts.base_median, 'number|nil', 'opts.base_median')
  args.check('compare.compare_sessions', 3, opts.new_median, 'number|nil', 'opts.new_median')
  local given = finite(opts.base_median) and finite(opts.new_median) and opts.base_median > 0
    and opts.new_median > 0
  local d = M.DEFAULTS
  local conf = opts.confidence or d.confidence
  local band = opts.noise or d.noise
  local nb, nn = total(base), total(new)
  local r = { base_n = nb, new_n = nn, base_sessions = #base, new_sessions = #new, confidence = conf }
  if nb < M.MIN_SAMPLES or nn < M.MIN_SAMPLES then
    local sb, sn = pooled(base), pooled(new)
    if given then
      r.base_median, r.new_median = opts.base_median, opts.new_median
      r.ratio = r.new_median / r.base_median
    elseif nb > 0 and nn > 0 then
      r.base_median, r.new_median = stats.median(sb), stats.median(sn)
      r.ratio = r.new_median / r.base_median
    end
    r.verdict, r.regression = 'UNSURE', false
    r.why = string.format('too few samples (n = %d / %d; a verdict needs at least %d a side)', nb, nn,
      M.MIN_SAMPLES)
    return r
  end
  local h = inference.hierarchical_ratio(base, new, { resamples = opts.resamples or d.resamples,
    confidence = conf, seed = opts.seed or d.seed })
  if given then
    -- the estimates the caller has (the recorded session medians, within a ns of the samples'):
    -- the interval is moved with the ratio, its relative width kept
    local f = (opts.new_median / opts.base_median) / h.ratio
    if finite(f) and f > 0 then
      h.ratio, h.lo, h.hi = opts.new_median / opts.base_median, h.lo * f, h.hi * f
      h.base_median, h.new_median = opts.base_median, opts.new_median
    end
  end
  for k, v in pairs(h) do r[k] = v end
  -- family-wise: with m points compared, each interval is at confidence
  -- 1 - (1 - conf) / m (Bonferroni), so that an A/A comparison of a whole
  -- sweep reads as a change no more often than 1 - conf. The bootstrap's
  -- percentile interval at conf has its log half-widths stretched by
  -- z(point) / z(conf) rather than taking percentiles far in the tails.
  local m = opts.points or 1
  local pconf = 1 - (1 - conf) / m
  r.point_confidence = pconf
  local stretch = stats.normal_quantile(0.5 + pconf / 2) / stats.normal_quantile(0.5 + conf / 2)
  h.lo = h.ratio * (h.lo / h.ratio) ^ stretch
  h.hi = h.ratio * (h.hi / h.ratio) ^ stretch
  local mw = inference.mann_whitney(pooled(new), pooled(base))
  r.p, r.p_superiority = mw.p, mw.p_superiority
  -- the spread the sessions themselves show, pooled over both sides (a side
  -- that happened to land close together is not taken to be quieter than the
  -- other)
  local sides = { { h.base_sessions, h.base_between }, { h.new_sessions, h.new_between } }
  local ss, df = 0, 0
  for _, side in ipairs(sides) do
    if side[2] then ss, df = ss + side[2] ^ 2 * (side[1] - 1), df + side[1] - 1 end
  end
  local observed = df > 0 and math.sqrt(ss / df) or nil
  local extra = 0
  if h.base_sessions >= M.OWN_SESSIONS and h.new_sessions >= M.OWN_SESSIONS then
    -- the sessions decide: their spread is in the bootstrap; estimated from
    -- a few values, so the interval's log half-widths are stretched by
    -- Student's t with their degrees of freedom over the normal quantile
    local k = stats.t_quantile(0.5 + pconf / 2, df) / stats.normal_quantile(0.5 + pconf / 2)
    h.lo, h.hi = h.ratio * (h.lo / h.ratio) ^ k, h.ratio * (h.hi / h.ratio) ^ k
    r.t_df = df
    r.between, r.between_source, r.between_scope = observed, 'the spread of the sessions', 'sessions'
  else
    -- a side of one or two sessions cannot show its own run-to-run shift:
    -- the figure (or the sessions' pooled spread, if larger) widens it by
    -- what its own sessions do not show; a side of three or more keeps its own
    local sd, source, fdf, scope = between_at(opts.between, h.base_median)
    local used = math.max(sd or 0, observed or 0)
    for _, side in ipairs(sides) do
      if side[1] < M.OWN_SESSIONS then extra = extra + math.max(0, used ^ 2 - (side[2] or 0) ^ 2) / side[1] end
    end
    if observed and observed > (sd or 0) then
      r.between, r.between_source, r.between_scope = observed, 'the spread of the sessions', 'sessions'
    else
      r.between, r.between_source, r.between_df, r.between_scope = sd, source, fdf, scope
    end
  end
  r.lo, r.hi = inference.widen(h.ratio, h.lo, h.hi, math.sqrt(extra), pconf)
  r.verdict = M.verdict(r.lo, r.hi, band)
  if not (finite(r.ratio) and finite(r.lo) and finite(r.hi)) then
    -- samples so far apart (or so far out) that floating point has no ratio for them
    r.verdict, r.regression, r.lo, r.hi = 'UNSURE', false, nil, nil
    if not finite(r.ratio) then r.ratio = nil end
    r.why = string.format('no interval: the medians (%.3g ms and %.3g ms) are out of the range a ratio can be '
      .. 'computed in', r.base_median or 0 / 0, r.new_median or 0 / 0)
    return r
  end
  r.detectable = M.detectable(r.ratio, r.lo, r.hi, band)
  r.regression = r.verdict == 'SLOWER' and r.ratio > 1 + (opts.threshold or d.threshold)
  return r
end

--- Compares two lists of samples (ms), one session each: compare.compare_sessions({base}, {new},
-- opts).
--
-- @signature compare.compare_samples(base, new [, opts]) -> table
-- @example
--   local c = compare.compare_samples({1, 1.1, 0.9, 1, 1.05}, {1.5, 1.6, 1.4, 1.55, 1.5}, {between = 0.01})
--   print(c.verdict, c.ratio)
function M.compare_samples(base, new, opts)
  args.check('compare.compare_samples', 1, base, 'table', 'list of samples')
  args.check('compare.compare_samples', 2, new, 'table', 'list of samples')
  args.check('compare.compare_samples', 3, opts, 'table|nil', 'table of options')
  return M.compare_sessions({ base }, { new }, opts)
end

--- A ratio as a change in percent: 1.042 -> "+4.2%"; e-notation from a change of 10^6 % ("+1.00e+302%"),
-- "+inf%" beyond what a number holds, "" for what is not a number (NaN): never 300 digits or "nan".
--
-- @signature compare.percent(ratio) -> text
-- @example
--   print(compare.percent(1.042), compare.percent(1e300), compare.percent(0 / 0))
function M.percent(r)
  if type(r) ~= 'number' or r ~= r then return '' end
  local x = (r - 1) * 100
  if x == math.huge then return '+inf%' end
  if math.abs(x) >= 1e6 then return string.format('%+.2e%%', x) end
  return string.format('%+.1f%%', x)
end

-- One line on why a point is UNSURE (or what to mind about it); base and new: the sessions of each
-- side (result.session).
local function hint(p, base, new, band)
  local parts = {}
  local function execution(s)
    local e = s.evidence.execution
    return type(e) == 'table' and e or {}
  end
  local function clocks_note(sessions, side)
    for _, s in ipairs(sessions) do
      local c = execution(s).clocks
      if type(c) == 'table' and c.stable == false then
        local sm = type(c.smMhz) == 'table' and c.smMhz or {}
        parts[#parts + 1] = string.format('clocks unstable in %s (SM %s-%s MHz)', side,
          tostring(sm.min or '?'), tostring(sm.max or '?'))
        return
      end
    end
  end
  local function converge_note(sessions, side)
    for _, s in ipairs(sessions) do
      local st = execution(s).stop
      if type(st) == 'table' and st.converged == false and st.rule == 'rse_median' then
        parts[#parts + 1] = side .. ' did not converge'
        return
      end
    end
  end
  if p.why then
    parts[#parts + 1] = p.why
  elseif p.verdict == 'UNSURE' then
    parts[#parts + 1] = string.format('no evidence either way (could detect >= %.1f %%): the interval %s..%s '
      .. 'reaches past the +-%g%% noise band; more sessions narrow it (n = %d / %d, sessions %d / %d)',
      (p.detectable or 0) * 100, M.percent(p.lo), M.percent(p.hi), band * 100, p.base_n, p.new_n,
      p.base_sessions, p.new_sessions)
  end
  clocks_note(base, 'BASE')
  clocks_note(new, 'NEW')
  if p.verdict == 'UNSURE' then
    converge_note(base, 'BASE')
    converge_note(new, 'NEW')
  end
  local pd = base[1] and base[1].digests.protocol
  if pd and new[1] and pd ~= new[1].digests.protocol then parts[#parts + 1] = 'protocols differ' end
  return #parts > 0 and table.concat(parts, '; ') or nil
end

---------------------------------------------------------------------------
-- Two sets of bundles
---------------------------------------------------------------------------

-- The bundles of a list by point (compare.key_of) and, within a point, by device: {key -> {key,
-- label, provider, devices = {device -> list of bundles}, device_order}}, and the keys in order.
local function group(bundles, match)
  local by, order = {}, {}
  for _, b in ipairs(bundles) do
    local s = result.session(b)
    local key, label, provider = key_of_session(b, s, match)
    local g = by[key]
    if not g then
      g = { key = key, label = label, provider = provider, devices = {}, device_order = {} }
      by[key], order[#order + 1] = g, key
    end
    local dev = s.device or '?'
    if not g.devices[dev] then
      g.devices[dev] = {}
      g.device_order[#g.device_order + 1] = dev
    end
    local list = g.devices[dev]
    list[#list + 1] = b
  end
  return by, order
end

---------------------------------------------------------------------------
-- The sessions of one side of a point: each run once, passed runs only,
-- session fields that agree
---------------------------------------------------------------------------

-- The names a run goes by: two bundles that share one are the same run.
local function run_ids(s)
  local ids = {}
  local function add(kind, v) if type(v) == 'string' and v ~= '' then ids[#ids + 1] = kind .. ' ' .. v end end
  add('run', s.name)
  add('externalId', s.external_id)
  add('evidence', s.evidence_digest)
  return ids
end

-- What a run says it measured, canonical: its session without where its evidence lies (a copy of
-- the file elsewhere names the same entry by another uri; the entry's digest stands for it) and
-- without its metadata (name and labels).
local function fingerprint(s)
  local copy = {}
  for k, v in pairs(s) do
    if k ~= 'evidence' and k ~= 'samples_ms' and k ~= 'labels' and k ~= 'name' then copy[k] = v end
  end
  copy.samples = #(s.samples_ms or {})
  local enc_ok, text = pcall(core.jcs.encode, copy)
  if not enc_ok then text = json.encode_line(copy) or '' end
  return text
end

-- A session's {index, count} as the run's measurements and its evidence entry give them (either
-- may be absent), and what is wrong with them, or nil.
local function session_problem(p)
  local s, e = p.session, p.evidence.session
  local i, n = s.index, s.count
  if math.type(i) ~= 'integer' or math.type(n) ~= 'integer' or i < 1 or n < 1 then
    return string.format('session %s of %s is not a session (whole numbers from 1 expected)', tostring(i), tostring(n))
  end
  if i > n then return string.format('session %d of %d: the index is past the count', i, n) end
  if type(e) == 'table' and (e.index ~= nil or e.count ~= nil) and (e.index ~= i or e.count ~= n) then
    return string.format('the run says session %d of %d, its evidence session %s of %s', i, n, tostring(e.index),
      tostring(e.count))
  end
  return nil
end

-- Whether the median a run records is that of its raw samples (within the 1 ns the writer's
-- rounding allows, as verify checks it): compare takes the recorded medians as the sides'
-- estimates (result.points) and the samples for their interval, so a run whose two disagree
-- contradicts itself. nil, or what is wrong.
local function median_problem(s)
  if s.metric == 'memory' or not s.samples_ms or not finite(s.median_ns) then return nil end
  local computed = record.round(stats.quantiles(s.samples_ms, { 0.5 })[1] * 1e6)
  if math.abs(computed - s.median_ns) > 1 + 1e-9 * math.abs(computed) then
    return string.format('%s records a median of %.17g ns, its raw samples give %.17g ns (kluabench verify says more)',
      run_ids(s)[1] or 'a run', s.median_ns, computed)
  end
  return nil
end

local function status_of(s)
  return type(s.status) == 'string' and s.status or 'no status'
end

-- The first reason a failed run's evidence gives, shortened, or nil.
local function reason_of(s)
  local r = s.evidence.reasons
  if type(r) == 'table' and type(r[1]) == 'string' then
    local text = r[1]:gsub('%s+', ' ')
    return #text > 120 and (text:sub(1, 117) .. '...') or text
  end
  return nil
end

--- Sorts the bundles of one side of a point into what can be compared as sessions: each run once
-- (bundles of the same run, by run name, externalId or evidence digest, with the same data are
-- duplicates: counted once), runs whose status is passed (a failed run is never a time), and what
-- contradicts itself (the same run with different data; a session index past its count; a run
-- and its evidence naming different sessions; a recorded median that is not that of the run's
-- raw samples). Each bundle is read through result.session.
--
-- Different runs that share a session index, or count their sessions differently, are sessions of
-- different sweeps in one file (results appended to one --out, files concatenated): each is a
-- session of its own, and a note says so, unless opts.across_sweeps says the side is meant to
-- hold several sweeps (a history database holds every batch of a commit; run_noise --from pools
-- files).
--
-- Returns {bundles = the passed runs, each once, duplicates = n dropped, failed = {{status,
-- reason}}, problems = {text}, notes = {text}, clashes = n (runs found twice with different
-- data)}; problems not empty means the side cannot be compared.
--
-- @signature compare.sessions_of_side(bundles [, opts]) -> {bundles, duplicates, failed, problems}
-- @example
--   local b = {run = {metadata = {name = "r1"}, spec = {status = "passed"}}}
--   local s = compare.sessions_of_side({b, b})
--   print(#s.bundles, s.duplicates) --> 1  1
function M.sessions_of_side(bundles, opts)
  args.check('compare.sessions_of_side', 1, bundles, 'table', 'list of bundles')
  args.check('compare.sessions_of_side', 2, opts, 'table|nil', 'table of options')
  local across = type(opts) == 'table' and opts.across_sweeps
  local out = { bundles = {}, duplicates = 0, failed = {}, problems = {}, notes = {}, clashes = 0 }
  local seen = {}
  local kept = {}
  for _, b in ipairs(bundles) do
    local s = result.session(b)
    local ids, fp = run_ids(s), fingerprint(s)
    local dup, clash = false, nil
    for _, id in ipairs(ids) do
      local prev = seen[id]
      if prev then
        if prev == fp then dup = true else clash = clash or id end
      end
    end
    if clash then
      out.clashes = out.clashes + 1
      out.problems[#out.problems + 1] = string.format('%s appears twice with different data', clash)
    elseif dup then
      out.duplicates = out.duplicates + 1
    else
      for _, id in ipairs(ids) do seen[id] = fp end
      kept[#kept + 1] = { b, s }
    end
  end
  local counts, by_index = {}, {}
  for _, k in ipairs(kept) do
    local b, s = k[1], k[2]
    local why = session_problem(s)
    if why then
      out.problems[#out.problems + 1] = why
    else
      counts[s.session.count] = (counts[s.session.count] or 0) + 1
      by_index[s.session.index] = (by_index[s.session.index] or 0) + 1
      if by_index[s.session.index] == 2 and not across then
        out.notes[#out.notes + 1] = string.format('session %d of %d appears in several runs (several sweeps in '
          .. 'one file): each run is counted as a session of its own', s.session.index, s.session.count)
      end
    end
    if status_of(s) == 'passed' then
      local bad = median_problem(s)
      if bad then out.problems[#out.problems + 1] = bad end
      out.bundles[#out.bundles + 1] = b
    else
      out.failed[#out.failed + 1] = { status = status_of(s), reason = reason_of(s) }
    end
  end
  local list = {}
  for n in pairs(counts) do list[#list + 1] = n end
  if #list > 1 and not across then
    table.sort(list)
    out.notes[#out.notes + 1] = 'its runs count their sessions differently (of ' .. table.concat(list, ', of ')
      .. '): sweeps of different --runs, each run counted as a session'
  end
  return out
end

-- One phrase for a side's failed runs: "2 runs runtime_error (boom), 1 timeout".
local function failed_text(failed)
  local by, order = {}, {}
  for _, f in ipairs(failed) do
    if not by[f.status] then by[f.status] = { n = 0, reason = f.reason }; order[#order + 1] = f.status end
    by[f.status].n = by[f.status].n + 1
  end
  local parts = {}
  for _, st in ipairs(order) do
    parts[#parts + 1] = string.format('%d run%s %s%s', by[st].n, by[st].n == 1 and '' or 's', st,
      by[st].reason and (' (' .. by[st].reason .. ')') or '')
  end
  return table.concat(parts, ', ')
end

-- The sample lists of a point's passed sessions, or nil, why.
local function samples_lists(sessions)
  local out = {}
  for i, s in ipairs(sessions) do
    if not s.samples_ms then return nil, s.samples_why or 'no raw samples in the record' end
    out[i] = s.samples_ms
  end
  return out
end

-- The point (result.points) of a side's passed runs, or nil, why: one side of a point is one
-- point of the result model, measured one way on one device.
local function point_of_side(bundles)
  local points = result.points(bundles)
  if #points > 1 then
    local ways = {}
    for i, p in ipairs(points) do ways[i] = tostring(p.protocol) .. ' on ' .. tostring(p.device) end
    return nil, string.format('its runs are %d points measured in different ways (%s): a point\'s sessions are '
      .. 'measured one way', #points, table.concat(ways, ', '))
  end
  local p = points[1]
  if p.metric ~= 'memory' and #p.failed > 0 then
    return nil, string.format('%d passed run%s no positive median', #p.failed,
      #p.failed == 1 and ' records' or 's record')
  end
  return p
end

-- Fills point with the comparison of two sides of memory runs (Liger's memory rows, --metric
-- memory): base_mb, new_mb (each side's mean peak over its runs, result.points), ratio and a
-- verdict SAME (within the noise band), LARGER or SMALLER. A peak of allocated bytes is counted, not
-- sampled: there is no interval, and it is never a regression of time.
local function memory_point(point, pb, pn, band)
  point.metric, point.regression = 'memory', false
  local mb = #pb.failed == 0 and pb.memory_median or nil
  local mn = #pn.failed == 0 and pn.memory_median or nil
  point.base_mb, point.new_mb = mb, mn
  if not (mb and mn) or mb <= 0 then
    point.verdict, point.hint = 'UNSURE', (mb and mn) and 'BASE has no memory to compare with'
      or ((mb and 'NEW' or 'BASE') .. ': a memory run without its median')
    return
  end
  if pb.memory_unit and pn.memory_unit and pb.memory_unit ~= pn.memory_unit then
    point.verdict, point.hint = 'UNSURE', string.format('units differ (%s and %s)', pb.memory_unit, pn.memory_unit)
    return
  end
  point.ratio = mn / mb
  point.verdict = math.abs(point.ratio - 1) <= band and 'SAME' or (point.ratio > 1 and 'LARGER' or 'SMALLER')
end

-- The figure of a pair of points for compare_sessions: function(ms) -> sd, source, df, scope, the
-- larger of what the resolver gives for each side's kernel, device and backend.
local function figure_of(resolve, pb, pn)
  return function(ms)
    local sd, source, df, scope = resolve(ms, pb.kernel, pb.device, pb.backend)
    if pn.device ~= pb.device or pn.kernel ~= pb.kernel or pn.backend ~= pb.backend then
      local sd2, source2, df2, scope2 = resolve(ms, pn.kernel, pn.device, pn.backend)
      if sd2 > sd then sd, source, df, scope = sd2, source2, df2, scope2 end
    end
    return sd, source, df, scope
  end
end

-- A device as a note names it: "NVIDIA H200 (cuda)".
local function device_text(device, backend)
  return tostring(device) .. (backend and (' (' .. backend .. ')') or '')
end

-- The pairs of one point's devices: {base device, new device, across = true where they differ},
-- and the devices of each side that no pair holds. The same device pairs with itself; the
-- devices left on both sides pair with each other (compare refuses such a pair unless told).
local function device_pairs(b, n)
  local out, bfree, nfree = {}, {}, {}
  for _, d in ipairs(b.device_order) do
    if n.devices[d] then out[#out + 1] = { d, d } else bfree[#bfree + 1] = d end
  end
  for _, d in ipairs(n.device_order) do
    if not b.devices[d] then nfree[#nfree + 1] = d end
  end
  if #bfree > 0 and #nfree > 0 then
    for _, bd in ipairs(bfree) do
      for _, nd in ipairs(nfree) do out[#out + 1] = { bd, nd, across = true } end
    end
    return out, {}, {}
  end
  return out, bfree, nfree
end

-- The comparison of one pair of sides (their bundles), as a row of compare's result.
local function compare_pair(g, bundles_b, bundles_n, pair, o, opts, figure, points)
  local sideb = M.sessions_of_side(bundles_b, { across_sweeps = opts.across_sweeps })
  local siden = M.sessions_of_side(bundles_n, { across_sweeps = opts.across_sweeps })
  local point = { label = g.label, provider = g.provider, base_runs = #sideb.bundles,
    new_runs = #siden.bundles, base_duplicates = sideb.duplicates, new_duplicates = siden.duplicates,
    base_failed = #sideb.failed, new_failed = #siden.failed, base_device = pair[1], new_device = pair[2],
    across_devices = pair.across or nil }
  -- what the reader must know whatever the verdict: runs counted once, runs left out
  local notes = {}
  for _, side in ipairs { { 'BASE', sideb }, { 'NEW', siden } } do
    if side[2].duplicates > 0 then
      notes[#notes + 1] = string.format('%s: %d duplicate bundle%s of the same run counted once', side[1],
        side[2].duplicates, side[2].duplicates == 1 and '' or 's')
    end
    if #side[2].failed > 0 then
      notes[#notes + 1] = string.format('%s: %s left out (a failed run is never compared as a time)', side[1],
        failed_text(side[2].failed))
    end
    for _, note in ipairs(side[2].notes) do notes[#notes + 1] = side[1] .. ': ' .. note end
  end
  local refused, pts = {}, {}
  for _, side in ipairs { { 'BASE', sideb }, { 'NEW', siden } } do
    for _, why in ipairs(side[2].problems) do refused[#refused + 1] = side[1] .. ': ' .. why end
    if #side[2].problems == 0 and #side[2].bundles == 0 then
      refused[#refused + 1] = side[1] .. ': no passed run'
    elseif #side[2].problems == 0 then
      local p, why = point_of_side(side[2].bundles)
      if p then pts[side[1]] = p else refused[#refused + 1] = side[1] .. ': ' .. why end
    end
  end
  local pb, pn = pts.BASE, pts.NEW
  local backend_b = pb and pb.backend
  local backend_n = pn and pn.backend
  if pair.across then
    local text = string.format('BASE on %s, NEW on %s', device_text(pair[1], backend_b),
      device_text(pair[2], backend_n))
    if opts.across_devices then
      table.insert(notes, 1, 'across devices: ' .. text)
    else
      point.device_refused = true
      table.insert(refused, 1, 'measured on different devices (' .. text .. '); --across-devices compares them')
    end
  end
  if #refused > 0 then
    -- a side that contradicts itself, or has no time, gives no verdict; nor does a pair of devices
    point.verdict, point.regression, point.refused = 'UNSURE', false, true
    table.insert(notes, 1, 'not compared: ' .. table.concat(refused, '; '))
  elseif g.key:match('|memory$') then
    memory_point(point, pb, pn, o.noise)
  else
    point.base_sessions, point.new_sessions = #pb.passed, #pn.passed
    local sb, why_b = samples_lists(pb.passed)
    local sn, why_n = samples_lists(pn.passed)
    if sb and sn then
      local po = {}
      for k, v in pairs(o) do po[k] = v end
      po.points = o.familywise == false and 1 or points
      po.between = figure_of(figure, pb, pn)
      po.base_median, po.new_median = pb.median_ns / 1e6, pn.median_ns / 1e6
      local ok, c = pcall(M.compare_sessions, sb, sn, po)
      if not ok and interrupted() then error(c, 0) end -- Ctrl-C stops the command, not one point
      if ok then
        for k, v in pairs(c) do point[k] = v end
        point.hint = hint(point, pb.passed, pn.passed, o.noise)
      else
        point.verdict, point.regression = 'UNSURE', false
        point.hint = 'cannot compare: ' .. tostring(c):gsub('^.-: ', '')
      end
    else
      point.verdict, point.regression = 'UNSURE', false
      point.base_median, point.new_median = pb.median_ns / 1e6, pn.median_ns / 1e6
      point.ratio = point.new_median / point.base_median
      point.hint = (sb and 'NEW: ' .. why_n or 'BASE: ' .. why_b)
        .. ' (re-run with raw samples kept to get a verdict)'
    end
  end
  if #notes > 0 then
    notes[#notes + 1] = point.hint
    point.hint = table.concat(notes, '; ')
  end
  return point
end

--- Compares two lists of bundles point by point: verdict, ratio, interval, p-value, hint.
--
-- Points are matched by compare.key_of and paired by device (the environment's, result.session):
-- the runs of a device in BASE with the runs of the same device in NEW. A point whose runs are on
-- one device in BASE and another in NEW is not compared (UNSURE, refused, device_refused, and a
-- note naming both) unless opts.across_devices; then it is, and every such row's note names the
-- pairing ("across devices: BASE on ..., NEW on ..."). Each side of a pair is one point of the
-- result model (result.points): its estimate is the point's median_ns, the mean of its sessions'
-- medians, and its sessions are the point's passed ones; a side whose runs make several points
-- (measured by different protocols) is not compared.
--
-- opts: threshold (0.05: a SLOWER point beyond it is a regression), noise (0.01), confidence,
-- resamples, seed, familywise (true: each interval at 1 - (1 - confidence) / m for m points)
-- (compare.DEFAULTS), between (the between-session sd of log median that widens sides of fewer than
-- 3 sessions: a number, taken as exact, or a function(ms, kernel, device, backend) -> sd, source,
-- df, scope; default record/noise.lua's resolver: the cache's figure for the records' device, per
-- kernel where measured, else the conservative default of the records' device and backend; the
-- figure a record was made under is never read back), cache (the cache file to look figures up in),
-- across_sweeps (a side's bundles may come from several sweeps: see compare.sessions_of_side),
-- across_devices (compare a point measured on different devices in BASE and NEW).
--
-- Each side of a point is first sorted by compare.sessions_of_side: a run found twice with the
-- same data counts once (a file concatenated with itself changes nothing), a run whose status is
-- not passed is left out and said so, and a side that contradicts itself (the same run with
-- different data, a session index past its count or repeated, counts that differ, a recorded median
-- that is not that of its samples) or has no passed run gives UNSURE with `refused` set and no
-- interval.
--
-- base and new: lists of bundles, or results files (read by compare.read; an error if one cannot be).
--
-- Returns {points = {{label, provider, verdict, ratio, lo, hi, p, base_median, new_median, base_n,
-- new_n, base_sessions, new_sessions, between, regression, hint, base_runs, new_runs,
-- base_duplicates, new_duplicates, base_failed, new_failed, base_device, new_device,
-- across_devices, refused, device_refused}}, only_base = {labels}, only_new = {labels}, regressions
-- = n, counts = {VERDICT = n}, duplicates = n (bundles counted once), with_failed = n (points with a
-- failed run), refused = n (points not compared), device_refused = n (of them, for their devices),
-- across_devices = n (points compared across devices), opts}.
--
-- @signature compare.compare(base, new [, opts]) -> result
-- @example
--   local x = kb.randn({4096}, "f32", 1)
--   local function measured() -- a result set (compare.read reads one from a file) of one bundle
--     local r = kb.do_bench.do_bench_protocol{rep_ms = 5}:run(function() x:add_(1) end)
--     return {record.from_result{kernel = "add", mode = "forward", provider = "add_", dtype = "f32", result = r}}
--   end
--   local r = compare.compare(measured(), measured())
--   io.write(compare.format(r, "markdown"))
function M.compare(base, new, opts)
  args.check('compare.compare', 1, base, 'table|string', 'list of bundles or results file')
  args.check('compare.compare', 2, new, 'table|string', 'list of bundles or results file')
  args.check('compare.compare', 3, opts, 'table|nil', 'table of options')
  opts = opts or {}
  if type(base) == 'string' then base = assert(M.read(base)) end
  if type(new) == 'string' then new = assert(M.read(new)) end
  local o = {}
  for k, v in pairs(M.DEFAULTS) do o[k] = opts[k] == nil and v or opts[k] end
  local figure = type(opts.between) == 'function' and opts.between
    or noise.resolver { between = opts.between, path = opts.cache }
  local bb, border = group(base, opts.match)
  local nb, norder = group(new)
  local out = { points = {}, memory = {}, memory_counts = {}, only_base = {}, only_new = {}, regressions = 0,
    counts = {}, duplicates = 0, with_failed = 0, refused = 0, device_refused = 0, across_devices = 0 }
  -- every pair first: the family-wise confidence counts the points compared
  local work, common = {}, 0
  local function on(g, dev, several) return g.label .. ' (' .. g.provider .. ')' .. (several and (' on ' .. dev) or '') end
  for _, key in ipairs(border) do
    local b, n = bb[key], nb[key]
    if not n then
      out.only_base[#out.only_base + 1] = on(b)
    else
      local pairs_, bfree, nfree = device_pairs(b, n)
      for _, pair in ipairs(pairs_) do
        work[#work + 1] = { b, n, pair }
        if not pair.across or opts.across_devices then common = common + 1 end
      end
      for _, d in ipairs(bfree) do out.only_base[#out.only_base + 1] = on(b, d, true) end
      for _, d in ipairs(nfree) do out.only_new[#out.only_new + 1] = on(n, d, true) end
    end
  end
  for _, key in ipairs(norder) do
    if not bb[key] then out.only_new[#out.only_new + 1] = on(nb[key]) end
  end
  table.sort(out.only_new)
  out.opts = { threshold = o.threshold, noise = o.noise, confidence = o.confidence,
    resamples = o.resamples, seed = o.seed, familywise = o.familywise, points_compared = common,
    between = type(opts.between) == 'number' and opts.between or nil, across_devices = opts.across_devices or nil }
  for _, w in ipairs(work) do
    if interrupted() then error('interrupted!', 0) end -- caught on the way (reading): stop here
    local b, n, pair = w[1], w[2], w[3]
    local point = compare_pair(b, b.devices[pair[1]], n.devices[pair[2]], pair, o, opts, figure, common)
    out.duplicates = out.duplicates + point.base_duplicates + point.new_duplicates
    if point.base_failed > 0 or point.new_failed > 0 then out.with_failed = out.with_failed + 1 end
    if point.refused then out.refused = out.refused + 1 end
    if point.device_refused then out.device_refused = out.device_refused + 1 end
    if point.across_devices and not point.device_refused then out.across_devices = out.across_devices + 1 end
    if point.regression then out.regressions = out.regressions + 1 end
    if point.metric == 'memory' then
      out.memory_counts[point.verdict] = (out.memory_counts[point.verdict] or 0) + 1
      out.memory[#out.memory + 1] = point
    else
      out.counts[point.verdict] = (out.counts[point.verdict] or 0) + 1
      out.points[#out.points + 1] = point
    end
  end
  return out
end

--- The run-to-run spread of each point found in several sessions: {label, provider, kernel, device,
-- ms, sd (of log session medians), df}. Each run counts once, failed runs not at all, and a point
-- where one run appears with different data is left out. The sessions are those of the point's
-- result.points (their recorded medians).
--
-- For ceilings.noise_figure; scripts/run_noise.lua --from uses it.
--
-- @signature compare.session_spread(bundles) -> list
-- @example
--   local x = kb.randn({4096}, "f32", 1)
--   local sessions = {}
--   for i = 1, 3 do -- three sessions of one point (compare.read reads them from a file)
--     local r = kb.do_bench.do_bench_protocol{rep_ms = 5}:run(function() x:add_(1) end)
--     sessions[i] = record.from_result{kernel = "add", mode = "forward", provider = "add_", dtype = "f32", result = r}
--   end
--   local sp = compare.session_spread(sessions)
function M.session_spread(bundles)
  args.check('compare.session_spread', 1, bundles, 'table', 'list of bundles')
  local by, order = group(bundles)
  local out = {}
  for _, key in ipairs(order) do
    local g = by[key]
    for _, dev in ipairs(g.device_order) do
      -- each run once and passed runs only; sessions of several sweeps (run_noise --from s1 --from
      -- s2) are what this pools, so repeated session indices are no contradiction here
      local side = M.sessions_of_side(g.devices[dev], { across_sweeps = true })
      local p = #side.problems == 0 and #side.bundles > 0 and point_of_side(side.bundles) or nil
      if p and p.metric ~= 'memory' and #p.passed >= 2 then
        local logs, sum = {}, 0
        for i, s in ipairs(p.passed) do
          logs[i] = math.log(s.median_ns / 1e6)
          sum = sum + logs[i]
        end
        local mean, ss = sum / #logs, 0
        for _, l in ipairs(logs) do ss = ss + (l - mean) ^ 2 end
        out[#out + 1] = { label = g.label, provider = g.provider, ms = math.exp(mean),
          sd = math.sqrt(ss / (#logs - 1)), df = #logs - 1, kernel = p.kernel, device = p.device }
      end
    end
  end
  return out
end

---------------------------------------------------------------------------
-- Reports
---------------------------------------------------------------------------

local function us(ms) return finite(ms) and results.cell_number(ms * 1000, 2) or '' end

local pct = M.percent

local COLUMNS = {
  { key = 'label', title = 'point' },
  { key = 'provider', title = 'provider' },
  { key = 'device', title = 'device' },
  { key = 'runs', title = 'runs', align = 'right' },
  { key = 'base_median', title = 'base us', align = 'right', format = us },
  { key = 'new_median', title = 'new us', align = 'right', format = us },
  { key = 'ratio', title = 'change', align = 'right', format = pct },
  { key = 'interval', title = 'interval', align = 'right' },
  { key = 'detectable', title = 'detects', align = 'right',
    format = function(v) return finite(v) and string.format('>=%.1f%%', v * 100) or '' end },
  { key = 'p', title = 'p (MWU)', align = 'right', format = function(v) return finite(v) and string.format('%.3g', v) or '' end },
  { key = 'verdict', title = 'verdict' },
  { key = 'note', title = 'note' },
}

local MEMORY_COLUMNS = {
  { key = 'label', title = 'point' },
  { key = 'provider', title = 'provider' },
  { key = 'device', title = 'device' },
  { key = 'runs', title = 'runs', align = 'right' },
  { key = 'base_mb', title = 'base MB', align = 'right', format = function(v) return results.cell_number(v, 1) end },
  { key = 'new_mb', title = 'new MB', align = 'right', format = function(v) return results.cell_number(v, 1) end },
  { key = 'ratio', title = 'change', align = 'right', format = pct },
  { key = 'verdict', title = 'verdict' },
  { key = 'note', title = 'note' },
}

-- A copy of v that JSON can hold: numbers that are not finite (a ratio of
-- odd recorded medians) and functions become absent.
local function json_safe(v)
  if type(v) == 'number' then return (v == v and v > -math.huge and v < math.huge) and v or nil end
  if type(v) == 'function' then return nil end
  if type(v) ~= 'table' then return v end
  local out = {}
  for k, x in pairs(v) do out[k] = json_safe(x) end
  return out
end

-- The columns to show: the device column only where the points are not all of one device pair.
local function shown(columns, points)
  local first, several = nil, false
  for _, p in ipairs(points) do
    local pair = tostring(p.base_device) .. '\0' .. tostring(p.new_device)
    first = first or pair
    if pair ~= first or p.across_devices then several = true end
  end
  if several then return columns end
  local out = {}
  for _, c in ipairs(columns) do if c.key ~= 'device' then out[#out + 1] = c end end
  return out
end

-- The device cell of a row: the device, or "BASE's -> NEW's" for a pair of two.
local function device_cell(p)
  if p.base_device == p.new_device then return p.base_device end
  return tostring(p.base_device) .. ' -> ' .. tostring(p.new_device)
end

-- A row with every text a record supplied made printable (no control sequence reaches a terminal
-- or a markdown viewer raw: args.printable, as stderr's messages are).
local function safe_row(row)
  for k, v in pairs(row) do
    if type(v) == 'string' then row[k] = printable(v) end
  end
  return row
end

--- The report as "table" (default), "markdown" or "json", ending with a summary line. Every text
-- that comes from a record (labels, providers, devices, reasons, figure sources) shows control
-- characters as \xNN in the table and markdown (JSON escapes them itself).
--
-- @signature compare.format(result [, format]) -> text
-- @example
--   local x = kb.randn({4096}, "f32", 1)
--   local r = kb.do_bench.do_bench_protocol{rep_ms = 5}:run(function() x:add_(1) end)
--   local bundle = record.from_result{kernel = "add", mode = "forward", provider = "add_", dtype = "f32", result = r}
--   local result = compare.compare({bundle}, {bundle})
--   io.write(compare.format(result, "markdown"))
function M.format(result, fmt)
  args.check('compare.format', 1, result, 'table', 'comparison result (compare.compare)')
  args.check('compare.format', 2, fmt, 'string|nil', 'format name')
  fmt = fmt or 'table'
  if fmt == 'json' then
    return json.encode_pretty(json_safe(result)) .. '\n'
  end
  local rows = {}
  for i, p in ipairs(result.points) do
    local note = p.hint
    if p.regression then
      note = string.format('REGRESSION beyond %g%%', result.opts.threshold * 100)
        .. (note and ('; ' .. note) or '')
    end
    rows[i] = safe_row {
      label = p.label, provider = p.provider, device = device_cell(p),
      runs = string.format('%d/%d', p.base_sessions or p.base_runs, p.new_sessions or p.new_runs),
      base_median = p.base_median, new_median = p.new_median,
      ratio = p.ratio, p = p.p, verdict = p.verdict, note = note, detectable = p.detectable,
      interval = (finite(p.lo) and finite(p.hi)) and string.format('%s..%s', pct(p.lo), pct(p.hi)) or '',
    }
  end
  local columns = shown(COLUMNS, result.points)
  local text = fmt == 'markdown' and results.format_markdown(columns, rows)
    or results.format_table(columns, rows)
  local parts = {}
  for _, v in ipairs { 'FASTER', 'SAME', 'SLOWER', 'UNSURE' } do
    if result.counts[v] then parts[#parts + 1] = result.counts[v] .. ' ' .. v end
  end
  local o = result.opts
  local lines = {}
  local function add(s) lines[#lines + 1] = s end
  local memory = result.memory or {}
  if #memory > 0 then
    local mrows = {}
    for i, p in ipairs(memory) do
      mrows[i] = safe_row { label = p.label, provider = p.provider, device = device_cell(p),
        runs = string.format('%d/%d', p.base_runs, p.new_runs),
        base_mb = p.base_mb, new_mb = p.new_mb, ratio = p.ratio, verdict = p.verdict, note = p.hint }
    end
    local mcolumns = shown(MEMORY_COLUMNS, memory)
    local mtext = fmt == 'markdown' and results.format_markdown(mcolumns, mrows)
      or results.format_table(mcolumns, mrows)
    local mparts = {}
    for _, v in ipairs { 'SMALLER', 'SAME', 'LARGER', 'UNSURE' } do
      if result.memory_counts[v] then mparts[#mparts + 1] = result.memory_counts[v] .. ' ' .. v end
    end
    add('peak memory (MB: 2^20 bytes, the peak allocated around one call, Liger\'s metric):')
    add((mtext:gsub('\n$', '')))
    if fmt == 'markdown' then add('') end
    add(string.format('%d memory point(s): %s. A counted peak, not sampled: SAME within the +-%g%% band, '
      .. 'else LARGER or SMALLER; never a regression of time.', #memory, table.concat(mparts, ', '), o.noise * 100))
    if #result.points == 0 then return table.concat(lines, '\n') .. '\n' end
    add('')
  end
  add((text:gsub('\n$', '')))
  if fmt == 'markdown' then add('') end
  add(string.format('%d point(s): %s. %d regression(s) beyond %g%%. Ratio new/base of the mean '
    .. 'session medians, %g%% hierarchical bootstrap interval (sessions, then samples; %d resamples, '
    .. 'seed %d); with 3 or more sessions a side their own spread decides, a side of fewer is widened by '
    .. 'the between-session noise%s; noise band +-%g%%; "detects": the smallest change the interval '
    .. 'could have called.',
    #result.points, #parts > 0 and table.concat(parts, ', ') or 'none', result.regressions,
    o.threshold * 100, o.confidence * 100, o.resamples, o.seed,
    o.between and string.format(' (--between %g%%)', o.between * 100) or '', o.noise * 100))
  local sources, order = {}, {}
  for _, p in ipairs(result.points) do
    if p.between_source then
      if not sources[p.between_source] then order[#order + 1] = p.between_source end
      sources[p.between_source] = (sources[p.between_source] or 0) + 1
    end
  end
  local kept = {}
  if (result.duplicates or 0) > 0 then
    kept[#kept + 1] = string.format('%d duplicate bundle%s (the same run again) counted once', result.duplicates,
      result.duplicates == 1 and '' or 's')
  end
  if (result.with_failed or 0) > 0 then
    kept[#kept + 1] = string.format('%d point%s with failed runs (left out, never compared as times)',
      result.with_failed, result.with_failed == 1 and '' or 's')
  end
  if (result.refused or 0) > 0 then
    kept[#kept + 1] = string.format('%d point%s not compared (see the note)', result.refused,
      result.refused == 1 and '' or 's')
  end
  if (result.device_refused or 0) > 0 then
    kept[#kept + 1] = string.format('%d of them measured on different devices (--across-devices compares them)',
      result.device_refused)
  end
  if (result.across_devices or 0) > 0 then
    kept[#kept + 1] = string.format('%d point%s compared across devices (a ratio of two devices, not a '
      .. 'change of the code)', result.across_devices, result.across_devices == 1 and '' or 's')
  end
  if #kept > 0 then add(table.concat(kept, '; ') .. '.') end
  if #order > 0 then
    local parts2 = {}
    for i, src in ipairs(order) do parts2[i] = string.format('%s (%d point(s))', printable(src), sources[src]) end
    add('between-session noise from: ' .. table.concat(parts2, ', ') .. '.')
  end
  if #result.only_base > 0 then add('only in BASE: ' .. printable(table.concat(result.only_base, ', '))) end
  if #result.only_new > 0 then add('only in NEW: ' .. printable(table.concat(result.only_new, ', '))) end
  return table.concat(lines, '\n') .. '\n'
end

return M
