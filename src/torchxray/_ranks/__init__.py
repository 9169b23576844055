"""Private parts of `tx.ranks`: one job per file (see `torchxray.ranks`)."""
