-- Moved to kluabench.io.csv; this name is kept for one release.
return require 'kluabench.io.csv'
