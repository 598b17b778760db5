"""zstd decompression through the zstd command-line tool (an independent decoder; the
image's Python has no zstandard module)."""

import subprocess


def decompress(data):
    p = subprocess.run(["zstd", "-dc"], input=data, capture_output=True, timeout=60)
    if p.returncode != 0:
        raise ValueError("zstd -d failed: " + p.stderr.decode(errors="replace"))
    return p.stdout
