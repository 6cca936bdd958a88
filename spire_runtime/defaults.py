"""Runtime defaults shared by the adapters and the CLI (the method's own are :mod:`spire_core.options`)."""

#: Name of a SPIRE index in a database (Postgres: the units' and the pages' tables are named after it).
DEFAULT_INDEX_NAME = "spire"
#: Dimensions of the packaged embedding model's vectors (all-MiniLM-L6-v2).
MODEL_DIM = 384
#: Pages the adapters' bulk indexing parses, embeds and writes together (memory stays bounded).
DEFAULT_BATCH_PAGES = 16
