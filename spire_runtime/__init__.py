"""What SPIRE needs at run time beside the method: the packaged embedding model, database
URIs, runtime defaults and what the frameworks' metadata says of a page. The adapters and
the benchmarks import it; :mod:`spire_core` never does."""
