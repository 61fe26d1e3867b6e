"""What the pod channel and the trust anchor share, below every app: the exact signed bytes
(canonical JSON, ed25519 signature checks, key fingerprints: `signing.py`) and the store the raw
signed bundles are kept in (`blobstore.py`). It imports no app (docs/README.md §Layout)."""
