-- Moved to kluabench.measure.ceilings; this name is kept for one release.
return require 'kluabench.measure.ceilings'
