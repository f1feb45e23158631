"""One module per kind of page; each returns the files it writes as (site path, content)."""
