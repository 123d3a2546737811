"""The second exercise, `kv_cache`: a key/value cache with grouped-query attention."""
