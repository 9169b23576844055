"""The training lens's helpers (``watch.py``): the thinned buffers, the hooks, the non-finite
tracker, the flags, the optimizer's side of an edit and the trainers' callbacks."""
