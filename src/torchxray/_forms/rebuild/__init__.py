"""Building on meta and comparing with the live module, for the search (``_forms/candidates/``)
and the gate (``_forms/exact/``) alike: ``meta.py`` (a build that skips weight init and stops at
a cap, a work limit or a deadline), ``watchdog.py`` (the deadline, wherever the build is),
``warmup.py`` (torch's one-time meta warm-up, paid before a form's clock), ``parts.py`` (a module
as the parts an exact rebuild must reproduce) and ``compare.py`` (the parts that differ, a
build's score, the first difference in words)."""
