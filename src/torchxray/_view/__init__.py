"""The view layer: the session (controller), IR to JSON serializers, the read-only snapshot, the
built assets and syntax highlighting. Holds no torch logic of its own; `widget.py` carries its state."""
