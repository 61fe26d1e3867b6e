"""The embedded demo: a pod client of protocol v1 and realistic demo bundles."""
