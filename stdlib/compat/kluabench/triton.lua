-- Moved to kluabench.kernels.triton; this name is kept for one release.
return require 'kluabench.kernels.triton'
