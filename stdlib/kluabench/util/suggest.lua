--- Did-you-mean: the valid word a mistyped one most likely meant, for the
-- messages of unknown options, axes, providers and modes.
local M = {}
local args = require 'kluabench.util.argcheck'

-- The optimal string alignment distance of a and b: insertions, deletions,
-- substitutions and swaps of neighbours ("--seqs" is one edit from "--seq",
-- "fsued" one from "fused").
local function distance(a, b)
  local n, m = #a, #b
  local prev2, prev, cur = {}, {}, {}
  for j = 0, m do prev[j] = j end
  for i = 1, n do
    cur = { [0] = i }
    for j = 1, m do
      local best = prev[j - 1] + (a:byte(i) == b:byte(j) and 0 or 1)
      best = math.min(best, prev[j] + 1, cur[j - 1] + 1)
      if i > 1 and j > 1 and a:byte(i) == b:byte(j - 1) and a:byte(i - 1) == b:byte(j) then
        best = math.min(best, prev2[j - 2] + 1)
      end
      cur[j] = best
    end
    prev2, prev = prev, cur
  end
  return prev[m]
end

--- The candidates word most likely meant, best first (at most 3; ties in alphabetical order):
-- those within a third of the word's length in edits (at least 1, at most 3; none for a word of
-- one or two characters), and those the word starts with or that start with it ("seq-len" ->
-- "seq"), at least 3 characters shared. Empty when none is close.
--
-- @signature suggest.closest(word, candidates) -> list
-- @example
--   print(table.concat(suggest.closest("seqs", {"seq", "hidden", "q-heads"}), ", ")) --> seq
function M.closest(word, candidates)
  if type(word) ~= 'string' then
    error("bad argument #1 to 'closest' (string expected, got " .. type(word) .. ')', 2)
  end
  if type(candidates) ~= 'table' then
    error("bad argument #2 to 'closest' (list of strings expected, got " .. type(candidates) .. ')', 2)
  end
  -- a word of one or two characters is too short to guess from
  local limit = #word <= 2 and 0 or math.max(1, math.min(3, #word // 3))
  local scored, seen = {}, {}
  for _, c in ipairs(candidates) do
    if type(c) == 'string' and c ~= word and not seen[c] and #word <= 64 then
      seen[c] = true
      local d = distance(word, c)
      local short = math.min(#c, #word)
      if d > limit and short >= 3 and (word:sub(1, #c) == c or c:sub(1, #word) == word) then d = limit end
      if d <= limit then scored[#scored + 1] = { c, d } end
    end
  end
  table.sort(scored, function(x, y) return x[2] < y[2] or (x[2] == y[2] and x[1] < y[1]) end)
  local out = {}
  for i = 1, math.min(3, #scored) do out[i] = scored[i][1] end
  return out
end

--- " (did you mean 'x'?)" / " (did you mean 'x' or 'y'?)" for a message, prefix put before each
-- candidate ("--" for options); "" when nothing is close.
--
-- @signature suggest.hint(word, candidates [, prefix]) -> text
-- @example
--   print("unrecognized option '--seqs'" .. suggest.hint("seqs", {"seq", "hidden"}, "--"))
function M.hint(word, candidates, prefix)
  args.check('hint', 1, word, 'string', 'word')
  args.check('hint', 2, candidates, 'table', 'list of strings')
  args.check('hint', 3, prefix, 'string|nil', 'prefix')
  local c = M.closest(word, candidates)
  if #c == 0 then return '' end
  prefix = prefix or ''
  for i, v in ipairs(c) do c[i] = "'" .. prefix .. v .. "'" end
  local last = table.remove(c)
  return ' (did you mean ' .. (#c > 0 and (table.concat(c, ', ') .. ' or ') or '') .. last .. '?)'
end

return M
