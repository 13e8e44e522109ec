"""core: what every stage stands on, and the rules that must hold everywhere.

Owns the errors, the package paths and the tool's cache root, the media limits and the
memory budget, secret masking, provenance (versions, fingerprints), the one boundary for
every byte written (:mod:`.outputs`), offline checks, the one JSON reader (and its
doubts: duplicate keys, unencodable text), hashing, the bounded HTTP client, and the
argument vocabulary (option fields, dataclasses as argparse options) every command uses.

May import: nothing else of the package.
"""
