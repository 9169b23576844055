"""The forms' internals, behind ``forms.py``: five stages, one package (or file) each, that hand
plain records down and never call back (``forms.py`` runs them; ``docs/ARCHITECTURE.md``, "The
forms pipeline", draws them):

1. ``signature.py``: what the constructor takes;
2. ``sources/``: where each argument's value can come from;
3. ``candidates/``: the search that assembles full argument sets and tries them;
4. ``exact/``: the one place that decides exact, or refused with a sentence;
5. ``form/``: the ``Form`` a person sees and edits.

Beside them, shared and holding no state of a form: ``field.py``, ``kinds.py``, ``values.py``,
``validate.py``, ``bind.py``, ``configs.py``, ``record.py``, ``budget.py`` and ``rebuild/``.
"""
