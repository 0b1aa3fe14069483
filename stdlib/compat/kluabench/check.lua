-- Moved to kluabench.kernels.check; this name is kept for one release.
return require 'kluabench.kernels.check'
