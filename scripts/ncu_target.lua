-- The program Nsight Compute profiles in the validation: RoPE calls on the inputs the cold mode times.
--
--   ncu ... kluabench scripts/ncu_target.lua --size small|medium|large --impl fused|reference [--calls N]
--
-- Same as 'kluabench scripts/validate_ncu.lua target ...' (see there).
local dir = arg[0]:match('^(.*)/[^/]*$') or '.'
arg = { [0] = dir .. '/validate_ncu.lua', 'target', table.unpack(arg) }
dofile(dir .. '/validate_ncu.lua')
