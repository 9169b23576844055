"""Private helpers of ``attach.py`` and of ``watch(..., publish=True)``: a training job's figures
served per rank (``publish``, ``ring``, ``server``, ``store``) and read from a notebook (``client``,
``history``, ``skeleton``), in one format (``wire``)."""
